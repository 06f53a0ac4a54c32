"""django-q2 tasks of the cluster service."""

from __future__ import annotations

from clusters import services


def cluster_repair_step() -> dict[str, int]:
    return services.clusters_repair()


def crystallization_step() -> dict[str, int]:
    return services.crystallization_step()


def crystallize_task(cluster_id: int) -> str | None:
    version = services.cluster_crystallize(cluster_id=cluster_id)
    return version.status if version else None
