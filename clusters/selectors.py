"""Reads of clusters and skills."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet

from clusters.models import KnowledgeCluster, Skill, SkillStatus, SkillVersion
from memories.models import Memory, Status
from memories.vectors import vector_literal


def readiness(cluster: KnowledgeCluster) -> str | None:
    """``ready`` (no skill yet), ``recrystallize`` (enough new members), or None."""
    count = cluster.member_count
    if cluster.skill_id is None:
        if count < settings.ULTRON_CRYSTALLIZATION_THRESHOLD:
            return None
        if cluster.last_crystallization_at and count <= cluster.members_at_last_crystallization:
            return None  # a failed or insufficient attempt waits for new members
        return "ready"
    if count - cluster.members_at_last_crystallization >= settings.ULTRON_RECRYSTALLIZATION_DELTA:
        return "recrystallize"
    return None


def clusters_ready(*, limit: int) -> list[KnowledgeCluster]:
    """At most ``limit`` clusters ``readiness`` calls ready or due again, largest first (the
    crystallization step's work and the dashboard's list). The member-count filter only narrows
    the scan to clusters the threshold lets through; ``readiness`` decides."""
    ready: list[KnowledgeCluster] = []
    scan = (KnowledgeCluster.objects.filter(member_count__gte=settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
            .defer("centroid", "direction").order_by("-member_count", "pk"))
    for cluster in scan.iterator(chunk_size=200):
        if len(ready) >= limit:
            break
        if readiness(cluster) is not None:
            ready.append(cluster)
    return ready




def cluster_list(*, min_members: int = 1) -> QuerySet[KnowledgeCluster]:
    return KnowledgeCluster.objects.filter(member_count__gte=min_members).select_related("skill").defer("centroid", "direction")


def cluster_summaries(*, min_members: int, limit: int) -> list[dict[str, Any]]:
    """``cluster_summary`` of at most ``limit`` clusters with at least ``min_members`` members."""
    return [cluster_summary(cluster) for cluster in cluster_list(min_members=min_members)[:limit]]


def cluster_detail(*, cluster_id: int, members_limit: int) -> dict[str, Any]:
    """A cluster's summary and its most-hit active members (raises ``DoesNotExist``)."""
    cluster = cluster_get(cluster_id=cluster_id)
    return {**cluster_summary(cluster), "members": list(cluster_members(cluster=cluster)[:members_limit])}


def cluster_get(*, cluster_id: int) -> KnowledgeCluster:
    """One cluster (raises ``KnowledgeCluster.DoesNotExist``)."""
    return KnowledgeCluster.objects.select_related("skill").defer("centroid", "direction").get(pk=cluster_id)


def cluster_members(*, cluster: KnowledgeCluster) -> QuerySet[Memory]:
    return (Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
            .defer("embedding", "search_vector").order_by("-hit_count", "pk"))


def skill_list(*, include_unpublished: bool) -> QuerySet[Skill]:
    queryset = Skill.objects.select_related("current_version", "source_cluster").defer("embedding")
    if not include_unpublished:
        queryset = queryset.filter(status=SkillStatus.PUBLISHED)
    return queryset


def skills_listed(*, include_unpublished: bool, limit: int) -> list[Skill]:
    return list(skill_list(include_unpublished=include_unpublished)[:limit])


def _no_such_slug(slug: str) -> bool:
    """A slug no skill can have: PostgreSQL refuses a NUL in a query's text (a 500, not a miss)."""
    return "\x00" in slug


def skill_get(*, slug: str, include_unpublished: bool) -> Skill:
    """One skill by slug, published unless ``include_unpublished`` (raises ``Skill.DoesNotExist``)."""
    if _no_such_slug(slug):
        raise Skill.DoesNotExist(slug)
    return skill_list(include_unpublished=include_unpublished).get(slug=slug)


def skill_versions(*, skill: Skill) -> QuerySet[SkillVersion]:
    return skill.versions.order_by("-version")


def skill_version_get(*, slug: str, version: int) -> SkillVersion:
    """One version of a skill (raises ``SkillVersion.DoesNotExist``)."""
    if _no_such_slug(slug):
        raise SkillVersion.DoesNotExist(slug)
    return SkillVersion.objects.select_related("skill").get(skill__slug=slug, version=version)


def skill_search(*, vector: list[float], limit: int) -> list[tuple[Skill, float]]:
    """Published skills nearest to ``vector``, through the skills' HNSW index."""
    literal = vector_literal(vector)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {max(40, limit * 4)}")
        cursor.execute(
            f"SELECT id, 1 - (embedding <=> %s::vector) FROM {Skill._meta.db_table} "
            f"WHERE status = 'published' AND embedding IS NOT NULL ORDER BY embedding <=> %s::vector LIMIT %s",
            [literal, literal, limit],
        )
        rows = cursor.fetchall()
    skills = {s.pk: s for s in Skill.objects.filter(pk__in=[r[0] for r in rows])
              .select_related("current_version", "source_cluster").defer("embedding")}
    return [(skills[pk], float(similarity)) for pk, similarity in rows if pk in skills]


def cluster_summary(cluster: KnowledgeCluster) -> dict[str, Any]:
    return {
        "id": cluster.pk,
        "topic": cluster.topic,
        "size": cluster.member_count,
        "readiness": readiness(cluster),
        "threshold": settings.ULTRON_CRYSTALLIZATION_THRESHOLD,
        "skill": cluster.skill.slug if cluster.skill else None,
        "superseded_skill_slugs": cluster.superseded_skill_slugs,
        "last_crystallization": {
            "at": cluster.last_crystallization_at,
            "result": cluster.last_crystallization_result,
            "reason": cluster.last_crystallization_reason,
            "members": cluster.members_at_last_crystallization,
        } if cluster.last_crystallization_at else None,
    }
