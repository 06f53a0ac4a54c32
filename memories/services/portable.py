"""Writing back what a portable export holds of the memory service
(docs/operations.md#export-and-import): a memory with its own id, times and vector, a
contribution, a merge candidate, a knowledge change (supersession or conflict) and a type
decision, each stored as the file gives it and keyed so that importing it twice changes nothing.

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
from memories.models import (
    HoldOrigin,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MergeCandidate,
    Source,
    Status,
    TypeChange,
)
from memories.services.holds import hold_record
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
    valid_until: datetime | None = None,
    created_at: datetime,
    updated_at: datetime,
    space: Space | int | None = None,
    hold_reasons: list[dict] | None = None,
    readers: int = 0,
    verified_by: str = "",
    verified_at: datetime | None = None,
    screen_flags: list[dict] | None = None,
) -> bool:
    """Store a memory under its own id (``memory_id``) in ``space`` (default: the shared space);
    False (and nothing written) when the hub holds that id. ``hold_reasons``: the poisoning
    screen held it here (docs/flow.md#screening); a served memory is then stored held, with its
    hold open for a curator, and so is one the exporting hub held."""
    held = status == Status.HELD or (hold_reasons is not None and status == Status.ACTIVE)
    if held:
        status = Status.HELD
        hold_reasons = hold_reasons or [{"rule": "import", "label": "held in the hub it was exported from",
                                         "field": "", "start": 0, "end": 0, "text": "", "severity": "hold"}]
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
            archived_at=archived_at, valid_until=valid_until, readers=readers,
            # A curator of the other hub vouched for it; a memory held here is not verified until one here does.
            verified_by="" if held else verified_by, verified_at=None if held else verified_at,
            screen_flags=screen_flags or [],
        )
        _times(Memory, memory.pk, created_at=created_at, updated_at=updated_at)
        if held:
            hold_record(memory=memory, origin=HoldOrigin.SCREEN, reasons=hold_reasons or [])
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


def _one_space(*memory_ids: tuple[str, Any]) -> int:
    """The space of the memories named (field, id), all of which the hub must hold, in one space."""
    found = {str(pk): space_id for pk, space_id in
             Memory.objects.filter(pk__in=[pk for _, pk in memory_ids]).values_list("pk", "space_id")}
    for field, value in memory_ids:
        if str(value) not in found:
            raise MemoryInputError(field, _MISSING)
    if len(set(found.values())) != 1:
        raise MemoryInputError(memory_ids[-1][0], "the memories are in different spaces")
    return found[str(memory_ids[0][1])]


def memories_superseded_link(*, links: dict[Any, Any]) -> int:
    """Each memory of ``links`` (superseded, its replacement not set yet) points at the memory
    that replaced it, when the hub holds that one in the same space. Returns how many now do."""
    done = 0
    with transaction.atomic():
        for old_id, new_id in links.items():
            space_id = Memory.objects.filter(pk=new_id).values_list("space_id", flat=True).first()
            if space_id is not None:
                done += Memory.objects.filter(pk=old_id, space_id=space_id, superseded_by__isnull=True).exclude(
                    pk=new_id).update(superseded_by_id=new_id)
    return done


def knowledge_change_import(
    *, old_id: Any, new_id: Any, kind: str, state: str, order: str = "", evidence: str = "", similarity: float,
    decided_by: str = "", decided_at: datetime | None = None, undone_by: str = "", undone_at: datetime | None = None,
    reviewed_by: str = "", reviewed_at: datetime | None = None, created_at: datetime,
) -> bool:
    """Store a supersession or conflict between two memories the hub holds, as the file decided
    it (the memories' own status, ``superseded_by`` included, came with them); False when that pair
    has a change here. Raises ``MemoryInputError`` naming the field whose memory is not in the hub."""
    with transaction.atomic():
        space_id = _one_space(("old", old_id), ("new", new_id))
        # Keyed by the pair, as the table is (a pair has one row, whatever happened to it).
        if KnowledgeChange.objects.filter(old_id=old_id, new_id=new_id).exists():
            return False
        row = KnowledgeChange.objects.create(
            space_id=space_id, old_id=old_id, new_id=new_id, kind=kind, state=state, order=order[:10],
            evidence=evidence, similarity=similarity, decided_by=decided_by[:150], decided_at=decided_at,
            undone_by=undone_by[:150], undone_at=undone_at, reviewed_by=reviewed_by[:150], reviewed_at=reviewed_at)
        _times(KnowledgeChange, row.pk, created_at=created_at)
    return True


def type_change_import(
    *, memory_id: Any, state: str, chosen: str, runner_up: str = "", margin: float | None = None,
    memory_type: str = "", decided_by: str = "", decided_at: datetime | None = None, undone_by: str = "",
    undone_at: datetime | None = None, created_at: datetime,
) -> bool:
    """Store a type review or decision of a memory the hub holds; False when that memory has one
    made at that time here. Raises ``MemoryInputError`` (field ``memory``) when it is not."""
    with transaction.atomic():
        space_id = _one_space(("memory", memory_id))
        if TypeChange.objects.filter(memory_id=memory_id, created_at=created_at).exists():
            return False
        row = TypeChange.objects.create(
            space_id=space_id, memory_id=memory_id, state=state, chosen=chosen, runner_up=runner_up, margin=margin,
            memory_type=memory_type, decided_by=decided_by[:150], decided_at=decided_at, undone_by=undone_by[:150],
            undone_at=undone_at)
        _times(TypeChange, row.pk, created_at=created_at)
    return True
