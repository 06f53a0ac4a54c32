"""What the dashboard shows: the reads behind the admin index, each number with the link to
the list it counts."""

from __future__ import annotations

import datetime
import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from clusters.selectors import clusters_ready
from ingestion import selectors as ingestion_reads
from ingestion.models import WorkState
from memories.admin_queue import queue_summary
from memories.models import MemoryType, Status, Tier
from memories.selectors import review as memory_reviews
from memories.selectors.records import memory_stats
from ultron_site.pipeline import pipeline_next_run, step_names, step_runs_last

DAYS = 30


def _list_url(name: str, **filters: Any) -> str:
    url = reverse(f"admin:{name}_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


def memory_counts(stats: dict[str, Any]) -> dict[str, Any]:
    """The memory service's own counts (``memory_stats``), each with the list it counts."""
    tiers, types, statuses = stats["by_tier"], stats["by_type"], stats["by_status"]
    return {
        "tiers": [{"label": t.upper(), "value": tiers[t], "href": _list_url("memories_memory", tier__exact=t,
                                                                           status__exact=Status.ACTIVE)}
                  for t in Tier.values],
        "types": [{"label": t, "value": types[t], "href": _list_url("memories_memory", memory_type__exact=t,
                                                                   status__exact=Status.ACTIVE)}
                  for t in MemoryType.values],
        "statuses": [{"label": s, "value": statuses[s], "href": _list_url("memories_memory", status__exact=s)}
                     for s in Status.values],
        "total": stats["total"],
    }


def memory_charts(space_ids: list[int] | None = None) -> dict[str, Any]:
    """Chart.js data (JSON) for new memories per day and the tier mix, last 30 days."""
    today = timezone.localdate()
    days = [today - datetime.timedelta(days=n) for n in range(DAYS - 1, -1, -1)]
    since = timezone.now() - datetime.timedelta(days=DAYS)
    per_day = memory_reviews.memories_new_per_day(since=since, space_ids=space_ids)
    snapshots = memory_reviews.tier_snapshots(since=days[0], space_ids=space_ids)
    labels = [d.strftime("%b %d") for d in days]
    new = {"labels": labels, "datasets": [{"label": "new memories", "data": [per_day.get(d, 0) for d in days],
                                           "borderColor": "#7c3aed", "backgroundColor": "#7c3aed"}]}
    colours = {"hot": "#dc2626", "warm": "#f59e0b", "cold": "#3b82f6"}
    mix = {"labels": labels, "datasets": [
        # A day without a snapshot (no rebalance ran) is a gap, not a zero: the line spans it (spanGaps).
        {"label": tier.upper(), "data": [snapshots[d][tier] if d in snapshots else None for d in days],
         "borderColor": colours[tier], "backgroundColor": colours[tier], "spanGaps": True}
        for tier in ("hot", "warm", "cold")
    ]}
    return {"new_per_day": json.dumps(new), "tier_mix": json.dumps(mix), "has_snapshots": bool(snapshots)}


def pipeline_status(space_ids: list[int] | None = None) -> dict[str, Any]:
    last = step_runs_last()
    counts = ingestion_reads.work_state_counts(space_ids=space_ids)
    return {
        "steps": [{"name": name, "run": last.get(name)} for name in step_names()],
        "work": {queue: _states(counts[queue], queue, field)
                 for queue, field in (("sessions", "segmentation"), ("scoring", "scoring"),
                                      ("extraction", "extraction"))},
        "next_run": pipeline_next_run(),
        "interval_hours": settings.ULTRON_PIPELINE_INTERVAL_HOURS,
    }


def _states(counts: dict[str, int], queue: str, field: str) -> dict[str, Any]:
    """The work states a person acts on, each with the filtered list it counts."""
    model = "sessionrecord" if queue == "sessions" else "tasksegment"
    return {
        state: {"value": counts.get(state, 0), "href": _list_url(f"ingestion_{model}", **{f"{field}__exact": state})}
        for state in (WorkState.PENDING, WorkState.FAILED, WorkState.PARKED)
    }


def review_counts(stats: dict[str, Any], space_ids: list[int] | None = None) -> dict[str, Any]:
    ready = clusters_ready(limit=200, space_ids=space_ids)
    review = reverse("admin:memories_memory_merge_review")
    queue = reverse("admin:memories_memory_queue")
    return {
        "ready_clusters": ready[:8],
        "ready_count": len(ready),
        "merge_pending": {"value": stats["merge_pending"], "href": review},
        # The queue's own counts (a family of pairs is one decision): the same numbers as its tabs.
        "summary": queue_summary(space_ids),
        "queue": {"href": queue},
        "failed_segments": ingestion_reads.segments_parked_count(space_ids=space_ids),
    }


# A memory's reads "come mostly from one agent" (the shape of an agent inflating what it planted):
# at least this share of its calls in the last DAYS days, from one reader with at least this many.
ONE_READER_SHARE = 0.8
ONE_READER_CALLS = 10


def one_reader(space_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Active memories whose reads of the last 30 days come mostly from one agent, most calls first."""
    rows = memory_reviews.reads_from_one_agent(space_ids=space_ids, days=DAYS, share=ONE_READER_SHARE,
                                               min_calls=ONE_READER_CALLS)
    return [{"memory": row.memory, "href": reverse("admin:memories_memory_change", args=[row.memory.pk]),
             "reader": row.reader, "calls": row.calls, "total": row.total, "share": round(100 * row.share),
             "readers": row.memory.readers, "tier": row.memory.tier} for row in rows]


def dashboard_context(*, space_ids: list[int] | None = None) -> dict[str, Any]:
    """Everything the dashboard shows, of ``space_ids`` (the spaces the person's pages cover;
    None: whatever the connection's scope reads)."""
    stats = memory_stats(space_ids=space_ids, curator=True)
    return {
        "memory_counts": memory_counts(stats),
        "charts": memory_charts(space_ids),
        "pipeline": pipeline_status(space_ids),
        "jobs": ingestion_reads.jobs_recent(limit=5, space_ids=space_ids),
        "review": review_counts(stats, space_ids),
        "one_reader": one_reader(space_ids),
        "one_reader_share": round(100 * ONE_READER_SHARE), "one_reader_calls": ONE_READER_CALLS,
    }
