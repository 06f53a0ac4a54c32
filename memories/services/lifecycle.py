"""A memory's life after upload: archived, restored, deleted (curators)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from memories import signals
from memories.models import Memory, Status


def memory_archive(*, memory_id: Any) -> bool:
    """Archive a memory (kept, but out of search, rebalance and its cluster)."""
    with transaction.atomic():
        archived = bool(
            Memory.objects.filter(pk=memory_id, status=Status.ACTIVE).update(
                status=Status.ARCHIVED, archived_at=timezone.now()
            )
        )
        if archived:
            signals.memory_removed.send(sender=Memory, memory_id=memory_id)
    return archived


def memory_delete(*, memory_id: Any) -> bool:
    """Delete a memory for good, taking it out of its cluster first (curators only)."""
    with transaction.atomic():
        # The memory's row before its cluster's, the order every writer keeps (no deadlock).
        Memory.objects.select_for_update().filter(pk=memory_id).values_list("pk", flat=True).first()
        signals.memory_removed.send(sender=Memory, memory_id=memory_id)
        deleted, _ = Memory.objects.filter(pk=memory_id).delete()
    return bool(deleted)


def memory_restore(*, memory_id: Any) -> bool:
    """Bring an archived memory back (curators): active again, hit now, back in a cluster."""
    with transaction.atomic():
        restored = bool(Memory.objects.filter(pk=memory_id, status=Status.ARCHIVED).update(
            status=Status.ACTIVE, archived_at=None, last_hit_at=timezone.now()))
    if restored:
        signals.memory_changed.send(sender=Memory, memory_id=memory_id)
    return restored
