"""What the merge-review page and the dashboard read: memories waiting for a curator's merge,
open merge candidates, recent automatic merges, new memories per day and the tier history, held
memories (their holds, a writer's batches) and memories whose reads come mostly from one agent."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import (
    Count,
    Exists,
    OuterRef,
    QuerySet,
    Sum,
)
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
    MemoryHold,
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


def merge_pending_page(*, page: Any, per_page: int, space_ids: list[int] | None = None) -> Page:
    """Active memories whose contributions wait for a curator's merge, newest change first."""
    pending = (_in_spaces(Memory.objects.filter(status=Status.ACTIVE, merge_pending=True), space_ids)
               .defer("embedding").order_by("-updated_at"))
    return Paginator(pending, per_page).get_page(page)


def merge_pending_count(*, space_ids: list[int] | None = None) -> int:
    """How many memories have texts waiting to be merged into them."""
    return _in_spaces(Memory.objects.filter(status=Status.ACTIVE, merge_pending=True), space_ids).count()


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


def type_changes_of(*, memory_id: Any) -> list[TypeChange]:
    """A memory's type reviews and decisions, newest first."""
    return list(TypeChange.objects.filter(memory_id=memory_id).order_by("-created_at", "-pk")[:50])


# --- the review queue: everything the hub decided alone or could not decide -------------------

QUEUE_KINDS = ("candidate", "conflict", "supersession", "merge", "type", "held")
# Decisions the hub took alone stay in the queue this long, for a curator to undo or let stand.
QUEUE_DAYS = 30
# Kinds the apps above this one add (``review_queue_kind_register``): kind -> its rows since a time.
_REGISTERED: dict[str, Callable[[datetime.datetime], QuerySet[Any]]] = {}


def review_queue_kind_register(kind: str, rows: Callable[[datetime.datetime], QuerySet[Any]]) -> None:
    """An app above this one adds a kind of row to the review queue (the clusters' changes and
    merge suggestions): ``rows(since)`` is every row of that kind the queue shows — a queryset
    of a model with ``created_at`` and ``space_id``, ``since`` the start of the queue's window
    for what the hub decided alone. Registered in the app's ``AppConfig.ready()``; its page rows
    are registered with ``memories.admin_queue.queue_item_register``."""
    if kind in QUEUE_KINDS:
        raise ValueError(f"queue kind {kind!r} is the memory service's own")
    _REGISTERED[kind] = rows


def queue_kinds() -> tuple[str, ...]:
    """Every kind of the review queue, in the order its tabs show them."""
    return QUEUE_KINDS + tuple(_REGISTERED)


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
            kind=ChangeKind.SUPERSESSION, state=ChangeState.DONE, decided_by__in=["hub", "llm"], created_at__gte=since,
            reviewed_at__isnull=True)
            .select_related("old", "new").defer("old__embedding", "new__embedding"), space_ids),
        # Automatic merges whose memory is still there to split them from.
        "merge": _in_spaces(MemoryContribution.objects.filter(
            created_at__gte=since, match_reason__in=AUTOMATIC_REASONS, memory__status=Status.ACTIVE,
            reviewed_at__isnull=True).exclude(match_reason="exact").select_related("memory", "agent").defer("memory__embedding"), space_ids),
        "type": _in_spaces(type_reviews_open().select_related("memory").defer("memory__embedding"), space_ids),
        "held": _in_spaces(holds_open().select_related("memory", "memory__agent", "space")
                           .defer("memory__embedding", "memory__search_vector"), space_ids),
        **{kind: _in_spaces(rows(since), space_ids) for kind, rows in _REGISTERED.items()},
    }


@dataclass
class CandidateFamily:
    """Open merge candidates that share memories, directly or through others: one decision in
    the queue. Named by its lowest candidate id; ``members`` oldest first (the survivor of a merge)."""

    pk: int
    candidate_ids: list[int]
    member_ids: list[Any]
    created_at: datetime.datetime
    similarity: float
    conflicts: list[str]
    members: list[Memory] = field(default_factory=list)


def _families(queryset: Any, *, connect: bool = True) -> list[CandidateFamily]:
    """The open candidates grouped into families (connected pairs), newest first; without
    ``connect``, each pair on its own."""
    rows = list(queryset.order_by().values_list("pk", "memory_id", "duplicate_of_id", "created_at", "similarity",
                                                "conflicts"))
    parent: dict[Any, Any] = {}

    def root(node: Any) -> Any:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for _, memory_id, duplicate_of_id, *_ in rows:
        if connect:
            parent[root(memory_id)] = root(duplicate_of_id)
    grouped: dict[Any, list[tuple]] = {}
    for row in rows:
        grouped.setdefault(root(row[1]) if connect else row[0], []).append(row)
    families = []
    for pairs in grouped.values():
        members = list(dict.fromkeys(m for row in sorted(pairs) for m in (row[2], row[1])))
        families.append(CandidateFamily(
            pk=min(row[0] for row in pairs), candidate_ids=sorted(row[0] for row in pairs), member_ids=members,
            created_at=max(row[3] for row in pairs), similarity=max(row[4] for row in pairs),
            conflicts=list(dict.fromkeys(c for row in pairs for c in row[5]))))
    families.sort(key=lambda f: (f.created_at, f.pk), reverse=True)
    return families


def _family_members(families: list[CandidateFamily]) -> None:
    """Load the families' memories (without their vectors), oldest first."""
    ids = {m for family in families for m in family.member_ids}
    found = {m.pk: m for m in Memory.objects.filter(pk__in=ids).defer("embedding")}
    for family in families:
        family.members = sorted((found[m] for m in family.member_ids if m in found), key=lambda m: (m.created_at, str(m.pk)))


