"""Clusters by hand (merge, split, move), the repair's changes recorded, undo, and merge
suggestions: centroids stay the exact sums of their members' vectors through every change and
every undo."""

from __future__ import annotations

import numpy as np
import pytest

from agents.services import space_create
from clusters.models import (
    ClusterChange,
    ClusterMember,
    ClusterSuggestion,
    KnowledgeCluster,
    Skill,
    SkillVersion,
)
from clusters.services import changes, manual, suggestions
from clusters.services.repair import clusters_repair
from memories.models import Memory, MemoryEdit
from tests.clusters.test_repair import _age_clusters, at
from tests.clusters.test_services import assert_centroid_exact, make

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _embedding_space():
    from memories.services import embedding_space_ensure

    embedding_space_ensure()


def _cluster_of(memory: Memory) -> int:
    return ClusterMember.objects.get(memory=memory).cluster_id


def _two_clusters(settings) -> tuple[list[Memory], list[Memory]]:
    """Two clusters 32° apart (each memory joins its own: the join threshold is 0.95)."""
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.99
    a = [make(at(0), content="docker compose postgres healthcheck"),
         make(at(2), content="docker compose postgres depends_on")]
    b = [make(at(32), content="postgres container startup retry"), make(at(34), content="postgres startup backoff"),
         make(at(30, 0.01), content="postgres container pg_isready")]
    assert len({_cluster_of(m) for m in a}) == 1 and len({_cluster_of(m) for m in b}) == 1
    assert _cluster_of(a[0]) != _cluster_of(b[0])
    return a, b


def _members(cluster_id: int) -> set[str]:
    return {str(m) for m in ClusterMember.objects.filter(cluster_id=cluster_id).values_list("memory_id", flat=True)}


def _exact_everywhere() -> None:
    for cluster in KnowledgeCluster.objects.all():
        assert_centroid_exact(cluster)


def test_a_merge_by_hand_is_exact_recorded_and_undone_with_both_clusters_back(settings):
    a, b = _two_clusters(settings)
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    before = {first: _members(first), second: _members(second)}
    change = manual.clusters_merge(into=second, other=first, user="carol")
    assert not KnowledgeCluster.objects.filter(pk=first).exists()
    assert _members(second) == before[first] | before[second]
    _exact_everywhere()
    assert (change.kind, change.from_cluster_id, change.to_cluster_id, change.decided_by) == ("merge", first, second, "carol")
    assert {str(m) for m in change.memory_ids} == before[first]
    history = MemoryEdit.objects.get(memory=a[0], action="cluster merge")
    assert history.editor == "carol" and str(first) in history.before["cluster"]
    assert KnowledgeCluster.objects.get(pk=second).topic  # named again

    changes.cluster_change_undo(change_id=change.pk, user="dave")
    assert {first: _members(first), second: _members(second)} == before  # the same ids, the same members
    _exact_everywhere()
    change.refresh_from_db()
    assert change.undone_by == "dave" and change.undone_at is not None
    assert MemoryEdit.objects.filter(memory=a[0], action="cluster undo", editor="dave").exists()
    with pytest.raises(changes.ClusterChangeError, match="undone already"):
        changes.cluster_change_undo(change_id=change.pk, user="dave")


def test_a_split_founds_a_cluster_of_the_chosen_members_and_undo_puts_them_back(settings):
    _, b = _two_clusters(settings)
    cluster = _cluster_of(b[0])
    change = manual.cluster_split(cluster_id=cluster, memory_ids=[b[2].pk], user="carol")
    new = change.to_cluster_id
    assert _members(new) == {str(b[2].pk)} and _members(cluster) == {str(b[0].pk), str(b[1].pk)}
    assert KnowledgeCluster.objects.get(pk=new).space_id == KnowledgeCluster.objects.get(pk=cluster).space_id
    _exact_everywhere()
    changes.cluster_change_undo(change_id=change.pk, user="carol")
    assert not KnowledgeCluster.objects.filter(pk=new).exists()  # emptied by the undo: gone
    assert _members(cluster) == {str(m.pk) for m in b}
    _exact_everywhere()


def test_a_split_is_refused_for_all_members_none_or_a_stranger(settings):
    a, b = _two_clusters(settings)
    cluster = _cluster_of(b[0])
    for chosen, message in (([], "choose"), ([m.pk for m in b], "both sides"), ([a[0].pk], "not a member")):
        with pytest.raises(changes.ClusterChangeError, match=message):
            manual.cluster_split(cluster_id=cluster, memory_ids=chosen, user="carol")
    assert not ClusterChange.objects.exists()


