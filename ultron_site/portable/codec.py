"""The portable format's values and the checks each line passes before anything is stored.

Vectors are base64 of little-endian float32 (exact, and a quarter the size of decimal text);
times are ISO 8601 with their offset; every other value is plain JSON.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from clusters.models import ClusterChangeKind, SkillStatus, SuggestionStatus
from memories.models import (
    CandidateStatus,
    ChangeKind,
    ChangeState,
    MemoryType,
    Source,
    Status,
    Tier,
)

FORMAT = "ultron-hub-portable"
# 2: the decision records (knowledge changes, type decisions, cluster changes, merge suggestions).
# A version 1 file is read as it always was.
VERSION = 2
KINDS = ("memory", "contribution", "candidate", "change", "type_change", "cluster", "skill", "cluster_change",
         "cluster_suggestion")


class LineError(ValueError):
    """A line that cannot be imported; the message names the field."""


def vector_encode(vector: Any) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def vector_decode(text: str, dims: int) -> list[float]:
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise LineError("is not base64") from None
    if len(raw) != 4 * dims:
        raise LineError(f"holds {len(raw) // 4} numbers, the export's embedding space has {dims}")
    values = np.frombuffer(raw, dtype="<f4")
    if not np.all(np.isfinite(values)):
        raise LineError("holds a number that is not finite")
    return values.astype(float).tolist()


def time_encode(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# --- field checks: each returns the value in its stored form or raises LineError -----------------


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise LineError("must be a string")
    if "\x00" in value:
        raise LineError("must not contain NUL characters")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**31 - 1:
        raise LineError("must be a whole number ≥ 0")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise LineError("must be a number")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise LineError("must be true or false")
    return value


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise LineError("must be an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise LineError("must be an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise LineError("must give its UTC offset")
    return parsed


def _uuid(value: Any) -> uuid.UUID:
    if not isinstance(value, str):
        raise LineError("must be a UUID")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise LineError("must be a UUID") from None


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and "\x00" not in v for v in value):
        raise LineError("must be a list of strings")
    return value


def _uuids(value: Any) -> list[uuid.UUID]:
    if not isinstance(value, list):
        raise LineError("must be a list of UUIDs")
    return [_uuid(v) for v in value]


def _object(value: Any) -> dict:
    if not isinstance(value, dict):
        raise LineError("must be a JSON object")
    return value


def _list(value: Any) -> list:
    if not isinstance(value, list):
        raise LineError("must be a JSON list")
    return value


def _choice(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise LineError(f"must be one of {', '.join(choices)}")
        return value
    return check


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _members(value: Any) -> list[dict]:
    if not isinstance(value, list):
        raise LineError("must be a list of members")
    return [_fields(MEMBER, item, "members[]") for item in value]


def _versions(value: Any) -> list[dict]:
    if not isinstance(value, list):
        raise LineError("must be a list of versions")
    return [_fields(VERSION_FIELDS, item, "versions[]") for item in value]


def _version_refs(value: Any) -> list[dict]:
    if not isinstance(value, list):
        raise LineError("must be a list of skill versions")
    return [_fields(VERSION_REF, item, "skill_versions[]") for item in value]


_VECTOR = _text  # decoded later, against the header's dimension
def _SLUG(value: Any) -> str:  # noqa: N802 - named like the other field checks
    """A skill's slug: 1 to 50 characters, the column's width (a longer one would be stored cut,
    and the next import of the same file would miss it and collide with itself)."""
    text = _text(value)
    if not 0 < len(text) <= 50:
        raise LineError("must be a skill slug of 1 to 50 characters")
    return text

# field: (check, required). Fields not listed are refused, so a typo does not pass silently.
MEMORY = {
    "id": (_uuid, True), "content": (_text, True), "context": (_text, False), "resolution": (_text, False),
    "tags": (_strings, False), "memory_type": (_choice(*MemoryType.values), True),
    "tier": (_choice(*Tier.values), True), "status": (_choice(*Status.values), True),
    "hit_count": (_count, True), "last_hit_at": (_optional(_time), False), "summary_l0": (_text, False),
    "overview_l1": (_text, False), "merge_pending": (_flag, False), "agent": (_optional(_text), False),
    "source": (_choice(*Source.values), False), "provenance": (_object, False),
    "redaction_counts": (_object, False), "archived_at": (_optional(_time), False),
    "created_at": (_time, True), "updated_at": (_time, True), "embedding": (_VECTOR, True),
    "superseded_by": (_optional(_uuid), False), "valid_until": (_optional(_time), False),
    # Format 2 files from before the poisoning screen have none of these.
    "readers": (_count, False), "verified_by": (_text, False), "verified_at": (_optional(_time), False),
    "screen_flags": (_list, False),
}
CONTRIBUTION = {
    "memory": (_uuid, True), "agent": (_optional(_text), False), "content": (_text, True),
    "context": (_text, False), "resolution": (_text, False), "tags": (_strings, False),
    "similarity": (_number, True), "match_reason": (_text, True), "redaction_counts": (_object, False),
    "source": (_choice(*Source.values), False), "provenance": (_object, False), "created_at": (_time, True),
    "merged_at": (_optional(_time), False),
}
CANDIDATE = {
    "memory": (_uuid, True), "duplicate_of": (_uuid, True), "similarity": (_number, True),
    "conflicts": (_list, False), "status": (_choice(*CandidateStatus.values), True),
    "llm_verdict": (_optional(_flag), False), "decided_by": (_text, False),
    "decided_at": (_optional(_time), False), "created_at": (_time, True),
}
MEMBER = {"memory": (_uuid, True), "similarity": (_number, True), "joined_at": (_time, True),
          "vector": (_optional(_VECTOR), False)}
CLUSTER = {
    "id": (_count, True), "topic": (_text, False), "centroid": (_VECTOR, True), "member_count": (_count, False),
    "skill": (_optional(_SLUG), False), "superseded_skill_slugs": (_strings, False),
    "members_at_last_crystallization": (_count, False), "last_crystallization_at": (_optional(_time), False),
    "last_crystallization_result": (_text, False), "last_crystallization_reason": (_text, False),
    "labelled_member_count": (_count, False), "created_at": (_time, True), "updated_at": (_time, True),
    "members": (_members, False),
}
VERSION_FIELDS = {
    "version": (_count, True), "name": (_text, True), "description": (_text, False), "body": (_text, True),
    "memory_ids": (_uuids, False), "cluster": (_optional(_count), False), "quality": (_object, False),
    "verification": (_object, False), "score": (_number, False), "status": (_choice(*SkillStatus.values), True),
    "reason": (_text, False), "author": (_text, False), "created_at": (_time, True),
}
SKILL = {
    "slug": (_SLUG, True), "name": (_text, True), "description": (_text, False),
    "status": (_choice(*SkillStatus.values), True), "current_version": (_optional(_count), False),
    "source_cluster": (_optional(_count), False), "embedding": (_optional(_VECTOR), False),
    "provenance": (_object, False),
    "created_at": (_time, True), "updated_at": (_time, True), "versions": (_versions, False),
}
_DECIDED = {"decided_by": (_text, False), "decided_at": (_optional(_time), False), "undone_by": (_text, False),
            "undone_at": (_optional(_time), False), "created_at": (_time, True)}
# A supersession or conflict between two memories (``change_kind``: the line's ``kind`` is taken).
CHANGE = {
    "old": (_uuid, True), "new": (_uuid, True), "change_kind": (_choice(*ChangeKind.values), True),
    "state": (_choice(*ChangeState.values), True), "order": (_text, False), "evidence": (_text, False),
    "similarity": (_number, True), "reviewed_by": (_text, False), "reviewed_at": (_optional(_time), False),
    **_DECIDED,
}
_TYPES = _choice(*MemoryType.values)
TYPE_CHANGE = {
    "memory": (_uuid, True), "state": (_choice(*ChangeState.values), True), "chosen": (_TYPES, True),
    "runner_up": (_optional(_choice("", *MemoryType.values)), False), "margin": (_optional(_number), False),
    "memory_type": (_optional(_choice("", *MemoryType.values)), False), **_DECIDED,
}
VERSION_REF = {"skill": (_SLUG, True), "version": (_count, True)}
# Clusters by the numbers of the file's cluster lines; one no line has was folded in by a merge.
CLUSTER_CHANGE = {
    "change_kind": (_choice(*ClusterChangeKind.values), True), "from_cluster": (_count, True),
    "to_cluster": (_count, True), "from_topic": (_text, False), "to_topic": (_text, False),
    "memory_ids": (_uuids, True), "similarity": (_optional(_number), False), "skill_versions": (_version_refs, False),
    **{**_DECIDED, "decided_by": (_text, True)},
}
CLUSTER_SUGGESTION = {
    "first": (_count, True), "second": (_count, True), "similarity": (_number, True),
    "shared_words": (_strings, False), "pairs": (_list, False), "status": (_choice(*SuggestionStatus.values), True),
    "decided_by": (_text, False), "decided_at": (_optional(_time), False), "created_at": (_time, True),
    "updated_at": (_time, True),
}
SPECS = {"memory": MEMORY, "contribution": CONTRIBUTION, "candidate": CANDIDATE, "change": CHANGE,
         "type_change": TYPE_CHANGE, "cluster": CLUSTER, "skill": SKILL, "cluster_change": CLUSTER_CHANGE,
         "cluster_suggestion": CLUSTER_SUGGESTION}


def _fields(spec: dict, data: Any, where: str = "") -> dict:
    if not isinstance(data, dict):
        raise LineError(f"{where or 'the line'} must be a JSON object")
    unknown = sorted(set(data) - set(spec) - {"kind"})
    if unknown:
        raise LineError(f"{where}{'.' if where else ''}{unknown[0]}: is not a field of this kind")
    out: dict[str, Any] = {}
    for name, (check, required) in spec.items():
        if name not in data:
            if required:
                raise LineError(f"{where}{'.' if where else ''}{name}: is required")
            continue
        try:
            out[name] = check(data[name])
        except LineError as exc:
            raise LineError(f"{where}{'.' if where else ''}{name}: {exc}") from None
    return out


def record_check(data: Any) -> tuple[str, dict]:
    """A parsed line's kind and its fields in stored form (vectors still encoded)."""
    if not isinstance(data, dict):
        raise LineError("a line must be a JSON object")
    kind = data.get("kind")
    if kind not in SPECS:
        raise LineError(f"kind: must be one of {', '.join(KINDS)} (got {kind!r})")
    return kind, _fields(SPECS[kind], data)


def header_check(data: Any) -> dict:
    """The first line: what wrote the file and the embedding space of its vectors."""
    if not isinstance(data, dict) or data.get("kind") != "header" or data.get("format") != FORMAT:
        raise LineError(f"the first line is not the header of an Ultron Hub export (format {FORMAT!r})")
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise LineError("header: version must be a whole number ≥ 1")
    if version > VERSION:
        raise LineError(f"header: format version {version} was written by a newer hub (this one reads {VERSION})")
    space = data.get("embedding_space")
    if space is not None:
        if not isinstance(space, dict) or not isinstance(space.get("dimensions"), int) or space["dimensions"] < 1:
            raise LineError("header: embedding_space must name provider, model, dimensions and text_format")
    return data
