"""What the merge-review page and the dashboard read: memories waiting for a curator's merge,
open merge candidates, recent automatic merges, new memories per day and the tier history."""

from __future__ import annotations

import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, OuterRef, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.shortcuts import get_object_or_404
from django.utils import timezone

from memories.models import (
    CandidateStatus,
    ChangeKind,
    ChangeState,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MergeCandidate,
    Status,
    TierSnapshot,
    TypeChange,
)

# How the automatic merges were decided (a curator's own merges are listed in the history).
AUTOMATIC_REASONS = ("exact", "similar", "llm")


def merge_candidates_open() -> QuerySet[MergeCandidate]:
    """Doubtful pairs still waiting for a verdict: open, and both memories still active (a pair
    whose memory was archived meanwhile has nothing left to decide)."""
    return MergeCandidate.objects.filter(status=CandidateStatus.OPEN, memory__status=Status.ACTIVE,
                                         duplicate_of__status=Status.ACTIVE)


def _in_spaces(queryset: Any, space_ids: list[int] | None) -> Any:
    """``queryset`` narrowed to ``space_ids`` (None: every space the connection's scope reads)."""
    return queryset if space_ids is None else queryset.filter(space_id__in=space_ids)


def merge_candidates_open_count(*, space_ids: list[int] | None = None) -> int:
    return _in_spaces(merge_candidates_open(), space_ids).count()


def merge_pending_page(*, page: Any, per_page: int) -> Page:
    """Active memories whose contributions wait for a curator's merge, newest change first."""
    pending = (Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).defer("embedding")
               .order_by("-updated_at"))
    return Paginator(pending, per_page).get_page(page)


def contributions_open(*, memory: Memory) -> list[MemoryContribution]:
    """A memory's contributions not merged into its text yet, oldest first."""
    return list(memory.contributions.filter(merged_at__isnull=True).select_related("agent").order_by("created_at"))


def merge_candidates_top(*, limit: int) -> list[MergeCandidate]:
    """The open candidates most likely to be one memory first."""
    return list(merge_candidates_open().select_related("memory", "duplicate_of")
                .defer("memory__embedding", "duplicate_of__embedding").order_by("-similarity")[:limit])


def merges_automatic_recent(*, days: int, limit: int) -> list[MemoryContribution]:
    """Contributions the hub merged by itself in the last ``days`` days, newest first."""
    since = timezone.now() - datetime.timedelta(days=days)
    return list(MemoryContribution.objects.filter(created_at__gte=since, match_reason__in=AUTOMATIC_REASONS)
                .select_related("memory", "agent").defer("memory__embedding").order_by("-created_at")[:limit])


def memory_for_review(*, memory_id: Any) -> Memory:
    """One memory without its vector; a 404 when it is gone."""
    return get_object_or_404(Memory.objects.defer("embedding"), pk=memory_id)


def contribution_memory(*, contribution_id: Any) -> Memory:
    """The memory a contribution belongs to; a 404 when the contribution is gone."""
    return get_object_or_404(MemoryContribution.objects.select_related("memory"), pk=contribution_id).memory


def memory_pair(*, first_id: Any, second_id: Any) -> tuple[Memory, Memory] | None:
    """Two memories by id (without vectors), in the order asked; None when either is gone."""
    pair = {m.pk: m for m in Memory.objects.defer("embedding").filter(pk__in=[first_id, second_id])}
    if len(pair) != 2:
        return None
    return pair[first_id], pair[second_id]


def memories_new_per_day(*, since: datetime.datetime,
                         space_ids: list[int] | None = None) -> dict[datetime.date, int]:
    """How many memories of ``space_ids`` were created on each day since ``since`` (days with
    none are absent)."""
    return dict(_in_spaces(Memory.objects.filter(created_at__gte=since), space_ids)
                .annotate(day=TruncDate("created_at")).values_list("day").annotate(n=Count("pk")).order_by())


def tier_snapshots(*, since: datetime.date, space_ids: list[int] | None = None) -> dict[datetime.date, dict[str, int]]:
    """The daily HOT/WARM/COLD counts of ``space_ids`` from ``since`` on, by day: each space
    records its own row a day, and the days' rows add up."""
    rows = (_in_spaces(TierSnapshot.objects.filter(day__gte=since), space_ids).order_by().values("day")
            .annotate(hot=Sum("hot"), warm=Sum("warm"), cold=Sum("cold"), archived=Sum("archived")))
    return {row["day"]: {k: row[k] for k in ("hot", "warm", "cold", "archived")} for row in rows}


def conflicts_open() -> QuerySet[KnowledgeChange]:
    """Conflicts waiting for a curator: open, and both memories still active (one archived or
    superseded meanwhile leaves nothing to decide)."""
    return KnowledgeChange.objects.filter(kind=ChangeKind.CONFLICT, state=ChangeState.OPEN,
                                          old__status=Status.ACTIVE, new__status=Status.ACTIVE)


