"""A skill built on a memory that was superseded is marked for re-crystallization, and its
rewrite replaces it once it passes the quality bar."""

from __future__ import annotations

import pytest

from clusters.models import KnowledgeCluster, Skill
from clusters.selectors import readiness
from clusters.services import cluster_crystallize
from memories.services import memory_supersede, memory_upload, supersession_undo

pytestmark = pytest.mark.django_db


def test_superseding_a_cited_memory_marks_the_skill_and_the_rewrite_clears_it():
    from memories.services import embedding_space_ensure
    from tests.clusters.test_services import _fill

    embedding_space_ensure()
    members = _fill(7)
    cluster_id = members[0].cluster_member.cluster_id
    first = cluster_crystallize(cluster_id=cluster_id)
    assert first is not None and first.status == "published"
    cited = first.memory_ids[0]
    replacement = memory_upload(content="A newer note on the same setup, written after the change").memory
    change = memory_supersede(old_id=cited, new_id=replacement.pk, decided_by="cora")
    skill = Skill.objects.get(pk=first.skill_id)
    assert str(cited) in skill.stale_reason
    assert readiness(KnowledgeCluster.objects.select_related("skill").get(pk=cluster_id)) == "recrystallize"
    second = cluster_crystallize(cluster_id=cluster_id)
    assert second is not None and second.status == "published" and cited not in second.memory_ids
    skill.refresh_from_db()
    assert skill.stale_reason == "" and skill.current_version_id == second.pk
    supersession_undo(change_id=change.pk, user="cora")  # undoing the change leaves the new skill as it is
