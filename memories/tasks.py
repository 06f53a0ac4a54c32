"""django-q2 tasks of the memory service: load by id, call the service."""

from __future__ import annotations

import logging
from typing import Any

from memories import services

logger = logging.getLogger("ultron.tasks")


def enqueue(func: str, *args: Any) -> None:
    """Queue a task (call from ``transaction.on_commit``). Queueing never fails an upload."""
    from django_q.tasks import async_task

    try:
        async_task(func, *args, group=func.rsplit(".", 1)[-1])
    except Exception:
        logger.exception("could not queue %s; the scheduled pipeline will catch up", func)


def memory_summarize_task(memory_id: str) -> bool:
    return services.memory_summarize(memory_id=memory_id)


def memory_merge_task(memory_id: str) -> bool:
    return services.memory_merge_pending(memory_id=memory_id)


def merge_retry_step() -> dict[str, int]:
    return services.memories_merge_retry()


def tier_rebalance_step() -> dict[str, int]:
    result = services.tiers_rebalance()
    return result.__dict__.copy()


def consolidation_step() -> dict[str, int]:
    return services.memories_consolidate()
