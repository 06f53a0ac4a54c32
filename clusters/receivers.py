"""How clusters follow the memory service: receivers of ``memories.signals``, connected in
``ClustersConfig.ready()``. They run inside the sender's transaction, so a failure here rolls
the memory change back too."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from clusters import services
from memories import signals


@receiver(signals.memory_added, dispatch_uid="clusters.memory_added")
def memory_added(*, memory_id: Any, memory: Any = None, locks_held: bool = False, **_: Any) -> None:
    services.cluster_assign(memory_id=memory_id, memory=memory, locked=locks_held)


@receiver(signals.memory_changed, dispatch_uid="clusters.memory_changed")
def memory_changed(*, memory_id: Any, **_: Any) -> None:
    services.cluster_member_refresh(memory_id=memory_id)


@receiver(signals.memory_removed, dispatch_uid="clusters.memory_removed")
def memory_removed(*, memory_id: Any, **_: Any) -> None:
    services.cluster_member_remove(memory_id=memory_id)


@receiver(signals.memory_superseded, dispatch_uid="clusters.memory_superseded")
def memory_superseded(*, memory_id: Any, **_: Any) -> None:
    services.skills_mark_stale(memory_id=memory_id)


@receiver(signals.memories_archived, dispatch_uid="clusters.memories_archived")
def memories_archived(**_: Any) -> None:
    services.clusters_prune_inactive()


@receiver(signals.embedding_dimensions_changed, dispatch_uid="clusters.embedding_dimensions_changed")
def embedding_dimensions_changed(*, dimensions: int, **_: Any) -> None:
    services.vector_columns_resize(dimensions)


@receiver(signals.memories_reembedded, dispatch_uid="clusters.memories_reembedded")
def memories_reembedded(**_: Any) -> None:
    # Centroids and skill search vectors live in the old space too: rebuild them.
    services.clusters_rebuild()
    services.skills_reembed()


@receiver(signals.calibration_requested, dispatch_uid="clusters.calibration_requested")
def calibration_requested(*, embed: Any, **_: Any) -> list:
    from clusters.calibration import cluster_thresholds_fit

    return cluster_thresholds_fit(embed)
