"""Reads of held memories beyond the queue (docs/flow.md#screening): a memory's holds, the batches
of one writer taken back, and the memories whose reads come mostly from one agent."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Count,
    F,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    Subquery,
    Sum,
)
from django.utils import timezone

from memories.models import (
    ChangeState,
    Memory,
    MemoryHold,
    MemoryRead,
    Status,
)
from memories.selectors.records import _in_spaces

# How the automatic merges were decided (a curator's own merges are listed in the history).
AUTOMATIC_REASONS = ("exact", "similar", "llm")




def holds_of(*, memory_id: Any, limit: int = 20) -> list[MemoryHold]:
    """A memory's holds, newest first: what held it, what a curator decided, who undid it."""
    return list(MemoryHold.objects.filter(memory_id=memory_id).order_by("-created_at", "-pk")[:limit])


@dataclass
class WriterBatch:
    """One "hold everything this agent wrote": when, by whom, how many it held and how many of
    them still wait (only those go back with an undo)."""

    batch: Any
    held_at: datetime.datetime
    held_by: str
    held: int
    waiting: int


def writer_batches(*, agent_id: int, space_ids: list[int] | None = None, limit: int = 10) -> list[WriterBatch]:
    """The batches that took ``agent_id``'s memories back, newest first (one query)."""
    rows = (_in_spaces(MemoryHold.objects.filter(batch__isnull=False, memory__agent_id=agent_id), space_ids)
            .order_by().values("batch").annotate(held_at=Min("created_at"), held_by=Max("held_by"), held=Count("pk"),
                                                 waiting=Count("pk", filter=Q(state=ChangeState.OPEN)))
            .order_by("-held_at")[:limit])
    return [WriterBatch(**row) for row in rows]


def writer_memories_count(*, agent_id: int, since: datetime.datetime | None = None,
                          space_ids: list[int] | None = None) -> int:
    """How many memories holding everything ``agent_id`` wrote (since ``since``) would hold now:
    the served and superseded ones (``memories.services.holds.writer_hold``)."""
    memories = Memory.objects.filter(agent_id=agent_id, status__in=[Status.ACTIVE, Status.SUPERSEDED])
    if since is not None:
        memories = memories.filter(created_at__gte=since)
    return _in_spaces(memories, space_ids).count()


def memories_briefly(*, ids: list[Any]) -> list[Memory]:
    """Memories by id (their summary, status and space only), newest first."""
    return list(Memory.objects.filter(pk__in=ids).only("pk", "summary_l0", "content", "status", "space_id")
                .order_by("-created_at"))


# --- reads mostly from one agent (the dashboard) ------------------------------------------------

@dataclass
class OneReader:
    """An active memory whose reads in the window come mostly from one agent."""

    memory: Memory
    reader_id: int
    reader: str
    calls: int
    total: int

    @property
    def share(self) -> float:
        return self.calls / self.total if self.total else 0.0


def reads_from_one_agent(*, space_ids: list[int] | None = None, days: int = 30, share: float = 0.8,
                         min_calls: int = 10, limit: int = 20) -> list[OneReader]:
    """Active memories whose ``MemoryRead`` calls of the last ``days`` days come at least
    ``share`` from one reader agent with at least ``min_calls`` calls, most calls first: the
    shape of an agent inflating a memory it planted. Two queries: the reads grouped by memory
    and reader against each memory's total, then the memories."""
    since = timezone.localdate() - datetime.timedelta(days=days)
    window = _in_spaces(MemoryRead.objects.filter(day__gte=since, memory__status=Status.ACTIVE), space_ids)
    totals = (window.filter(memory_id=OuterRef("memory_id")).order_by().values("memory_id")
              .annotate(total=Sum("calls")).values("total"))
    grouped = (window.order_by().values("memory_id", "reader_id", "reader__name")
               .annotate(calls=Sum("calls"), total=Subquery(totals, output_field=IntegerField())))
    # At most one reader of a memory can hold a share above one half: one row per memory.
    rows = list(grouped.filter(calls__gte=min_calls).filter(calls__gte=F("total") * share)
                .order_by("-calls", "memory_id")[:limit])
    memories = {m.pk: m for m in Memory.objects.filter(pk__in=[r["memory_id"] for r in rows])
                .only("pk", "summary_l0", "content", "readers", "tier", "space_id")}
    return [OneReader(memories[r["memory_id"]], r["reader_id"], r["reader__name"], r["calls"], r["total"])
            for r in rows if r["memory_id"] in memories]
