"""Writing back what a portable export holds of the cluster service
(docs/operations.md#export-and-import): a cluster with its members, a skill with its versions,
the link from a cluster to its skill, a cluster change and a merge suggestion, keyed so that
importing them twice changes nothing (a cluster by the memories it holds, or by its topic and
creation time when it holds none; a skill by its slug, a version by its number; a change by
its kind, memories and time; a suggestion by its two clusters).

The caller has checked and redacted every field. Centroids stay what ``membership`` keeps: the
sum of the members' vectors, each member holding the vector it added; members that join a
cluster already here shift its centroid through ``membership._centroid_shift``, as every other
join does. ``auto_now`` fields are set on insert, so the file's times are written back right
after, in the same transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from agents.selectors import space_or_shared
from clusters.models import (
    ClusterChange,
    ClusterMember,
    ClusterSuggestion,
    KnowledgeCluster,
    Skill,
    SkillVersion,
)
from clusters.services.membership import _centroid_shift
from memories.models import Memory, Status


class SkillImportError(ValueError):
    """A skill the hub cannot take as given; ``field`` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class MemberImport:
    """A member as the file gives it. ``vector``: what it adds to the centroid, when the caller
    can vouch for it (the file's, in this hub's embedding space); None: the memory's embedding."""

    memory_id: Any
    similarity: float
    joined_at: datetime
    vector: list[float] | None = None


@dataclass(frozen=True)
class ClusterImported:
    cluster_id: int
    created: bool  # a new cluster; otherwise one already here (found by its members, or topic and time)
    joined: int  # members this import added


@dataclass(frozen=True)
class SkillVersionImport:
    """A skill version as the file gives it; ``cluster_id`` is this hub's cluster (or None)."""

    version: int
    name: str
    body: str
    status: str
    created_at: datetime
    description: str = ""
    memory_ids: Sequence[Any] = ()
    cluster_id: int | None = None
    quality: dict | None = None
    verification: dict | None = None
    score: float = 0.0
    reason: str = ""
    author: str = ""


@dataclass(frozen=True)
class SkillImported:
    skill_id: int
    created: bool
    versions_added: int


def _times(model: Any, pk: Any, **times: datetime) -> None:
    model.objects.filter(pk=pk).update(**times)


def _vector_sum(vectors: list[Any]) -> np.ndarray:
    return np.sum(np.asarray(vectors, dtype=np.float64), axis=0)


def _member_vectors(members: list[MemberImport], space_id: int) -> dict[str, list[float]]:
    """Each member's vector, for the members whose memory the space holds and serves (only they
    join: a held, rejected or archived memory is in no cluster): the one given, else the
    memory's stored embedding."""
    given = {str(m.memory_id): m.vector for m in members}
    stored = (Memory.objects.filter(pk__in=list(given), space_id=space_id, status=Status.ACTIVE)
              .values_list("pk", "embedding"))
    out = {}
    for memory_id, embedding in stored:
        vector = given[str(memory_id)]
        # No vector given (none in the file, or the memory was embedded anew): the stored one.
        out[str(memory_id)] = vector if vector is not None else list(embedding)
    return out


def _members_create(cluster_id: int, members: list[MemberImport], vectors: dict[str, list[float]],
                    space_id: int) -> None:
    rows = ClusterMember.objects.bulk_create([
        ClusterMember(space_id=space_id, cluster_id=cluster_id, memory_id=m.memory_id, vector=vectors[str(m.memory_id)],
                      similarity=m.similarity) for m in members])
    for row, member in zip(rows, members, strict=True):
        row.joined_at = member.joined_at  # bulk_create set it to now (auto_now_add)
    ClusterMember.objects.bulk_update(rows, ["joined_at"])