def review_queue(*, kind: str | None, page: int, per_page: int, space_ids: list[int] | None = None,
                 family: int | None = None) -> tuple[list[tuple[str, Any]], dict[str, int]]:
    """One page of the review queue, newest first: ``(kind, row)`` pairs of ``kind`` (None:
    every kind), and how many items each kind holds. Merge candidates come as families
    (``CandidateFamily``, one decision each; ``counts["candidate_pairs"]`` counts their pairs);
    with ``family`` (a family's name), that family's pairs one by one instead."""
    querysets = _queue_querysets(space_ids)
    kinds = list(querysets)
    families = _families(querysets.pop("candidate"))
    counts = _counts(families, querysets)
    if family is not None:
        chosen = next((f for f in families if f.pk == family), None)
        families = _families(_queue_querysets(space_ids)["candidate"].filter(pk__in=chosen.candidate_ids),
                             connect=False) if chosen else []
    wanted = [kind] if kind in kinds else kinds
    end = page * per_page
    rows: list[tuple[Any, str, Any]] = []
    for name in wanted:
        if name == "candidate":
            rows.extend((f.created_at, name, f) for f in families[:end])
            continue
        for row in querysets[name].order_by("-created_at", "-pk")[:end]:
            rows.append((row.created_at, name, row))
    rows.sort(key=lambda item: item[0], reverse=True)
    shown = rows[end - per_page:end]
    _family_members([row for _, name, row in shown if name == "candidate"])
    return [(name, row) for _, name, row in shown], counts


def _counts(families: list[CandidateFamily], querysets: dict[str, Any]) -> dict[str, int]:
    counts = {"candidate": len(families), **{name: queryset.count() for name, queryset in querysets.items()}}
    counts["candidate_pairs"] = sum(len(f.candidate_ids) for f in families)
    return counts


def review_queue_counts(*, space_ids: list[int] | None = None) -> dict[str, int]:
    """How many items each kind of the review queue holds (as ``review_queue`` counts them),
    without a page of rows: the tabs, refreshed after a decision."""
    querysets = _queue_querysets(space_ids)
    return _counts(_families(querysets.pop("candidate")), querysets)


def change_kind(*, change_id: int) -> str | None:
    return KnowledgeChange.objects.filter(pk=change_id).values_list("kind", flat=True).first()


def change_row(*, change_id: int) -> KnowledgeChange:
    """A change of the queue (``KnowledgeChange.DoesNotExist`` when there is none)."""
    return KnowledgeChange.objects.get(pk=change_id)


def contribution_memory_id(*, contribution_id: int) -> Any:
    """The memory a contribution belongs to (``MemoryContribution.DoesNotExist`` when there is none)."""
    return MemoryContribution.objects.values_list("memory_id", flat=True).get(pk=contribution_id)


def memories_named(*, ids: list[Any]) -> list[Memory]:
    """The memories ``ids`` (gone ones left out), in that order: what a decided queue row names."""
    found = {m.pk: m for m in Memory.objects.defer("embedding").filter(pk__in=[i for i in ids if i])}
    return [found[i] for i in ids if i in found]


def family_memory_ids(*, candidate_ids: list[int]) -> list[Any]:
    """The memories of a family's pairs, each once, the older of each pair first."""
    pairs = MergeCandidate.objects.filter(pk__in=candidate_ids).order_by("pk").values_list("duplicate_of_id", "memory_id")
    return list(dict.fromkeys(pk for pair in pairs for pk in pair))


def type_change_decided(*, change_id: int) -> bool:
    return TypeChange.objects.filter(pk=change_id, state=ChangeState.DONE).exists()


_QUEUE_ROWS: dict[str, Any] = {"family": MergeCandidate, "change": KnowledgeChange, "contribution": MemoryContribution,
                               "type": TypeChange, "hold": MemoryHold, "memory": Memory}


def queue_rows_in_spaces(*, kind: str, ids: list[int], space_ids: list[int]) -> bool:
    """Whether every row named (candidates of a family, a change, a contribution, a type review,
    a hold) is in ``space_ids``."""
    wanted = set(ids)
    return _QUEUE_ROWS[kind].objects.filter(pk__in=wanted, space_id__in=space_ids).count() == len(wanted)


def type_review_chosen(*, review_id: int) -> str | None:
    """The type the classifier chose for an open type review."""
    return TypeChange.objects.filter(pk=review_id).values_list("chosen", flat=True).first()


# --- held memories (docs/flow.md#screening) ----------------------------------------------------

def holds_open() -> QuerySet[MemoryHold]:
    """Held memories waiting for a curator: one open hold each."""
    return MemoryHold.objects.filter(state=ChangeState.OPEN)


def holds_open_count(*, space_ids: list[int] | None = None) -> int:
    return _in_spaces(holds_open(), space_ids).count()


def hold_in_spaces(*, hold_id: int, space_ids: list[int]) -> bool:
    return MemoryHold.objects.filter(pk=hold_id, space_id__in=space_ids).exists()


def hold_state(*, hold_id: int) -> str | None:
    return MemoryHold.objects.filter(pk=hold_id).values_list("state", flat=True).first()


def hold_with_memory(*, hold_id: int) -> MemoryHold:
    """One hold with its memory (without the vector) and writer, as a queue row shows it."""
    return (MemoryHold.objects.select_related("memory", "memory__agent", "space")
            .defer("memory__embedding", "memory__search_vector").get(pk=hold_id))


# A memory's holds, a writer's batches and one-reader memories (the hold pages and the dashboard),
# kept in their own module; named here too for the pages that read the queue's selectors.
from memories.selectors.holds import (  # noqa: E402, F401
    WriterBatch,
    holds_of,
    memories_briefly,
    reads_from_one_agent,
    writer_batches,
    writer_memories_count,
)
