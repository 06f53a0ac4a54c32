"""What the dashboard shows: the reads behind the admin index, each number with the link to
the list it counts."""

from __future__ import annotations

import datetime
import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from clusters.selectors import clusters_ready
from ingestion.models import IngestJob, SessionRecord, TaskSegment, WorkState
from ingestion.selectors import job_progress
from memories.models import (
    CandidateStatus,
    Memory,
    MemoryType,
    MergeCandidate,
    Status,
    Tier,
    TierSnapshot,
)
from memories.selectors.records import memory_stats
from ultron_site.models import StepRun
from ultron_site.pipeline import SCHEDULE_NAME, step_names

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


def memory_charts() -> dict[str, Any]:
    """Chart.js data (JSON) for new memories per day and the tier mix, last 30 days."""
    today = timezone.localdate()
    days = [today - datetime.timedelta(days=n) for n in range(DAYS - 1, -1, -1)]
    since = timezone.now() - datetime.timedelta(days=DAYS)
    per_day = dict(Memory.objects.filter(created_at__gte=since).annotate(day=TruncDate("created_at"))
                   .values_list("day").annotate(n=Count("pk")).order_by())
    snapshots = {s.day: s for s in TierSnapshot.objects.filter(day__gte=days[0])}
    labels = [d.strftime("%b %d") for d in days]
    new = {"labels": labels, "datasets": [{"label": "new memories", "data": [per_day.get(d, 0) for d in days],
                                           "borderColor": "#7c3aed", "backgroundColor": "#7c3aed"}]}
    colours = {"hot": "#dc2626", "warm": "#f59e0b", "cold": "#3b82f6"}
    mix = {"labels": labels, "datasets": [
        {"label": tier.upper(), "data": [getattr(snapshots[d], tier) if d in snapshots else None for d in days],
         "borderColor": colours[tier], "backgroundColor": colours[tier], "spanGaps": True}
        for tier in ("hot", "warm", "cold")
    ]}
    return {"new_per_day": json.dumps(new), "tier_mix": json.dumps(mix), "has_snapshots": bool(snapshots)}


def pipeline_status() -> dict[str, Any]:
    last: dict[str, StepRun] = {}
    for run in StepRun.objects.filter(step__in=step_names()).order_by("step", "-started_at").distinct("step"):
        last[run.step] = run
    steps = [{"name": name, "run": last.get(name)} for name in step_names()]
    work = {
        "sessions": _states(SessionRecord.objects, "segmentation"),
        "scoring": _states(TaskSegment.objects, "scoring"),
        "extraction": _states(TaskSegment.objects, "extraction"),
    }
    from django_q.models import Schedule

    schedule = Schedule.objects.filter(name=SCHEDULE_NAME).only("next_run").first()
    return {
        "steps": steps,
        "work": work,
        "next_run": schedule.next_run if schedule else None,
        "interval_hours": settings.ULTRON_PIPELINE_INTERVAL_HOURS,
    }


def _states(manager: Any, field: str) -> dict[str, Any]:
    counts = dict(manager.values_list(field).annotate(n=Count("pk")).order_by())
    model = manager.model._meta.model_name
    return {
        state: {"value": counts.get(state, 0), "href": _list_url(f"ingestion_{model}", **{f"{field}__exact": state})}
        for state in (WorkState.PENDING, WorkState.FAILED, WorkState.PARKED)
    }


def recent_jobs(limit: int = 5) -> list[dict[str, Any]]:
    jobs = []
    for job in IngestJob.objects.select_related("agent").order_by("-created_at")[:limit]:
        progress = job_progress(job=job)
        jobs.append({"job": job, "progress": progress})
    return jobs


def review_counts(stats: dict[str, Any]) -> dict[str, Any]:
    ready = clusters_ready(limit=200)
    pending = stats["merge_pending"]
    candidates = MergeCandidate.objects.filter(status=CandidateStatus.OPEN, memory__status=Status.ACTIVE,
                                               duplicate_of__status=Status.ACTIVE).count()
    return {
        "ready_clusters": ready[:8],
        "ready_count": len(ready),
        "merge_pending": {"value": pending, "href": reverse("admin:memories_memory_merge_review")},
        "candidates": {"value": candidates,
                       "href": reverse("admin:memories_memory_merge_review") + "#candidates"},
        "failed_segments": TaskSegment.objects.filter(Q(scoring=WorkState.PARKED) | Q(extraction=WorkState.PARKED)).count(),
    }


def dashboard_context() -> dict[str, Any]:
    stats = memory_stats()
    return {
        "memory_counts": memory_counts(stats),
        "charts": memory_charts(),
        "pipeline": pipeline_status(),
        "jobs": recent_jobs(),
        "review": review_counts(stats),
    }
