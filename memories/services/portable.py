"""Writing back what a portable export holds of the memory service
(docs/operations.md#export-and-import): a memory with its own id, times and vector, a
contribution, a merge candidate, each stored as the file gives it and keyed so that importing
it twice changes nothing.

The caller has checked and redacted every field (an import redacts as an upload does). There
is no duplicate check, no classification and no ``memory_added`` event: an import keeps records
as they were, and the caller, which sees the clusters the file holds too, places the memories
itself once those are stored. ``auto_now`` fields are set on insert, so the file's times are
written back right after, in the same transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from agents.models import Agent, Space
from agents.selectors import space_or_shared
from memories.models import Memory, MemoryContribution, MergeCandidate, Source
from memories.services.inputs import MemoryInputError
from memories.text import content_hash

_MISSING = "is not in the hub"


def _times(model: Any, pk: Any, **times: datetime) -> None:
    model.objects.filter(pk=pk).update(**times)


def memory_import(
    *,
    memory_id: Any,
    content: str,
    context: str = "",
    resolution: str = "",
    tags: list[str] | None = None,
    memory_type: str,
    tier: str,
    status: str,
    hit_count: int,
    last_hit_at: datetime | None = None,
    summary_l0: str = "",
    overview_l1: str = "",
    embedding: list[float] | None,
    merge_pending: bool = False,
    agent: Agent | None = None,
    source: str = Source.API,
    provenance: dict | None = None,
    redaction_counts: dict | None = None,
    archived_at: datetime | None = None,
    created_at: datetime,
    updated_at: datetime,
    space: Space | int | None = None,
) -> bool:
    """Store a memory under its own id (``memory_id``) in ``space`` (default: the shared space);
    False (and nothing written) when the hub holds that id."""
    with transaction.atomic():
        # Keyed by its UUID: a memory the hub holds stays as it is.
        if Memory.objects.filter(pk=memory_id).exists():
            return False
        memory = Memory.objects.create(
            space_id=space_or_shared(space), id=memory_id, content=content, context=context, resolution=resolution, tags=tags or [],
            memory_type=memory_type, tier=tier, status=status, hit_count=hit_count, last_hit_at=last_hit_at,
            summary_l0=summary_l0, overview_l1=overview_l1, embedding=embedding,
            content_hash=content_hash(content, context, resolution), merge_pending=merge_pending, agent=agent,
            source=source, provenance=provenance or {}, redaction_counts=redaction_counts or {},
            archived_at=archived_at,
        )
        _times(Memory, memory.pk, created_at=created_at, updated_at=updated_at)
    return True


def memory_contribution_import(
    *,
    memory_id: Any,
    agent: Agent | None = None,
    content: str,
    context: str = "",
    resolution: str = "",
    tags: list[str] | None = None,
    similarity: float,
    match_reason: str,
    redaction_counts: dict | None = None,
    source: str = Source.API,
    provenance: dict | None = None,
    created_at: datetime,
    merged_at: datetime | None = None,
) -> bool:
    """Store a contribution to a memory the hub holds, keyed by that memory and its creation
    time; False when one with that key is there. Raises ``MemoryInputError`` (field ``memory``)
    when the memory is not."""
    with transaction.atomic():
        # Refused before the key is looked at: a contribution cannot be there without its memory.
        space_id = Memory.objects.filter(pk=memory_id).values_list("space_id", flat=True).first()
        if space_id is None:
            raise MemoryInputError("memory", _MISSING)
        if MemoryContribution.objects.filter(memory_id=memory_id, created_at=created_at).exists():
            return False
        row = MemoryContribution.objects.create(
            space_id=space_id, memory_id=memory_id, agent=agent, content=content, context=context, resolution=resolution,
            tags=tags or [], similarity=similarity, match_reason=match_reason[:16],
            redaction_counts=redaction_counts or {}, source=source, provenance=provenance or {}, merged_at=merged_at,
        )
        _times(MemoryContribution, row.pk, created_at=created_at)
    return True


def merge_candidate_import(
    *,
    memory_id: Any,
    duplicate_of_id: Any,
    similarity: float,
    conflicts: list | None = None,
    status: str,
    llm_verdict: bool | None = None,
    decided_by: str = "",
    decided_at: datetime | None = None,
    created_at: datetime,
) -> bool:
    """Store a merge candidate between two memories the hub holds, as the file decided it (open,
    merged or dismissed); False when that pair, in that order, is there. Raises
    ``MemoryInputError`` naming the field (``memory`` first, then ``duplicate_of``) whose memory
    is not in the hub."""
    with transaction.atomic():
        found = {str(pk): space_id for pk, space_id in Memory.objects.filter(pk__in=[memory_id, duplicate_of_id])
                 .values_list("pk", "space_id")}
        for field, value in (("memory", memory_id), ("duplicate_of", duplicate_of_id)):
            if str(value) not in found:
                raise MemoryInputError(field, _MISSING)
        if len(set(found.values())) != 1:
            raise MemoryInputError("duplicate_of", "the two memories are in different spaces")
        # Keyed by the pair in its order, as the export wrote it (the reverse pair is another row).
        if MergeCandidate.objects.filter(memory_id=memory_id, duplicate_of_id=duplicate_of_id).exists():
            return False
        row = MergeCandidate.objects.create(
            space_id=found[str(memory_id)], memory_id=memory_id, duplicate_of_id=duplicate_of_id, similarity=similarity, conflicts=conflicts or [],
            status=status, llm_verdict=llm_verdict, decided_by=decided_by[:150], decided_at=decided_at,
        )
        _times(MergeCandidate, row.pk, created_at=created_at)
    return True
