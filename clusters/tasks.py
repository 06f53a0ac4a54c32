"""django-q2 tasks of the cluster service."""

from __future__ import annotations

from agents.scoping import in_space_of
from clusters import services
from clusters.models import KnowledgeCluster


def cluster_repair_step() -> dict[str, int]:
    return services.clusters_repair()


def crystallization_step() -> dict[str, int]:
    return services.crystallization_step()


def crystallize_task(cluster_id: int) -> str | None:
    with in_space_of(KnowledgeCluster._meta.db_table, cluster_id):  # the cluster's space, and only it
        version = services.cluster_crystallize(cluster_id=cluster_id)
    return version.status if version else None
