"""Putting background work on the django-q2 queue.

A leaf module: services of every app enqueue through it, and it imports nothing of theirs.
Tasks are named by dotted path (``"memories.tasks.memory_summarize_task"``); a test checks
that every path enqueued anywhere in the code resolves to a function.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("ultron.tasks")


def enqueue(func: str, *args: Any) -> None:
    """Queue a task (call from ``transaction.on_commit``). Queueing never fails the caller:
    the scheduled pipeline picks up whatever a lost task would have done."""
    from django_q.tasks import async_task

    try:
        async_task(func, *args, group=func.rsplit(".", 1)[-1])
    except Exception:
        logger.exception("could not queue %s; the scheduled pipeline will catch up", func)


def enqueue_on_commit(func: str, *args: Any) -> None:
    """Queue a task once the current transaction commits (at once outside a transaction)."""
    from django.db import transaction

    transaction.on_commit(lambda: enqueue(func, *args))
