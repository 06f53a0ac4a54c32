"""The cluster side of an import (clusters.services.portable): clusters keep the centroid the
membership service would give them (the sum of their members' vectors), members that arrive
later shift it as a join does, and a second import changes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import transaction

from clusters import services
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillVersion
from clusters.services import (
    MemberImport,
    SkillImportError,
    SkillVersionImport,
    cluster_import,
    cluster_skill_link,
    skill_import,
)
from memories.models import Memory
from tests.clusters.test_services import angle, assert_centroid_exact, make

pytestmark = pytest.mark.django_db

WHEN = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _embedding_space():
    from memories.services import embedding_space_ensure

    embedding_space_ensure()


def _members(memories: list[Memory], **vectors: list[float]) -> list[MemberImport]:
    return [MemberImport(memory_id=m.pk, similarity=0.9, joined_at=WHEN, vector=vectors.get(str(m.pk)))
            for m in memories]


def _import(members: list[MemberImport], *, centroid: list[float] | None = None, topic: str = "docker"):
    return cluster_import(topic=topic, centroid=centroid, members=members, created_at=WHEN, updated_at=WHEN)


def test_an_imported_cluster_holds_the_centroid_assignment_gives_its_members():
    memories = [make(angle(s)) for s in (1.0, 0.97, 0.95)]
    assigned = KnowledgeCluster.objects.get()  # the normal path: cluster_assign, one join at a time
    assert assigned.member_count == 3
    normal = np.asarray(assigned.centroid)
    KnowledgeCluster.objects.all().delete()  # members go with it

    result = _import(_members(memories))

    assert result.created and result.joined == 3
    cluster = KnowledgeCluster.objects.get(pk=result.cluster_id)
    assert_centroid_exact(cluster)  # the sum of the members' embeddings, its direction their mean
    assert np.allclose(np.asarray(cluster.centroid), normal, atol=1e-5)
    assert (cluster.created_at, cluster.updated_at) == (WHEN, WHEN)
    assert set(ClusterMember.objects.values_list("joined_at", flat=True)) == {WHEN}


def test_members_whose_memories_arrive_later_join_and_shift_the_centroid_as_a_join_does():
    first = [make(angle(s), assign=False) for s in (1.0, 0.97)]
    late_id = uuid.uuid4()
    late = Memory(pk=late_id, embedding=angle(0.95))
    members = _members([*first, late])

    created = _import(members)
    assert created.created and created.joined == 2  # the third memory is not in the hub yet

    Memory.objects.create(id=late_id, content="late", memory_type="pattern", embedding=angle(0.95),
                          content_hash="late")
    extended = _import(members)
    assert (extended.cluster_id, extended.created, extended.joined) == (created.cluster_id, False, 1)
    cluster = KnowledgeCluster.objects.get(pk=created.cluster_id)
    assert cluster.member_count == 3 and cluster.updated_at > WHEN  # changed here, as any join marks it
    assert_centroid_exact(cluster)

    again = _import(members)
    assert (again.created, again.joined) == (False, 0)
    assert KnowledgeCluster.objects.count() == 1 and ClusterMember.objects.count() == 3


def test_a_given_centroid_is_kept_only_when_every_member_joins():
    memories = [make(angle(s), assign=False) for s in (1.0, 0.97)]
    given = list(np.asarray(angle(0.9)) * 2)  # as an export might carry it
    whole = _import(_members(memories), centroid=given)
    assert np.allclose(np.asarray(KnowledgeCluster.objects.get(pk=whole.cluster_id).centroid), given, atol=1e-6)

    KnowledgeCluster.objects.all().delete()
    ghost = Memory(pk=uuid.uuid4(), embedding=angle(0.5))
    partial = _import(_members([*memories, ghost]), centroid=given)
    assert_centroid_exact(KnowledgeCluster.objects.get(pk=partial.cluster_id))  # the members it holds


def test_a_vector_given_for_a_member_is_what_it_adds_to_the_centroid():
    memory = make(angle(1.0), assign=False)
    vector = angle(0.8)
    result = _import(_members([memory], **{str(memory.pk): vector}))
    cluster = KnowledgeCluster.objects.get(pk=result.cluster_id)
    assert np.allclose(np.asarray(cluster.centroid), vector, atol=1e-6)
    assert np.allclose(np.asarray(ClusterMember.objects.get().vector), vector, atol=1e-6)


def test_a_memberless_cluster_is_found_again_by_topic_and_time():
    first = _import([], topic="empty")
    again = _import([], topic="empty")
    assert first.created and not again.created and again.cluster_id == first.cluster_id
    assert KnowledgeCluster.objects.count() == 1


def _version(number: int, **fields) -> SkillVersionImport:
    return SkillVersionImport(version=number, name=f"v{number}", body="# steps", status="published",
                              created_at=WHEN, **fields)


def test_a_skill_is_stored_once_with_its_versions_and_later_ones_are_added():
    cluster = _import([], topic="skills")
    first = skill_import(slug="compose-healthcheck", name="Compose healthcheck", status="published",
                         current_version=1, versions=[_version(1, cluster_id=cluster.cluster_id)],
                         source_cluster_id=cluster.cluster_id, created_at=WHEN, updated_at=WHEN)
    assert first.created and first.versions_added == 1
    skill = Skill.objects.get()
    assert skill.current_version.version == 1 and (skill.created_at, skill.updated_at) == (WHEN, WHEN)
    assert SkillVersion.objects.get().created_at == WHEN

    more = skill_import(slug="compose-healthcheck", name="renamed", status="draft", current_version=2,
                        versions=[_version(1), _version(2)], created_at=WHEN, updated_at=WHEN)
    assert (more.created, more.versions_added) == (False, 1)
    skill.refresh_from_db()
    assert skill.name == "Compose healthcheck" and skill.current_version.version == 1  # kept as it was

    assert cluster_skill_link(cluster_id=cluster.cluster_id, slug="compose-healthcheck")
    assert not cluster_skill_link(cluster_id=cluster.cluster_id, slug="compose-healthcheck")  # has one
    assert not cluster_skill_link(cluster_id=cluster.cluster_id, slug="no-such-skill")
    assert KnowledgeCluster.objects.get(pk=cluster.cluster_id).skill_id == skill.pk


def test_a_new_skill_whose_current_version_is_not_given_is_refused_whole():
    with pytest.raises(SkillImportError, match="current_version: version 3 is not among"):
        with transaction.atomic():
            skill_import(slug="half", name="Half", status="published", current_version=3,
                         versions=[_version(1)], created_at=WHEN, updated_at=WHEN)
    assert not Skill.objects.exists() and not SkillVersion.objects.exists()


def test_assignment_after_an_import_uses_the_imported_centroids():
    memories = [make(angle(s), assign=False) for s in (1.0, 0.97)]
    result = _import(_members(memories))
    newcomer = make(angle(0.96))  # the normal path, through the imported cluster's centroid
    assert ClusterMember.objects.get(memory=newcomer).cluster_id == result.cluster_id
    assert_centroid_exact(KnowledgeCluster.objects.get(pk=result.cluster_id))
    assert services.cluster_assign(memory_id=newcomer.pk) is None  # already placed
