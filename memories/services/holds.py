"""Held memories (docs/flow.md#screening): what the screen flagged, what a reviewed member wrote,
everything an admin took back from one writer. A held memory is served to nobody but its writer;
a curator approves it (served, marked verified) or rejects it (kept out, with the decision);
both can be undone, and so can taking a writer's memories back."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import CharField, OuterRef, Subquery, Value
from django.utils import timezone

from agents.models import Agent, ApiToken, Membership, Space, Trust
from core.errors import ApplicationError
from memories import signals
from memories.models import (
    ChangeState,
    HoldDecision,
    HoldOrigin,
    Memory,
    MemoryContribution,
    MemoryHold,
    Status,
)
from memories.screening import HOLD, Verdict, memories_screen


class HoldError(ApplicationError):
    pass


@dataclass(frozen=True)
class WriteGate:
    """What the hub knows, before an upload, of where it goes and who writes it."""

    allowed_hosts: tuple[str, ...] = ()
    reviewed: bool = False  # the writer's membership is ``reviewed``: everything it writes is held


def write_gate(*, space_id: int, agent: Agent | None) -> WriteGate:
    """The space's allowed hosts and the writer's trust in it (one statement)."""
    spaces = Space.objects.filter(pk=space_id)
    if agent is not None:
        trust = Membership.objects.filter(space_id=OuterRef("pk"), user_id=agent.user_id)
        spaces = spaces.annotate(trust=Subquery(trust.values("trust")[:1]))
    else:
        spaces = spaces.annotate(trust=Value(None, output_field=CharField()))
    row = spaces.values_list("allowed_hosts", "trust").first()
    hosts, trust_value = row if row is not None else ([], None)
    return WriteGate(tuple(hosts or ()), trust_value == Trust.REVIEWED)


def screen_items(items: list[dict[str, Any]], gate: WriteGate, *, vectors: list[Any] | None = None) -> list[Verdict]:
    """The screen's verdict on each (redacted) item, with its embedding when known:
    ``memories.screening.memories_screen``."""
    return memories_screen(items, allowed_hosts=gate.allowed_hosts, vectors=vectors)


def hold_origin(verdict: Verdict, gate: WriteGate) -> str | None:
    """Why an upload is held, or None when it is served."""
    if verdict.action == HOLD:
        return HoldOrigin.ERROR if any(f.rule == "error" for f in verdict.findings) else HoldOrigin.SCREEN
    if gate.reviewed:
        return HoldOrigin.WRITER
    return None


def hold_record(*, memory: Memory, origin: str, reasons: list[dict], held_by: str = "hub",
                prior_status: str = "", batch: uuid.UUID | None = None) -> MemoryHold:
    return MemoryHold.objects.create(space_id=memory.space_id, memory=memory, origin=origin, reasons=reasons,
                                     state=ChangeState.OPEN, prior_status=prior_status, batch=batch, held_by=held_by)


def _open_hold(hold_id: int) -> tuple[MemoryHold, Memory]:
    hold = MemoryHold.objects.select_for_update().get(pk=hold_id)
    memory = Memory.objects.select_for_update().defer("embedding").get(pk=hold.memory_id)
    return hold, memory


@transaction.atomic
def hold_approve(*, hold_id: int, user: str) -> MemoryHold:
    """Serve the held memory, marked verified by ``user``; it joins a cluster as a restored
    memory does (it is not checked for duplicates or supersession again: the curator has read it)."""
    hold, memory = _open_hold(hold_id)
    if hold.state != ChangeState.OPEN:
        raise HoldError("this memory was already decided")
    now = timezone.now()
    hold.state, hold.decision, hold.decided_by, hold.decided_at = ChangeState.DONE, HoldDecision.APPROVED, user, now
    hold.save(update_fields=["state", "decision", "decided_by", "decided_at"])
    status = hold.prior_status if hold.origin == HoldOrigin.RECALL and hold.prior_status else Status.ACTIVE
    Memory.objects.filter(pk=memory.pk).update(status=status, verified_by=user, verified_at=now, updated_at=now)
    if status == Status.ACTIVE:
        signals.memory_changed.send(sender=Memory, memory_id=memory.pk)  # joins its cluster as a restored memory does
    return hold


@transaction.atomic
def hold_reject(*, hold_id: int, user: str) -> MemoryHold:
    """Keep the held memory out for good (until undone)."""
    hold, memory = _open_hold(hold_id)
    if hold.state != ChangeState.OPEN:
        raise HoldError("this memory was already decided")
    now = timezone.now()
    hold.state, hold.decision, hold.decided_by, hold.decided_at = ChangeState.DONE, HoldDecision.REJECTED, user, now
    hold.save(update_fields=["state", "decision", "decided_by", "decided_at"])
    Memory.objects.filter(pk=memory.pk).update(status=Status.REJECTED, updated_at=now)
    return hold


@transaction.atomic
def hold_undo(*, hold_id: int, user: str) -> MemoryHold:
    """Undo a curator's decision: the memory is held again and the hold reopens. An approved
    memory leaves search, context and its cluster again (its verified mark goes)."""
    hold, memory = _open_hold(hold_id)
    if hold.state != ChangeState.DONE:
        raise HoldError("only a decided hold can be undone")
    now = timezone.now()
    was_served = memory.status == Status.ACTIVE
    hold.state, hold.undone_by, hold.undone_at = ChangeState.OPEN, user, now
    hold.decision, hold.decided_by, hold.decided_at = "", "", None
    hold.save(update_fields=["state", "undone_by", "undone_at", "decision", "decided_by", "decided_at"])
    Memory.objects.filter(pk=memory.pk).update(status=Status.HELD, verified_by="", verified_at=None, updated_at=now)
    if was_served:
        signals.memory_removed.send(sender=Memory, memory_id=memory.pk)  # leaves its cluster
    return hold


@dataclass
class WriterHold:
    """What ``writer_hold`` did: the batch id (undo it with ``writer_hold_undo``), the memories
    held, the tokens revoked, and the memories its uploads were merged into (listed for a
    curator to split back: they are other writers' memories too)."""

    batch: uuid.UUID
    held: list[Any] = field(default_factory=list)
    tokens_revoked: int = 0
    merged_into: list[Any] = field(default_factory=list)


@transaction.atomic
def writer_hold(*, agent: Agent, by: str, since: datetime | None = None, revoke_tokens: bool = False,
                space_ids: Iterable[int] | None = None) -> WriterHold:
    """Hold every memory ``agent`` wrote (since ``since``; in ``space_ids``, default all the
    connection's scope reads) that is served or superseded now: one step, undoable as a batch."""
    memories = Memory.objects.filter(agent=agent, status__in=[Status.ACTIVE, Status.SUPERSEDED])
    if since is not None:
        memories = memories.filter(created_at__gte=since)
    if space_ids is not None:
        memories = memories.filter(space_id__in=list(space_ids))
    rows = list(memories.select_for_update().values_list("pk", "space_id", "status"))
    result = WriterHold(uuid.uuid4())
    reasons = [{"rule": "recall", "label": f"taken back with everything {agent.name} wrote (by {by})",
                "field": "", "start": 0, "end": 0, "text": "", "severity": HOLD}]
    for pk, space_id, status in rows:
        MemoryHold.objects.filter(memory_id=pk, state=ChangeState.OPEN).update(state=ChangeState.UNDONE,
                                                                             undone_by=by, undone_at=timezone.now())
        MemoryHold.objects.create(space_id=space_id, memory_id=pk, origin=HoldOrigin.RECALL, reasons=reasons,
                                  state=ChangeState.OPEN, prior_status=status, batch=result.batch, held_by=by)
        result.held.append(pk)
    if result.held:
        Memory.objects.filter(pk__in=result.held).update(status=Status.HELD, updated_at=timezone.now())
        signals.memories_archived.send(sender=Memory)  # receivers look for members no longer active
    contributed = MemoryContribution.objects.filter(agent=agent)
    if since is not None:
        contributed = contributed.filter(created_at__gte=since)
    if space_ids is not None:
        contributed = contributed.filter(space_id__in=list(space_ids))
    result.merged_into = list(contributed.exclude(memory__agent=agent).values_list("memory_id", flat=True).distinct())
    if revoke_tokens:
        result.tokens_revoked = ApiToken.objects.filter(agent=agent, revoked_at__isnull=True).update(
            revoked_at=timezone.now())
    return result


@transaction.atomic
def writer_hold_undo(*, batch: uuid.UUID, user: str) -> int:
    """Put back what one ``writer_hold`` held and no curator has decided since: each memory
    returns to what it was. Returns how many."""
    holds = list(MemoryHold.objects.select_for_update().filter(batch=batch, state=ChangeState.OPEN))
    if not holds and not MemoryHold.objects.filter(batch=batch).exists():
        raise HoldError("no such batch of held memories")
    now = timezone.now()
    restored: list[Any] = []
    for hold in holds:
        status = hold.prior_status or Status.ACTIVE
        Memory.objects.filter(pk=hold.memory_id, status=Status.HELD).update(status=status, updated_at=now)
        if status == Status.ACTIVE:
            restored.append(hold.memory_id)
    MemoryHold.objects.filter(pk__in=[h.pk for h in holds]).update(state=ChangeState.UNDONE, undone_by=user, undone_at=now)
    for memory_id in restored:
        signals.memory_changed.send(sender=Memory, memory_id=memory_id)
    return len(holds)
