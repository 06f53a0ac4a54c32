"""Pipeline work items (sessions to segment, segments to score or extract): claimed with a
lease (``select_for_update(skip_locked=True)``), so several workers never take the same item
and a crashed worker's items come back when the lease runs out. A failure never marks an item
done: it counts an attempt, keeps the error, waits with exponential backoff and is parked
after ``ULTRON_PIPELINE_MAX_ATTEMPTS``.

A lease is also the worker's proof of ownership. A worker that outlives its lease (a step
slower than ``ULTRON_PIPELINE_LEASE_SECONDS``) may find the item taken over by another worker;
it then records neither success nor failure (the lease it loaded the item with no longer
matches), so the new owner's outcome stands. What it stored meanwhile is guarded by the
tables' own uniqueness (one segment per fingerprint, one memory per extracted item)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from ingestion.models import WorkItem, WorkState

logger = logging.getLogger("ultron.ingestion")


def claim(queryset: models.QuerySet, limit: int) -> list[int]:
    now = timezone.now()
    lease = timedelta(seconds=settings.ULTRON_PIPELINE_LEASE_SECONDS)
    with transaction.atomic():
        ids = list(
            queryset.filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .order_by("pk")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        queryset.model._default_manager.filter(pk__in=ids).update(lease_until=now + lease)
    return ids


LEASE_LOST = "%s %s: its lease ran out and another worker took it over; this worker's outcome is dropped"


def attempt_failed(model: type[WorkItem], pk: int, state_field: str, exc: BaseException, *,
                   lease: datetime | None) -> None:
    """Count a failed attempt: retry later with backoff, or park after too many. ``lease`` is
    the item's lease when the worker loaded it."""
    item = model._default_manager.get(pk=pk)
    if item.lease_until != lease:
        logger.warning(LEASE_LOST + " (it failed: %s)", model.__name__, pk, exc)
        return
    item.attempts += 1
    item.last_error = f"{type(exc).__name__}: {exc}"[:2000]
    item.lease_until = None
    if item.attempts >= settings.ULTRON_PIPELINE_MAX_ATTEMPTS:
        setattr(item, state_field, WorkState.PARKED)
        item.next_attempt_at = None
        logger.error("%s %s parked after %d attempts: %s", model.__name__, pk, item.attempts, item.last_error)
    else:
        setattr(item, state_field, WorkState.FAILED)
        delay = settings.ULTRON_PIPELINE_RETRY_SECONDS * (2 ** (item.attempts - 1))
        item.next_attempt_at = timezone.now() + timedelta(seconds=delay)
        logger.warning("%s %s failed (attempt %d), retry in %ss: %s", model.__name__, pk, item.attempts, delay,
                       item.last_error)
    fields = [state_field, "attempts", "last_error", "next_attempt_at", "lease_until"]
    # Written only while the lease is still the one loaded: an item taken over since the check above is
    # left to its new owner.
    model._default_manager.filter(pk=pk, lease_until=lease).update(**{f: getattr(item, f) for f in fields})


def work_done(item: WorkItem, state_field: str, extra: list[str]) -> bool:
    """Mark the item done, unless its lease (as loaded) was taken over meanwhile: False then."""
    lease = item.lease_until
    setattr(item, state_field, WorkState.DONE)
    # Success clears the attempts and the error (flow.md#retries-and-parking): a later failure starts
    # its backoff from the beginning.
    item.attempts = 0
    item.last_error = ""
    item.next_attempt_at = None
    item.lease_until = None
    fields = [state_field, "attempts", "last_error", "next_attempt_at", "lease_until", *extra]
    model = type(item)
    if model._default_manager.filter(pk=item.pk, lease_until=lease).update(**{f: getattr(item, f) for f in fields}):
        return True
    logger.warning(LEASE_LOST, model.__name__, item.pk)
    return False


def work_retry(*, model: type[WorkItem], ids: list[int], state_field: str) -> int:
    """Put failed or parked items back in the queue now (an admin's retry): pending, attempts
    reset, the last error kept until the next attempt replaces it."""
    return model._default_manager.filter(
        pk__in=ids, **{f"{state_field}__in": [WorkState.FAILED, WorkState.PARKED]}
    ).update(**{state_field: WorkState.PENDING}, attempts=0, next_attempt_at=None, lease_until=None)