def changes_open(*, space_ids: list[int] | None = None, limit: int = 50) -> list[Any]:
    """Conflicts waiting for a curator, newest first: both memories still active (one that was
    archived or superseded meanwhile leaves nothing to decide)."""
    rows = conflicts_open().select_related("old", "new").order_by("-created_at", "-pk")
    return list(_in_spaces(rows, space_ids)[:limit])


def changes_open_count(*, space_ids: list[int] | None = None) -> int:
    return _in_spaces(conflicts_open(), space_ids).count()


def supersessions_recent(*, days: int, space_ids: list[int] | None = None, limit: int = 50) -> list[Any]:
    """Supersessions decided (or undone) in the last ``days`` days, newest first."""
    since = timezone.now() - datetime.timedelta(days=days)
    rows = (KnowledgeChange.objects.filter(kind=ChangeKind.SUPERSESSION, created_at__gte=since)
            .select_related("old", "new").order_by("-created_at", "-pk"))
    return list(_in_spaces(rows, space_ids)[:limit])


def change_in_spaces(*, change_id: int, space_ids: list[int]) -> bool:
    return KnowledgeChange.objects.filter(pk=change_id, space_id__in=space_ids).exists()


def type_reviews_open() -> QuerySet[TypeChange]:
    """Types the classifier was unsure of, waiting for a curator (of active memories only)."""
    return TypeChange.objects.filter(state=ChangeState.OPEN, memory__status=Status.ACTIVE)


def type_reviews_open_count(*, space_ids: list[int] | None = None) -> int:
    return _in_spaces(type_reviews_open(), space_ids).count()


def type_change_in_spaces(*, change_id: int, space_ids: list[int]) -> bool:
    return TypeChange.objects.filter(pk=change_id, space_id__in=space_ids).exists()


def type_reviews_in_spaces(*, review_ids: list[int], space_ids: list[int]) -> list[int]:
    """Those of ``review_ids`` that are open reviews of ``space_ids``."""
    return list(type_reviews_open().filter(pk__in=review_ids, space_id__in=space_ids).values_list("pk", flat=True))


def type_changes_of(*, memory_id: Any) -> list[TypeChange]:
    """A memory's type reviews and decisions, newest first."""
    return list(TypeChange.objects.filter(memory_id=memory_id).order_by("-created_at", "-pk")[:50])


# --- the review queue: everything the hub decided alone or could not decide -------------------

QUEUE_KINDS = ("candidate", "conflict", "supersession", "merge", "type")
# Decisions the hub took alone stay in the queue this long, for a curator to undo.
QUEUE_DAYS = 30


def _queue_querysets(space_ids: list[int] | None) -> dict[str, Any]:
    since = timezone.now() - datetime.timedelta(days=QUEUE_DAYS)
    return {
        # A pair that is also an open conflict is shown once, as the conflict.
        "candidate": _in_spaces(merge_candidates_open().exclude(Exists(KnowledgeChange.objects.filter(
            kind=ChangeKind.CONFLICT, state=ChangeState.OPEN, old=OuterRef("duplicate_of"), new=OuterRef("memory"))))
            .select_related("memory", "duplicate_of").defer("memory__embedding", "duplicate_of__embedding"), space_ids),
        "conflict": _in_spaces(conflicts_open().select_related("old", "new")
                               .defer("old__embedding", "new__embedding"), space_ids),
        "supersession": _in_spaces(KnowledgeChange.objects.filter(
            kind=ChangeKind.SUPERSESSION, state=ChangeState.DONE, decided_by__in=["hub", "llm"], created_at__gte=since)
            .select_related("old", "new").defer("old__embedding", "new__embedding"), space_ids),
        # Automatic merges whose memory is still there to split them from.
        "merge": _in_spaces(MemoryContribution.objects.filter(
            created_at__gte=since, match_reason__in=AUTOMATIC_REASONS, memory__status=Status.ACTIVE)
            .exclude(match_reason="exact").select_related("memory", "agent").defer("memory__embedding"), space_ids),
        "type": _in_spaces(type_reviews_open().select_related("memory").defer("memory__embedding"), space_ids),
    }


def review_queue(*, kind: str | None, page: int, per_page: int,
                 space_ids: list[int] | None = None) -> tuple[list[tuple[str, Any]], dict[str, int]]:
    """One page of the review queue, newest first: ``(kind, row)`` pairs of ``kind`` (None:
    every kind), and how many items each kind holds."""
    querysets = _queue_querysets(space_ids)
    counts = {name: queryset.count() for name, queryset in querysets.items()}
    wanted = [kind] if kind in QUEUE_KINDS else list(QUEUE_KINDS)
    end = page * per_page
    rows: list[tuple[Any, str, Any]] = []
    for name in wanted:
        for row in querysets[name].order_by("-created_at", "-pk")[:end]:
            rows.append((row.created_at, name, row))
    rows.sort(key=lambda item: item[0], reverse=True)
    return [(name, row) for _, name, row in rows[end - per_page:end]], counts
