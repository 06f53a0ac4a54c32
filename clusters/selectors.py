"""Reads of clusters and skills."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction

from clusters.models import KnowledgeCluster, Skill, SkillStatus
from memories.models import Memory, Status


def cluster_list(*, min_members: int = 1):
    return KnowledgeCluster.objects.filter(member_count__gte=min_members).select_related("skill").defer("centroid")


def cluster_members(*, cluster: KnowledgeCluster):
    return (Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
            .defer("embedding").order_by("-hit_count", "pk"))


def skill_list(*, include_unpublished: bool):
    queryset = Skill.objects.select_related("current_version", "source_cluster").defer("embedding")
    if not include_unpublished:
        queryset = queryset.filter(status=SkillStatus.PUBLISHED)
    return queryset


def skill_search(*, vector: list[float], limit: int) -> list[tuple[Skill, float]]:
    """Published skills nearest to ``vector``, through the skills' HNSW index."""
    literal = "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {max(40, limit * 4)}")
        cursor.execute(
            f"SELECT id, 1 - (embedding <=> %s::vector) FROM {Skill._meta.db_table} "
            f"WHERE status = 'published' AND embedding IS NOT NULL ORDER BY embedding <=> %s::vector LIMIT %s",
            [literal, literal, limit],
        )
        rows = cursor.fetchall()
    skills = {s.pk: s for s in Skill.objects.filter(pk__in=[r[0] for r in rows]).select_related("current_version")}
    return [(skills[pk], float(similarity)) for pk, similarity in rows if pk in skills]


def cluster_summary(cluster: KnowledgeCluster) -> dict[str, Any]:
    from clusters.services import readiness

    return {
        "id": cluster.pk,
        "topic": cluster.topic,
        "size": cluster.member_count,
        "readiness": readiness(cluster),
        "threshold": settings.ULTRON_CRYSTALLIZATION_THRESHOLD,
        "skill": cluster.skill.slug if cluster.skill_id else None,
        "superseded_skill_slugs": cluster.superseded_skill_slugs,
        "last_crystallization": {
            "at": cluster.last_crystallization_at,
            "result": cluster.last_crystallization_result,
            "reason": cluster.last_crystallization_reason,
            "members": cluster.members_at_last_crystallization,
        } if cluster.last_crystallization_at else None,
    }