def test_a_move_out_of_a_singleton_deletes_it_and_undo_makes_it_again(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    group = [make(at(0)), make(at(1))]
    lone = make(at(40))
    home = _cluster_of(lone)
    change = manual.cluster_member_move(memory_id=lone.pk, to_cluster_id=_cluster_of(group[0]), user="carol")
    assert not KnowledgeCluster.objects.filter(pk=home).exists()
    assert _cluster_of(lone) == _cluster_of(group[0])
    _exact_everywhere()
    changes.cluster_change_undo(change_id=change.pk, user="carol")
    assert _cluster_of(lone) == home and KnowledgeCluster.objects.get(pk=home).member_count == 1
    _exact_everywhere()


def test_undo_waits_for_the_later_change_that_stands_on_it(settings):
    a, b = _two_clusters(settings)
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    merge = manual.clusters_merge(into=second, other=first, user="carol")
    split = manual.cluster_split(cluster_id=second, memory_ids=[a[0].pk, b[0].pk], user="carol")
    with pytest.raises(changes.ClusterChangeError, match=f"change {split.pk}.*undo it first"):
        changes.cluster_change_undo(change_id=merge.pk, user="carol")
    changes.cluster_change_undo(change_id=split.pk, user="carol")
    changes.cluster_change_undo(change_id=merge.pk, user="carol")
    assert _members(first) == {str(m.pk) for m in a} and _members(second) == {str(m.pk) for m in b}
    _exact_everywhere()


def test_clusters_of_two_spaces_never_merge_nor_take_each_others_members(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    here = make(at(0))
    other_space = space_create(slug="elsewhere", name="Elsewhere")
    there = Memory.objects.create(space=other_space, content="m", memory_type="pattern", embedding=at(1),
                                  content_hash="x")
    from clusters.services import cluster_assign

    cluster_assign(memory_id=there.pk)
    assert _cluster_of(here) != _cluster_of(there)
    with pytest.raises(changes.ClusterChangeError, match="different spaces"):
        manual.clusters_merge(into=_cluster_of(here), other=_cluster_of(there), user="carol")
    with pytest.raises(changes.ClusterChangeError, match="another space"):
        manual.cluster_member_move(memory_id=there.pk, to_cluster_id=_cluster_of(here), user="carol")
    # A caller limited to its own spaces does not even find the other space's cluster.
    with pytest.raises(changes.ClusterChangeError, match="no cluster"):
        manual.clusters_merge(into=_cluster_of(here), other=_cluster_of(there), user="carol",
                              space_ids=[here.space_id])
    assert not ClusterChange.objects.exists()


def test_the_repair_records_its_merges_and_moves_and_they_undo(settings):
    a, b = _two_clusters(settings)
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8
    assert clusters_repair()["merged"] == 1
    [change] = ClusterChange.objects.all()
    assert (change.kind, change.decided_by, change.from_cluster_id, change.to_cluster_id) == ("merge", "repair", first, second)
    assert change.similarity == pytest.approx(float(np.cos(np.radians(31))), abs=0.01)
    assert MemoryEdit.objects.filter(memory=a[0], action="cluster merge", editor="repair").exists()
    changes.cluster_change_undo(change_id=change.pk, user="carol")
    assert _members(first) == {str(m.pk) for m in a}
    _exact_everywhere()


def test_a_repair_move_is_recorded_and_undone(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.99
    lone = make(at(25))
    group = [make(at(0)), make(at(1)), make(at(2))]
    home = _cluster_of(lone)
    assert home != _cluster_of(group[0])
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    _age_clusters()
    assert clusters_repair()["moved"] == 1
    [change] = ClusterChange.objects.all()
    assert (change.kind, change.decided_by, [str(m) for m in change.memory_ids]) == ("move", "repair", [str(lone.pk)])
    changes.cluster_change_undo(change_id=change.pk, user="carol")
    assert _cluster_of(lone) == home
    _exact_everywhere()


def _skill_on(cluster_id: int, memory_ids: list, slug: str = "s") -> Skill:
    skill = Skill.objects.create(slug=slug, name=slug, source_cluster_id=cluster_id, status="published")
    version = SkillVersion.objects.create(skill=skill, version=1, body="b", memory_ids=memory_ids, status="published")
    Skill.objects.filter(pk=skill.pk).update(current_version=version)
    KnowledgeCluster.objects.filter(pk=cluster_id).update(skill=skill)
    return skill


def test_a_skill_follows_the_side_of_a_split_holding_most_of_its_memories_and_is_marked_stale(settings):
    _, b = _two_clusters(settings)
    cluster = _cluster_of(b[0])
    skill = _skill_on(cluster, [b[1].pk, b[2].pk])
    change = manual.cluster_split(cluster_id=cluster, memory_ids=[b[1].pk, b[2].pk], user="carol")
    assert KnowledgeCluster.objects.get(pk=change.to_cluster_id).skill_id == skill.pk
    assert KnowledgeCluster.objects.get(pk=cluster).skill_id is None
    skill.refresh_from_db()
    assert skill.source_cluster_id == change.to_cluster_id and f"cluster change {change.pk}" in skill.stale_reason
    changes.cluster_change_undo(change_id=change.pk, user="carol")
    assert KnowledgeCluster.objects.get(pk=cluster).skill_id == skill.pk


def test_a_small_move_leaves_a_skill_alone(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    group = [make(at(i)) for i in range(5)]
    other = make(at(40))
    cluster = _cluster_of(group[0])
    skill = _skill_on(cluster, [m.pk for m in group])
    manual.cluster_member_move(memory_id=group[4].pk, to_cluster_id=_cluster_of(other), user="carol")
    skill.refresh_from_db()
    assert skill.stale_reason == "" and KnowledgeCluster.objects.get(pk=cluster).skill_id == skill.pk


def test_pairs_a_little_under_the_merge_similarity_are_suggested_with_evidence_and_a_no_is_remembered(settings):
    a, b = _two_clusters(settings)
    make(at(80), content="unrelated")  # far from both: never suggested
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.9  # the band: [0.82, 0.9); the pair is at cos 32° ≈ 0.85
    result = clusters_repair()
    assert result["merged"] == 0 and result["suggested"] >= 1
    [suggestion] = ClusterSuggestion.objects.all()
    assert {suggestion.first_id, suggestion.second_id} == {_cluster_of(a[0]), _cluster_of(b[0])}
    assert 0.82 <= suggestion.similarity < 0.9
    assert "postgres" in suggestion.shared_words
    assert len(suggestion.pairs) == 2 and suggestion.pairs[0]["similarity"] >= suggestion.pairs[1]["similarity"]
    assert {suggestion.pairs[0]["first"], suggestion.pairs[0]["second"]} == {str(a[1].pk), str(b[2].pk)}
    assert suggestion.pairs[0]["first_text"]

    suggestions.cluster_suggestion_decide(suggestion_id=suggestion.pk, action="dismiss", user="carol")
    clusters_repair()
    [again] = ClusterSuggestion.objects.all()
    assert again.status == "dismissed" and again.decided_by == "carol"

    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.95  # the pair now lies under the band: an open one would go
    again.status = "open"
    again.save()
    clusters_repair()
    assert not ClusterSuggestion.objects.exists()


def test_merging_a_suggestion_folds_the_smaller_cluster_into_the_larger(settings):
    a, b = _two_clusters(settings)
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.9
    clusters_repair()
    [suggestion] = ClusterSuggestion.objects.all()
    change = suggestions.cluster_suggestion_decide(suggestion_id=suggestion.pk, action="merge", user="carol")
    assert change is not None and change.to_cluster_id == _cluster_of(b[0]) and change.from_cluster_id != change.to_cluster_id
    assert not ClusterSuggestion.objects.exists()  # the folded cluster's suggestions went with it
    assert _members(_cluster_of(b[0])) == {str(m.pk) for m in a + b}
    _exact_everywhere()


def test_undoing_a_merge_gives_the_folded_in_clusters_skill_versions_their_cluster_back(settings):
    a, b = _two_clusters(settings)
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    skill = _skill_on(first, [m.pk for m in a], slug="compose")
    older = SkillVersion.objects.create(skill=skill, version=0, body="b0", memory_ids=[a[0].pk], cluster_id=first,
                                        status="superseded")
    SkillVersion.objects.filter(skill=skill).update(cluster_id=first)
    theirs = _skill_on(second, [m.pk for m in b], slug="startup")
    SkillVersion.objects.filter(skill=theirs).update(cluster_id=second)

    change = manual.clusters_merge(into=second, other=first, user="carol")
    # The folded-in cluster is gone: its versions name the cluster holding their memories now, not nothing.
    assert set(SkillVersion.objects.filter(skill=skill).values_list("cluster_id", flat=True)) == {second}
    change.refresh_from_db()
    assert sorted(change.skill_version_ids) == sorted(SkillVersion.objects.filter(skill=skill).values_list("pk", flat=True))
    assert older.pk in change.skill_version_ids
    changes.cluster_change_undo(change_id=change.pk, user="dave")
    assert set(SkillVersion.objects.filter(skill=skill).values_list("cluster_id", flat=True)) == {first}
    assert set(SkillVersion.objects.filter(skill=theirs).values_list("cluster_id", flat=True)) == {second}
    assert KnowledgeCluster.objects.get(pk=first).skill_id == skill.pk
    assert "compose" not in KnowledgeCluster.objects.get(pk=second).superseded_skill_slugs
    assert KnowledgeCluster.objects.get(pk=second).skill_id == theirs.pk


def test_undoing_a_move_that_emptied_a_cluster_gives_its_skill_versions_their_cluster_back(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    group = [make(at(i)) for i in range(3)]
    lone = make(at(40))
    home, alone = _cluster_of(group[0]), _cluster_of(lone)
    skill = _skill_on(alone, [lone.pk], slug="lone")
    SkillVersion.objects.filter(skill=skill).update(cluster_id=alone)
    change = manual.cluster_member_move(memory_id=lone.pk, to_cluster_id=home, user="carol")
    assert not KnowledgeCluster.objects.filter(pk=alone).exists()
    assert SkillVersion.objects.get(skill=skill).cluster_id == home
    changes.cluster_change_undo(change_id=change.pk, user="carol")
    assert SkillVersion.objects.get(skill=skill).cluster_id == alone
