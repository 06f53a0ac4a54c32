"""The pipeline's cluster repair: order effects of incremental assignment are undone."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from clusters import services
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillVersion
from memories.models import Memory
from tests.clusters.test_services import DIMS, assert_centroid_exact, make

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _embedding_space():
    from memories.services import embedding_space_ensure

    embedding_space_ensure()


def direction(*weights: float) -> list[float]:
    v = np.zeros(DIMS)
    v[: len(weights)] = weights
    return list(v / np.linalg.norm(v))


def at(degrees: float, lift: float = 0.0) -> list[float]:
    """A unit vector at ``degrees`` in the plane of the first two axes (plus a little of the third)."""
    radians = np.radians(degrees)
    return direction(np.cos(radians), np.sin(radians), lift)


def _age_clusters(days: int = 2) -> None:
    KnowledgeCluster.objects.update(created_at=datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days))


def test_two_halves_of_one_topic_merge_and_the_centroid_stays_exact(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.9
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8
    # 31° apart: too far for a member to join the other (cos 0.86 < 0.9), close enough for the
    # two centroids to be one topic (≥ 0.8).
    a = [make(at(0)), make(at(2))]
    b = [make(at(32)), make(at(34)), make(at(30, 0.01))]
    assert len({m.cluster_member.cluster_id for m in a + b}) == 2
    result = services.clusters_repair()
    assert result["merged"] == 1
    [cluster] = KnowledgeCluster.objects.filter(member_count__gt=0)
    assert cluster.member_count == 5
    assert KnowledgeCluster.objects.count() == 1  # the emptied one is gone
    assert_centroid_exact(cluster)


def test_distinct_topics_do_not_merge(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.9
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8
    make(direction(1, 0, 0.1))
    make(direction(0, 1, 0.1))
    assert services.clusters_repair() == {"merged": 0, "moved": 0, "suggested": 0}
    assert KnowledgeCluster.objects.count() == 2


def test_a_member_that_fits_another_cluster_better_moves(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.6
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.99
    home = [make(direction(1, 0, 0, 0.05 * i)) for i in range(3)]
    # Arrives early enough to join the first cluster (cos ≈ 0.71 ≥ 0.6) ...
    drifter = make(direction(1, 1, 0))
    assert drifter.cluster_member.cluster_id == home[0].cluster_member.cluster_id
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.9
    others = [make(direction(0.2, 1, 0, 0.05 * i)) for i in range(3)]  # ... a closer cluster forms later
    assert len({m.cluster_member.cluster_id for m in others}) == 1
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.6
    assert services.clusters_repair()["moved"] >= 1
    drifter.cluster_member.refresh_from_db()
    assert drifter.cluster_member.cluster_id == others[0].cluster_member.cluster_id
    for cluster in KnowledgeCluster.objects.all():
        assert_centroid_exact(cluster)


def test_singletons_wait_a_day_then_join_a_cluster_that_formed_since(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.95
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.99
    lone = make(direction(1, 0.5, 0))
    group = [make(direction(1, 0.1 * i, 0.1)) for i in range(1, 4)]
    assert lone.cluster_member.cluster_id not in {m.cluster_member.cluster_id for m in group}
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    assert services.clusters_repair()["moved"] == 0  # too young
    _age_clusters()
    assert services.clusters_repair()["moved"] == 1
    lone.cluster_member.refresh_from_db()
    assert lone.cluster_member.cluster_id == group[0].cluster_member.cluster_id
    assert not KnowledgeCluster.objects.filter(member_count=0).exists()


def test_a_skill_stays_with_the_merged_cluster(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.9
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8
    small = [make(at(0)), make(at(2))]
    large = [make(at(32)), make(at(34)), make(at(30, 0.01))]
    cluster = KnowledgeCluster.objects.get(pk=small[0].cluster_member.cluster_id)
    skill = Skill.objects.create(slug="s", name="s", source_cluster=cluster)
    version = SkillVersion.objects.create(skill=skill, version=1, body="b", memory_ids=[m.pk for m in small])
    Skill.objects.filter(pk=skill.pk).update(current_version=version)
    cluster.skill = skill
    cluster.save(update_fields=["skill"])
    services.clusters_repair()
    [kept] = KnowledgeCluster.objects.all()
    assert kept.pk == large[0].cluster_member.cluster_id and kept.skill_id == skill.pk
    assert Skill.objects.get(pk=skill.pk).source_cluster_id == kept.pk
    assert ClusterMember.objects.filter(cluster=kept).count() == 5
    assert Memory.objects.count() == 5
