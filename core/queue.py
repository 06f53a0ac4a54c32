"""Putting background work on the django-q2 queue.

A leaf module: services of every app enqueue through it, and it imports nothing of theirs.
A caller passes the task function itself (imported where it is queued, inside the function,
because the tasks module imports the services that queue it): the edge from a service to its
task is an import that tools and readers see, not a string. The queue stores the function's
dotted path, which the worker imports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("ultron.tasks")


def task_path(func: Callable[..., Any]) -> str:
    """The dotted path the worker imports a task function by."""
    return f"{func.__module__}.{func.__qualname__}"


def enqueue(func: Callable[..., Any], *args: Any) -> None:
    """Queue a task (call from ``transaction.on_commit``). Queueing never fails the caller:
    the scheduled pipeline picks up whatever a lost task would have done."""
    from django_q.tasks import async_task

    path = task_path(func)
    try:
        async_task(path, *args, group=func.__name__)
    except Exception:
        logger.exception("could not queue %s; the scheduled pipeline will catch up", path)


def enqueue_on_commit(func: Callable[..., Any], *args: Any) -> None:
    """Queue a task once the current transaction commits (at once outside a transaction)."""
    from django.db import transaction

    # After the commit: a worker must never load an id the transaction has not stored yet (STYLE.md).
    transaction.on_commit(lambda: enqueue(func, *args))