def cluster_import(
    *,
    topic: str = "",
    centroid: list[float] | None,
    members: list[MemberImport],
    superseded_skill_slugs: list[str] | None = None,
    members_at_last_crystallization: int = 0,
    last_crystallization_at: datetime | None = None,
    last_crystallization_result: str = "",
    last_crystallization_reason: str = "",
    labelled_member_count: int = 0,
    created_at: datetime,
    updated_at: datetime,
    space_id: int | None = None,
) -> ClusterImported:
    """Store a cluster in space ``space_id`` and the members whose memories that space holds (a
    member whose memory is in another cluster already stays there).

    A cluster already here is found by its members (the cluster holding most of them) or, for a
    file cluster without members, by topic and creation time: then only the members it lacks
    join it, shifting its centroid. Otherwise a new cluster is stored: with ``centroid`` as
    given when every member joins (the caller passes None when it cannot vouch for it, e.g. the
    members were embedded anew here), else with the sum of the members that joined."""
    space_id = space_or_shared(space_id)
    ids = [str(m.memory_id) for m in members]
    with transaction.atomic():
        held = dict(ClusterMember.objects.filter(memory_id__in=ids, space_id=space_id)
                    .values_list("memory_id", "cluster_id"))
        vectors = _member_vectors(members, space_id)
        joining = [m for m in members if str(m.memory_id) in vectors]
        # A cluster may be here already when one of its memories has a cluster, or it has none to go by.
        if held or not members:
            taken = Counter(held.values())
            matched = (taken.most_common(1)[0][0] if taken else
                       KnowledgeCluster.objects.filter(space_id=space_id, topic=topic, created_at=created_at)
                       .values_list("pk", flat=True).first())
            if matched is not None:
                # A member whose memory is in a cluster already (this one or another) stays there.
                free = set(ids) - {str(memory_id) for memory_id in held}
                joining = [m for m in joining if str(m.memory_id) in free]
                if joining:  # members whose memories arrived after the cluster did
                    _centroid_shift(matched, add=_vector_sum([vectors[str(m.memory_id)] for m in joining]),
                                    members=len(joining))
                    _members_create(matched, joining, vectors, space_id)
                return ClusterImported(cluster_id=matched, created=False, joined=len(joining))
        if centroid is None or len(joining) != len(members):
            # The sum of the members it really holds, in this hub's space.
            summed = (_vector_sum([vectors[str(m.memory_id)] for m in joining]) if joining
                      else np.zeros(settings.ULTRON_EMBEDDING_DIMENSIONS))
            centroid = [float(x) for x in summed]
        cluster = KnowledgeCluster.objects.create(
            space_id=space_id, topic=topic[:200], centroid=centroid, member_count=len(joining),
            superseded_skill_slugs=superseded_skill_slugs or [],
            members_at_last_crystallization=members_at_last_crystallization,
            last_crystallization_at=last_crystallization_at,
            last_crystallization_result=last_crystallization_result[:20],
            last_crystallization_reason=last_crystallization_reason,
            labelled_member_count=labelled_member_count,
        )
        _members_create(cluster.pk, joining, vectors, space_id)
        _times(KnowledgeCluster, cluster.pk, created_at=created_at, updated_at=updated_at)
    return ClusterImported(cluster_id=cluster.pk, created=True, joined=len(joining))


def _version_create(skill: Skill, v: SkillVersionImport) -> SkillVersion:
    # The memories it cites that the skill's space holds: a file from another space (or hub) may
    # cite memories that stay there, and a version never points into another space.
    held = {str(pk) for pk in Memory.objects.filter(pk__in=list(v.memory_ids), space=skill.space_id)
            .values_list("pk", flat=True)}
    version = SkillVersion.objects.create(
        space_id=skill.space_id, skill=skill, version=v.version, name=v.name[:200], description=v.description, body=v.body,
        memory_ids=[m for m in v.memory_ids if str(m) in held], cluster_id=v.cluster_id, quality=v.quality or {},
        verification=v.verification or {}, score=v.score, status=v.status, reason=v.reason, author=v.author[:100],
    )
    _times(SkillVersion, version.pk, created_at=v.created_at)
    return version


def skill_import(
    *,
    slug: str,
    name: str,
    description: str = "",
    status: str,
    source_cluster_id: int | None = None,
    embedding: list[float] | None = None,
    current_version: int | None = None,
    versions: list[SkillVersionImport],
    created_at: datetime,
    updated_at: datetime,
    space_id: int | None = None,
    provenance: dict | None = None,
) -> SkillImported:
    """Store a skill by its slug with its versions; a skill already here gains only the versions
    it lacks (its own fields, current version and times stay). Raises
    ``SkillImportError`` when a new skill's ``current_version`` is none of ``versions`` (nothing
    is stored then)."""
    space_id = space_or_shared(space_id)
    with transaction.atomic():
        skill = Skill.objects.filter(space_id=space_id, slug=slug).first()
        created = skill is None
        # Keyed by slug: a skill here keeps its own fields and gains only the versions it lacks.
        if skill is None:
            skill = Skill.objects.create(
                space_id=space_id, slug=slug[:50], name=name[:200], description=description, status=status,
                source_cluster_id=source_cluster_id, embedding=embedding, provenance=provenance or {},
            )
        have = set(skill.versions.values_list("version", flat=True))
        added = {v.version: _version_create(skill, v) for v in versions if v.version not in have}
        # A skill that was here keeps its own current version and times.
        if created:
            if current_version is not None:
                if current_version not in added:
                    raise SkillImportError("current_version",
                                           f"version {current_version} is not among the skill's versions")
                Skill.objects.filter(pk=skill.pk).update(current_version=added[current_version])
            _times(Skill, skill.pk, created_at=created_at, updated_at=updated_at)
    return SkillImported(skill_id=skill.pk, created=created, versions_added=len(added))


