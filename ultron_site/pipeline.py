"""The scheduled pipeline (docs/flow.md#the-scheduled-pipeline): one django-q2 schedule runs the steps in order.

Each step is a plain function (also runnable alone with ``manage.py run_pipeline --step``), run
once per space inside that space's database scope (``agents.scoping.each_space``).
Order: segmentation, scoring, extraction, merge retry, tier rebalance, keyword counts, cluster
repair, crystallization,
consolidation (off by default).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger("ultron.pipeline")

SCHEDULE_NAME = "ultron-pipeline"

# (step name, dotted path of a function taking no arguments and returning a dict of counts)
STEPS: list[tuple[str, str]] = [
    # Segmentation, scoring, extraction: each works on what the one before produced, so one run carries
    # a new session through to its memories.
    ("segmentation", "ingestion.tasks.segmentation_step"),
    ("scoring", "ingestion.tasks.scoring_step"),
    ("extraction", "ingestion.tasks.extraction_step"),
    ("merge_retry", "memories.tasks.merge_retry_step"),
    ("tier_rebalance", "memories.tasks.tier_rebalance_step"),
    ("keyword_counts", "memories.tasks.keyword_counts_step"),
    ("cluster_repair", "clusters.tasks.cluster_repair_step"),
    ("crystallization", "clusters.tasks.crystallization_step"),
    ("consolidation", "memories.tasks.consolidation_step"),
]


def step_names() -> list[str]:
    return [name for name, _ in STEPS]


def step_function(name: str) -> Callable[[], dict[str, Any]]:
    for step, path in STEPS:
        if step == name:
            return import_string(path)
    raise KeyError(f"unknown pipeline step {name!r}; known: {', '.join(step_names())}")


def run_step(name: str) -> dict[str, Any]:
    """Run one step and keep a record of the run (``StepRun``: the dashboard's pipeline panel)."""
    from django.utils import timezone

    from agents.scoping import each_space
    from ultron_site.models import StepRun

    function = step_function(name)
    record = StepRun.objects.create(step=name, started_at=timezone.now())
    started = time.monotonic()
    try:
        # Each space on its own, in its own scope: judgements never mix spaces, and a space whose
        # run fails is named in the result while the others go on.
        result = each_space(function)
    except Exception as exc:
        record.error = f"{type(exc).__name__}: {exc}"[:2000]
        record.finished_at = timezone.now()
        record.save(update_fields=["error", "finished_at"])
        # Recorded, then raised: run_pipeline logs it and goes on with the next step; --step fails the command.
        raise
    record.ok = True
    record.result = result if isinstance(result, dict) else {"result": str(result)}
    record.finished_at = timezone.now()
    record.save(update_fields=["ok", "result", "finished_at"])
    logger.info("pipeline step %s done in %.2fs: %s", name, time.monotonic() - started, result)
    return result


def run_pipeline() -> dict[str, Any]:
    """Run every step in order; one failing step does not stop the ones after it."""
    results: dict[str, Any] = {}
    for name in step_names():
        try:
            results[name] = run_step(name)
        except Exception as exc:
            logger.exception("pipeline step %s failed", name)
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    return results


def failed_steps(results: dict[str, Any]) -> list[str]:
    """The steps of a ``run_pipeline()`` result that raised (their result is ``{"error": …}``)."""
    return [name for name, result in results.items() if isinstance(result, dict) and "error" in result]


def schedule_register() -> None:
    """Create or update the pipeline's schedule (idempotent, by name)."""
    from django_q.models import Schedule

    # django-q2 schedules in whole minutes: the interval is rounded, and never below one (flow.md).
    minutes = max(1, int(round(settings.ULTRON_PIPELINE_INTERVAL_HOURS * 60)))
    Schedule.objects.update_or_create(
        name=SCHEDULE_NAME,
        defaults={
            "func": "ultron_site.pipeline.run_pipeline",
            "schedule_type": Schedule.MINUTES,
            "minutes": minutes,
            "repeats": -1,
        },
    )


def pipeline_run_enqueue() -> None:
    """Queue one whole run for the worker (the dashboard's "run now")."""
    from core.queue import enqueue

    enqueue(run_pipeline)


def step_runs_last() -> dict[str, Any]:
    """Each step's latest run (``StepRun``), by step name; a step never run is absent."""
    from ultron_site.models import StepRun

    # DISTINCT ON (PostgreSQL): the latest run of every step in one query.
    runs = StepRun.objects.filter(step__in=step_names()).order_by("step", "-started_at").distinct("step")
    return {run.step: run for run in runs}


def pipeline_next_run() -> Any:
    """When django-q2 runs the pipeline next (None when the schedule is not registered)."""
    from django_q.models import Schedule

    schedule = Schedule.objects.filter(name=SCHEDULE_NAME).only("next_run").first()
    return schedule.next_run if schedule else None
