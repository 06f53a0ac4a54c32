"""Reads of memory records: details, lists, counts."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from core.errors import ApplicationError
from core.pages import Page, page_of
from memories.models import Memory, MemoryType, Status, Tier
from memories.selectors.duplicates import LIST_FIELDS_DEFERRED
from memories.selectors.space import embedding_space_get


def _in_spaces(queryset, space_ids: list[int] | None):
    """``queryset`` narrowed to ``space_ids`` (None: every space the connection's scope reads)."""
    return queryset if space_ids is None else queryset.filter(space_id__in=space_ids)


def served(*, writer_id: int | None = None) -> Q:
    """The memories an agent may read: active ones and their history (superseded), and the ones
    ``writer_id`` wrote that wait for a curator or were rejected (docs/flow.md#screening). The one
    rule that keeps a held memory from everyone but its writer."""
    rule = Q(status__in=[Status.ACTIVE, Status.SUPERSEDED])
    if writer_id is not None:
        rule |= Q(status__in=[Status.HELD, Status.REJECTED], agent_id=writer_id)
    return rule


def memory_details(*, ids: list[Any], space_ids: list[int] | None = None, writer_id: int | None = None) -> list[Memory]:
    """Full records of the active (or superseded: history) memories among ``ids`` in
    ``space_ids``, and the held ones ``writer_id`` wrote, in the order asked, each with
    ``supersedes``: the ids it replaced."""
    found = {
        m.pk: m
        for m in _in_spaces(Memory.objects.defer(*LIST_FIELDS_DEFERRED)
                            .select_related("agent", "space")
                            .filter(served(writer_id=writer_id), pk__in=ids), space_ids)
    }
    replaced = memories_superseded_by(ids=list(found))
    for memory in found.values():
        memory.supersedes = replaced.get(memory.pk, [])
    return [found[i] for i in ids if i in found]


def memories_superseded_by(*, ids: list[Any]) -> dict[Any, list[Any]]:
    """For each of ``ids``, the memories it superseded (newest replacement first): one query."""
    out: dict[Any, list[Any]] = {}
    rows = (Memory.objects.filter(superseded_by__in=ids, status=Status.SUPERSEDED)
            .order_by("-valid_until").values_list("superseded_by", "pk"))
    for new, old in rows:
        out.setdefault(new, []).append(old)
    return out


def memory_stats(*, space_ids: list[int] | None = None, curator: bool = False) -> dict[str, Any]:
    """Counts of the memories of ``space_ids``, by status, tier and type. Held and rejected
    memories are counted for curators only: an agent learns nothing of them."""
    memories = _in_spaces(Memory.objects.all(), space_ids)
    if not curator:
        memories = memories.exclude(status__in=[Status.HELD, Status.REJECTED])
    rows = memories.values("status", "tier", "memory_type").annotate(n=Count("pk"))
    by_status: dict[str, int] = {s: 0 for s in Status.values}
    by_tier: dict[str, int] = {t: 0 for t in Tier.values}
    by_type: dict[str, int] = {t: 0 for t in MemoryType.values}
    for row in rows:
        by_status[row["status"]] += row["n"]
        if row["status"] == Status.ACTIVE:
            by_tier[row["tier"]] += row["n"]
            by_type[row["memory_type"]] += row["n"]
    space = embedding_space_get()
    return {
        "total": sum(by_status.values()),
        "by_status": by_status,
        "by_tier": by_tier,
        "by_type": by_type,
        "merge_pending": memories.filter(status=Status.ACTIVE, merge_pending=True).count(),
        "embedding": (
            {"provider": space.provider, "model": space.model, "dimensions": space.dimensions}
            if space else None
        ),
    }


def memory_list(
    *, memory_type: str | None = None, tier: str | None = None, status: str = Status.ACTIVE,
    tag: str | None = None, space_ids: list[int] | None = None,
):
    queryset = _in_spaces(Memory.objects.defer(*LIST_FIELDS_DEFERRED).select_related("space").filter(status=status),
                          space_ids)
    if memory_type:
        queryset = queryset.filter(memory_type=memory_type)
    if tier:
        queryset = queryset.filter(tier=tier)
    if tag:
        # Stored tags are lower-case (memories.text.normalise_tags): the filter is normalised the same way.
        queryset = queryset.filter(tags__contains=[tag.strip().lower()])
    return queryset.order_by("-hit_count", "-created_at")


def memory_page(*, curator: bool, offset: int, limit: int, memory_type: str | None = None, tier: str | None = None,
                status: str = Status.ACTIVE, tag: str | None = None, space_ids: list[int] | None = None) -> Page:
    """One page of ``memory_list`` for a caller; archived and superseded memories are listed to
    curators only (an agent searching sees active ones, and so does its listing)."""
    if status != Status.ACTIVE and not curator:
        raise ApplicationError("only curators can list archived memories", field="status")
    queryset = memory_list(memory_type=memory_type, tier=tier, status=status, tag=tag, space_ids=space_ids)
    return page_of(queryset, offset=offset, limit=limit)


def memory_history(*, memory_id: Any, depth: int = 5) -> list[Memory]:
    """The memories ``memory_id`` replaced, and those they replaced, newest first (at most
    ``depth`` steps back): what a search with ``include_superseded`` shows after it."""
    out: list[Memory] = []
    frontier = [memory_id]
    for _ in range(depth):
        rows = list(Memory.objects.defer("search_vector").filter(superseded_by__in=frontier, status=Status.SUPERSEDED)
                    .order_by("-valid_until"))
        if not rows:
            break
        out.extend(rows)
        frontier = [row.pk for row in rows]
    return out