def cluster_skill_link(*, cluster_id: int, slug: str) -> bool:
    """Point a cluster at the skill with ``slug`` (an import stores skills after clusters); a
    cluster that has a skill keeps it. False when nothing changed (no such skill, or a skill there)."""
    with transaction.atomic():
        # The skill of the cluster's own space: a slug is unique within a space only.
        skill_id = (Skill.objects.filter(slug=slug, space__in=KnowledgeCluster.objects.filter(pk=cluster_id)
                                         .values("space_id")).values_list("pk", flat=True).first())
        # No skill of that slug: the file did not give it, or the hub refused it.
        if skill_id is None:
            return False
        return bool(KnowledgeCluster.objects.filter(pk=cluster_id, skill__isnull=True).update(skill_id=skill_id))


def cluster_id_reserve() -> int:
    """A cluster id no cluster has or will be given (drawn from the clusters' own sequence): the id
    of a cluster a change in the file names that is no longer there (folded in by a merge), which
    undoing that change makes again under this id."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [KnowledgeCluster._meta.db_table])
        return int(cursor.fetchone()[0])


def cluster_change_import(
    *, kind: str, from_cluster_id: int, to_cluster_id: int, from_topic: str = "", to_topic: str = "",
    memory_ids: Sequence[Any], similarity: float | None = None, decided_by: str, skill_version_ids: Sequence[int] = (),
    undone_by: str = "", undone_at: datetime | None = None, created_at: datetime, space_id: int | None = None,
) -> bool:
    """Store a cluster change between clusters of this hub (ids already this hub's: the caller
    maps the file's), in ``space_id``; False when a change of that kind, of those memories, made at
    that time is here. Stored in the file's order, so undo sees the later changes as later."""
    space = space_or_shared(space_id)
    ids = [str(m) for m in memory_ids]
    with transaction.atomic():
        if ClusterChange.objects.filter(space_id=space, kind=kind, created_at=created_at, memory_ids=ids).exists():
            return False
        row = ClusterChange.objects.create(
            space_id=space, kind=kind, from_cluster_id=from_cluster_id, to_cluster_id=to_cluster_id,
            from_topic=from_topic[:200], to_topic=to_topic[:200], memory_ids=ids, similarity=similarity,
            decided_by=decided_by[:150], skill_version_ids=list(skill_version_ids), undone_by=undone_by[:150],
            undone_at=undone_at)
        _times(ClusterChange, row.pk, created_at=created_at)
    return True


def cluster_suggestion_import(
    *, first_id: int, second_id: int, similarity: float, shared_words: Sequence[str] = (), pairs: Sequence[dict] = (),
    status: str, decided_by: str = "", decided_at: datetime | None = None, created_at: datetime,
    updated_at: datetime,
) -> bool:
    """Store a merge suggestion between two clusters of this hub (of one space); False when that
    pair has one here. The pair is stored in id order, its evidence's sides with it."""
    pairs = list(pairs)
    if first_id > second_id:
        first_id, second_id = second_id, first_id
        pairs = [{**p, "first": p.get("second"), "second": p.get("first"), "first_text": p.get("second_text", ""),
                  "second_text": p.get("first_text", "")} for p in pairs]
    with transaction.atomic():
        spaces = set(KnowledgeCluster.objects.filter(pk__in=[first_id, second_id]).values_list("space_id", flat=True))
        if len(spaces) != 1 or KnowledgeCluster.objects.filter(pk__in=[first_id, second_id]).count() != 2:
            raise ValueError("a suggestion is of two clusters of one space")
        if ClusterSuggestion.objects.filter(first_id=first_id, second_id=second_id).exists():
            return False
        row = ClusterSuggestion.objects.create(
            space_id=spaces.pop(), first_id=first_id, second_id=second_id, similarity=similarity,
            shared_words=[w[:60] for w in shared_words], pairs=pairs, status=status, decided_by=decided_by[:150],
            decided_at=decided_at)
        _times(ClusterSuggestion, row.pk, created_at=created_at, updated_at=updated_at)
    return True
