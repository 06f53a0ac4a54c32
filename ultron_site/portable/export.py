"""Writing the portable export: a header, then memories, contributions, merge candidates,
knowledge changes, type decisions, clusters (with their members), skills (with their versions),
cluster changes and merge suggestions, one JSON object a line, then an end line.

The export reads one snapshot (a repeatable-read, read-only transaction): what it writes is
the hub at one moment, however long it takes, while uploads go on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from clusters.models import (
    ClusterChange,
    ClusterMember,
    ClusterSuggestion,
    KnowledgeCluster,
    Skill,
    SkillVersion,
)
from memories.models import (
    EmbeddingSpace,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MergeCandidate,
    TypeChange,
)
from ultron_site.portable.codec import FORMAT, VERSION, time_encode, vector_encode

CHUNK = 500

_MEMORY_FIELDS = ("id", "content", "context", "resolution", "tags", "memory_type", "tier", "status", "hit_count",
                  "last_hit_at", "summary_l0", "overview_l1", "merge_pending", "agent__name", "source", "provenance",
                  "redaction_counts", "archived_at", "created_at", "updated_at", "embedding", "superseded_by_id",
                  "valid_until", "readers", "verified_by", "verified_at", "screen_flags")
_CONTRIBUTION_FIELDS = ("memory_id", "agent__name", "content", "context", "resolution", "tags", "similarity",
                        "match_reason", "redaction_counts", "source", "provenance", "created_at", "merged_at")
_CANDIDATE_FIELDS = ("memory_id", "duplicate_of_id", "similarity", "conflicts", "status", "llm_verdict", "decided_by",
                     "decided_at", "created_at")
_CLUSTER_FIELDS = ("id", "topic", "centroid", "member_count", "skill__slug", "superseded_skill_slugs",
                   "members_at_last_crystallization", "last_crystallization_at", "last_crystallization_result",
                   "last_crystallization_reason", "labelled_member_count", "created_at", "updated_at")
_VERSION_FIELDS = ("version", "name", "description", "body", "memory_ids", "cluster_id", "quality", "verification",
                   "score", "status", "reason", "author", "created_at")
_CHANGE_FIELDS = ("old_id", "new_id", "kind", "state", "order", "evidence", "similarity", "decided_by", "decided_at",
                  "undone_by", "undone_at", "reviewed_by", "reviewed_at", "created_at")
_TYPE_CHANGE_FIELDS = ("memory_id", "state", "chosen", "runner_up", "margin", "memory_type", "decided_by",
                       "decided_at", "undone_by", "undone_at", "created_at")
_CLUSTER_CHANGE_FIELDS = ("kind", "from_cluster_id", "to_cluster_id", "from_topic", "to_topic", "memory_ids",
                          "similarity", "decided_by", "skill_version_ids", "undone_by", "undone_at", "created_at")
_SUGGESTION_FIELDS = ("first_id", "second_id", "similarity", "shared_words", "pairs", "status", "decided_by",
                      "decided_at", "created_at", "updated_at")
_RENAMED = {"agent__name": "agent", "memory_id": "memory", "duplicate_of_id": "duplicate_of", "skill__slug": "skill",
            "cluster_id": "cluster", "old_id": "old", "new_id": "new", "kind": "change_kind",
            "from_cluster_id": "from_cluster", "to_cluster_id": "to_cluster", "first_id": "first",
            "second_id": "second", "superseded_by_id": "superseded_by"}


def _plain(row: dict) -> dict:
    """A row of values() as the format writes it: fields renamed, times, UUIDs, vectors as text."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in ("embedding", "centroid", "vector"):
            value = vector_encode(value)
        elif hasattr(value, "isoformat"):
            value = time_encode(value)
        elif key in ("id", "memory_id", "duplicate_of_id", "old_id", "new_id", "superseded_by_id") and value is not None \
                and not isinstance(value, int):
            value = str(value)
        elif key == "memory_ids":
            value = [str(v) for v in value]
        out[_RENAMED.get(key, key)] = value
    return out


def _space() -> dict | None:
    space = EmbeddingSpace.objects.first()
    if space is None:
        return None
    return {"provider": space.provider, "model": space.model, "dimensions": space.dimensions,
            "text_format": space.text_format}


def _counts() -> dict[str, int]:
    return {"memory": Memory.objects.count(), "contribution": MemoryContribution.objects.count(),
            "candidate": MergeCandidate.objects.count(), "change": KnowledgeChange.objects.count(),
            "type_change": TypeChange.objects.count(), "cluster": KnowledgeCluster.objects.count(),
            "skill": Skill.objects.count(), "cluster_change": ClusterChange.objects.count(),
            "cluster_suggestion": ClusterSuggestion.objects.count()}


def _memories() -> Iterator[dict]:
    for row in Memory.objects.order_by("created_at", "pk").values(*_MEMORY_FIELDS).iterator(chunk_size=CHUNK):
        yield {"kind": "memory", **_plain(row)}


def _contributions() -> Iterator[dict]:
    rows = MemoryContribution.objects.order_by("created_at", "pk").values(*_CONTRIBUTION_FIELDS)
    for row in rows.iterator(chunk_size=CHUNK):
        yield {"kind": "contribution", **_plain(row)}


def _candidates() -> Iterator[dict]:
    for row in MergeCandidate.objects.order_by("created_at", "pk").values(*_CANDIDATE_FIELDS).iterator(chunk_size=CHUNK):
        yield {"kind": "candidate", **_plain(row)}


def _rows(model: Any, kind: str, fields: tuple[str, ...]) -> Iterator[dict]:
    for row in model.objects.order_by("created_at", "pk").values(*fields).iterator(chunk_size=CHUNK):
        yield {"kind": kind, **_plain(row)}


def _changes() -> Iterator[dict]:
    return _rows(KnowledgeChange, "change", _CHANGE_FIELDS)


def _type_changes() -> Iterator[dict]:
    return _rows(TypeChange, "type_change", _TYPE_CHANGE_FIELDS)


def _cluster_changes() -> Iterator[dict]:
    """In id order (undo reads a later change as one with a higher id); the skill versions a change
    re-pointed by their skill's slug and number."""
    versions = {pk: {"skill": slug, "version": number} for pk, slug, number in
                SkillVersion.objects.values_list("pk", "skill__slug", "version")}
    for row in ClusterChange.objects.order_by("pk").values(*_CLUSTER_CHANGE_FIELDS).iterator(chunk_size=CHUNK):
        refs = [versions[pk] for pk in row.pop("skill_version_ids") if pk in versions]
        yield {"kind": "cluster_change", **_plain(row), "skill_versions": refs}


def _suggestions() -> Iterator[dict]:
    return _rows(ClusterSuggestion, "cluster_suggestion", _SUGGESTION_FIELDS)


def _members() -> Iterator[tuple[int, dict]]:
    rows = (ClusterMember.objects.order_by("cluster_id", "memory_id")
            .values_list("cluster_id", "memory_id", "similarity", "joined_at", "vector", "memory__embedding"))
    for cluster_id, memory_id, similarity, joined_at, vector, embedding in rows.iterator(chunk_size=CHUNK):
        member = {"memory": str(memory_id), "similarity": similarity, "joined_at": time_encode(joined_at)}
        # A member's vector is its memory's embedding; written out only where it is not.
        if embedding is None or not np.array_equal(np.asarray(vector), np.asarray(embedding)):
            member["vector"] = vector_encode(vector)
        yield cluster_id, member


def _clusters() -> Iterator[dict]:
    members = _members()
    pending = next(members, None)
    rows = KnowledgeCluster.objects.order_by("pk").values(*_CLUSTER_FIELDS)
    for row in rows.iterator(chunk_size=CHUNK):
        listed = []
        while pending is not None and pending[0] <= row["id"]:
            if pending[0] == row["id"]:
                listed.append(pending[1])
            pending = next(members, None)
        yield {"kind": "cluster", **_plain(row), "members": listed}


def _skills() -> Iterator[dict]:
    for skill in Skill.objects.order_by("slug").select_related("current_version").prefetch_related("versions"):
        versions = sorted(skill.versions.all(), key=lambda v: v.version)
        yield {
            "kind": "skill", "slug": skill.slug, "name": skill.name, "description": skill.description,
            "status": skill.status,
            "current_version": skill.current_version.version if skill.current_version else None,
            "source_cluster": skill.source_cluster_id, "embedding": vector_encode(skill.embedding),
            "provenance": skill.provenance,
            "created_at": time_encode(skill.created_at), "updated_at": time_encode(skill.updated_at),
            "versions": [_plain({field: getattr(v, field) for field in _VERSION_FIELDS}) for v in versions],
        }


@contextmanager
def _snapshot() -> Iterator[None]:
    outermost = not connection.in_atomic_block  # else the caller's transaction is the snapshot
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def records() -> Iterator[dict]:
    """Every line of an export, in order, as dicts."""
    with _snapshot():
        counts = _counts()
        yield {"kind": "header", "format": FORMAT, "version": VERSION, "exported_at": time_encode(timezone.now()),
               "embedding_space": _space(), "counts": counts}
        for part in (_memories, _contributions, _candidates, _changes, _type_changes, _clusters, _skills,
                     _cluster_changes, _suggestions):
            yield from part()
        yield {"kind": "end", "counts": counts}


class Writer(Protocol):
    def write(self, text: str, /) -> object: ...


def export_write(out: Writer) -> dict[str, int]:
    """Write the export to ``out``; returns how many records of each kind it holds."""
    counts: dict[str, int] = {}
    for record in records():
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        if record["kind"] == "header":
            counts = record["counts"]
    return counts
