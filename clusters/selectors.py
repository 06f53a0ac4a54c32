"""Reads of clusters and skills."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Coalesce, Left, NullIf

from clusters.models import (
    ClusterChange,
    ClusterMember,
    ClusterSuggestion,
    KnowledgeCluster,
    Skill,
    SkillStatus,
    SkillVersion,
    SuggestionStatus,
)
from core.errors import ApplicationError
from memories.models import Memory, Status
from memories.vectors import vector_literal


def readiness(cluster: KnowledgeCluster) -> str | None:
    """``ready`` (no skill yet), ``recrystallize`` (enough new members), or None."""
    count = cluster.member_count
    if cluster.skill is not None and cluster.skill.stale_reason:
        return "recrystallize"  # a memory its published version cites was superseded
    if cluster.skill_id is None:
        if count < settings.ULTRON_CRYSTALLIZATION_THRESHOLD:
            return None
        if cluster.last_crystallization_at and count <= cluster.members_at_last_crystallization:
            return None  # a failed or insufficient attempt waits for new members
        return "ready"
    if count - cluster.members_at_last_crystallization >= settings.ULTRON_RECRYSTALLIZATION_DELTA:
        return "recrystallize"
    return None


def clusters_ready(*, limit: int, space_ids: list[int] | None = None) -> list[KnowledgeCluster]:
    """At most ``limit`` clusters ``readiness`` calls ready or due again, largest first (the
    crystallization step's work and the dashboard's list), of ``space_ids`` (None: every space
    the connection's scope reads). The member-count filter only narrows the scan to clusters
    the threshold lets through; ``readiness`` decides."""
    ready: list[KnowledgeCluster] = []
    scan = (KnowledgeCluster.objects.filter(member_count__gte=settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
            .defer("centroid", "direction").select_related("skill").order_by("-member_count", "pk"))
    if space_ids is not None:
        scan = scan.filter(space_id__in=space_ids)
    for cluster in scan.iterator(chunk_size=200):
        if len(ready) >= limit:
            break
        if readiness(cluster) is not None:
            ready.append(cluster)
    return ready




def cluster_list(*, min_members: int = 1, space_ids: list[int] | None = None) -> QuerySet[KnowledgeCluster]:
    """Clusters of ``space_ids`` (None: every space the connection's scope reads)."""
    queryset = KnowledgeCluster.objects.filter(member_count__gte=min_members)
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    return queryset.select_related("skill").defer("centroid", "direction")


def cluster_summaries(*, min_members: int, limit: int, space_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """``cluster_summary`` of at most ``limit`` clusters with at least ``min_members`` members."""
    return [cluster_summary(cluster) for cluster in cluster_list(min_members=min_members, space_ids=space_ids)[:limit]]


def cluster_detail(*, cluster_id: int, members_limit: int, space_ids: list[int] | None = None) -> dict[str, Any]:
    """A cluster's summary and its most-hit active members (raises ``DoesNotExist``)."""
    cluster = cluster_get(cluster_id=cluster_id, space_ids=space_ids)
    return {**cluster_summary(cluster), "members": list(cluster_members(cluster=cluster)[:members_limit])}


def cluster_get(*, cluster_id: int, space_ids: list[int] | None = None) -> KnowledgeCluster:
    """One cluster of ``space_ids`` (raises ``KnowledgeCluster.DoesNotExist``)."""
    queryset = KnowledgeCluster.objects.select_related("skill").defer("centroid", "direction")
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    return queryset.get(pk=cluster_id)


def cluster_members(*, cluster: KnowledgeCluster) -> QuerySet[Memory]:
    return (Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
            .defer("embedding", "search_vector").order_by("-hit_count", "pk"))


def skill_list(*, include_unpublished: bool, space_ids: list[int] | None = None) -> QuerySet[Skill]:
    """Skills (published unless ``include_unpublished``) of ``space_ids`` (None: every space the
    connection's scope reads)."""
    queryset = Skill.objects.select_related("current_version", "source_cluster").defer("embedding")
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    if not include_unpublished:
        queryset = queryset.filter(status=SkillStatus.PUBLISHED)
    return queryset


def skills_listed(*, include_unpublished: bool, limit: int, space_ids: list[int] | None = None) -> list[Skill]:
    return list(skill_list(include_unpublished=include_unpublished, space_ids=space_ids)[:limit])


def _no_such_slug(slug: str) -> bool:
    """A slug no skill can have: PostgreSQL refuses a NUL in a query's text (a 500, not a miss)."""
    return "\x00" in slug


def skill_get(*, slug: str, include_unpublished: bool, space_ids: list[int] | None = None) -> Skill:
    """One skill by slug in ``space_ids``, published unless ``include_unpublished`` (raises
    ``Skill.DoesNotExist``). A slug is unique within a space: when the spaces read hold it more
    than once, the caller must name the space."""
    if _no_such_slug(slug):
        raise Skill.DoesNotExist(slug)
    found = list(skill_list(include_unpublished=include_unpublished, space_ids=space_ids).filter(slug=slug)[:2])
    if not found:
        raise Skill.DoesNotExist(slug)
    if len(found) > 1:
        raise ApplicationError(f"skill {slug!r} is in more than one of your spaces: name one with ?space=SLUG",
                               field="space")
    return found[0]


def skill_versions(*, skill: Skill, curator: bool = True) -> QuerySet[SkillVersion]:
    """A skill's versions, newest first; an agent sees the ones that were served (published, or
    published and superseded since), never a draft waiting for a curator or a rejected one: a
    draft the poisoning screen stopped is read by curators only (docs/flow.md#screening)."""
    versions = skill.versions.order_by("-version")
    if not curator:
        versions = versions.filter(status__in=[SkillStatus.PUBLISHED, SkillStatus.SUPERSEDED])
    return versions


def skill_version_get(*, slug: str, version: int, space_ids: list[int] | None = None) -> SkillVersion:
    """One version of a skill (raises ``SkillVersion.DoesNotExist``, or ``Skill.DoesNotExist``)."""
    skill = skill_get(slug=slug, include_unpublished=True, space_ids=space_ids)
    return SkillVersion.objects.select_related("skill").get(skill=skill, version=version)


def skill_search(*, vector: list[float], limit: int, space_ids: list[int] | None = None) -> list[tuple[Skill, float]]:
    """Published skills of ``space_ids`` nearest to ``vector``, through the skills' HNSW index
    (an iterative scan: the index holds every space's skills)."""
    literal = vector_literal(vector)
    spaces = "" if space_ids is None else "AND space_id = ANY(%s::bigint[]) "
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {max(40, limit * 4)}; SET LOCAL hnsw.iterative_scan = strict_order")
        cursor.execute(
            f"SELECT id, 1 - (embedding <=> %s::vector) FROM {Skill._meta.db_table} "
            f"WHERE status = 'published' AND embedding IS NOT NULL {spaces}ORDER BY embedding <=> %s::vector LIMIT %s",
            [literal, *([list(space_ids)] if space_ids is not None else []), literal, limit],
        )
        rows = cursor.fetchall()
    skills = {s.pk: s for s in Skill.objects.filter(pk__in=[r[0] for r in rows])
              .select_related("current_version", "source_cluster").defer("embedding")}
    return [(skills[pk], float(similarity)) for pk, similarity in rows if pk in skills]


def cluster_summary(cluster: KnowledgeCluster) -> dict[str, Any]:
    return {
        "id": cluster.pk,
        "space_id": cluster.space_id,
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


# --- clusters by hand: what a curator merges with, and why two clusters look like one topic ----

# Members of each cluster compared for the closest pairs (the best placed first): 60 × 60 distances.
_EVIDENCE_MEMBERS = 60


def clusters_nearest(*, cluster: KnowledgeCluster, limit: int = 5) -> list[tuple[KnowledgeCluster, float]]:
    """The non-empty clusters of ``cluster``'s space whose centroids are nearest to its centroid
    (the merge picker of the cluster page), with their cosine: candidates from the clusters' HNSW
    index on ``direction`` (a strict iterative scan: the index holds every space's clusters),
    ranked by the exact centroids."""
    table = KnowledgeCluster._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = 100; SET LOCAL hnsw.iterative_scan = strict_order")
        cursor.execute(
            f"""SELECT c.id, 1 - (c.centroid <=> k.centroid) FROM {table} k, LATERAL (
                    SELECT id, centroid FROM {table}
                    WHERE space_id = k.space_id AND member_count > 0 AND id <> k.id
                    ORDER BY direction <=> k.centroid LIMIT %s) c
                WHERE k.id = %s ORDER BY c.centroid <=> k.centroid""",
            [limit * 2, cluster.pk],
        )
        rows = cursor.fetchall()[:limit]
    found = {c.pk: c for c in KnowledgeCluster.objects.filter(pk__in=[r[0] for r in rows]).defer("centroid", "direction")}
    return [(found[pk], float(similarity)) for pk, similarity in rows if pk in found]


def cluster_pair_evidence(*, first_id: int, second_id: int, pairs: int = 3) -> dict[str, Any]:
    """Why two clusters look like one topic: the words both clusters' members use
    (``shared_words``) and the closest pairs of members, one from each (``pairs``: memory ids,
    their one-line texts and cosine; each memory in one pair at most)."""
    from clusters.judgements.label import shared_terms

    members = ClusterMember._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT a.memory_id, b.memory_id, 1 - (a.vector <=> b.vector) FROM
                    (SELECT memory_id, vector FROM {members} WHERE cluster_id = %(first)s
                     ORDER BY similarity DESC, memory_id LIMIT %(n)s) a
                CROSS JOIN
                    (SELECT memory_id, vector FROM {members} WHERE cluster_id = %(second)s
                     ORDER BY similarity DESC, memory_id LIMIT %(n)s) b
                ORDER BY a.vector <=> b.vector LIMIT %(top)s""",
            {"first": first_id, "second": second_id, "n": _EVIDENCE_MEMBERS, "top": pairs * 4},
        )
        rows = cursor.fetchall()
    chosen: list[tuple[Any, Any, float]] = []
    used: set[Any] = set()
    for a, b, similarity in rows:
        if a in used or b in used:
            continue
        chosen.append((a, b, float(similarity)))
        used.update((a, b))
        if len(chosen) == pairs:
            break
    texts = {m.pk: (m.summary_l0 or m.content)[:200]
             for m in Memory.objects.filter(pk__in=used).only("pk", "summary_l0", "content")}

    def member_texts(cluster_id: int) -> list[str]:
        return [f"{content} {context}" for content, context in Memory.objects.filter(
            cluster_member__cluster_id=cluster_id, status=Status.ACTIVE).order_by("-hit_count", "pk")
            .values_list("content", "context")[:_EVIDENCE_MEMBERS]]

    return {
        "shared_words": shared_terms(member_texts(first_id), member_texts(second_id)),
        "pairs": [{"first": str(a), "second": str(b), "first_text": texts.get(a, ""), "second_text": texts.get(b, ""),
                   "similarity": round(s, 4)} for a, b, s in chosen],
    }


def cluster_changes(*, space_ids: list[int] | None = None, cluster_id: int | None = None) -> QuerySet[ClusterChange]:
    """Cluster changes, newest first (of ``space_ids``; touching ``cluster_id`` when given)."""
    queryset = ClusterChange.objects.order_by("-created_at", "-pk")
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    if cluster_id is not None:
        queryset = queryset.filter(Q(from_cluster_id=cluster_id) | Q(to_cluster_id=cluster_id))
    return queryset


def cluster_changes_of_memory(*, memory_id: Any, space_ids: list[int], limit: int = 20) -> list[ClusterChange]:
    """The cluster changes that moved memory ``memory_id`` (of ``space_ids``), newest first."""
    return list(ClusterChange.objects.filter(memory_ids__contains=[memory_id], space_id__in=space_ids)
                .order_by("-created_at", "-pk")[:limit])


def cluster_members_listed(*, cluster: KnowledgeCluster, limit: int | None = 200) -> list[ClusterMember]:
    """A cluster's members for the split and move forms: the best placed first, with their memory
    (``limit`` None: all of them)."""
    queryset = (ClusterMember.objects.filter(cluster=cluster).select_related("memory")
                .defer("vector", "memory__embedding", "memory__search_vector").order_by("-similarity", "pk"))
    return list(queryset if limit is None else queryset[:limit])


def cluster_changes_standing_by_repair(since: Any) -> QuerySet[ClusterChange]:
    """The repair's merges and moves since ``since`` that still stand (the review queue's
    ``cluster_move`` rows), each with the one-line text of its first memory (``first_text``)."""
    first_text = (Memory.objects.filter(pk=OuterRef("memory_ids__0"))
                  .annotate(text=Coalesce(NullIf("summary_l0", Value("")), Left("content", 200), output_field=TextField()))
                  .values("text")[:1])
    return (ClusterChange.objects.filter(decided_by="repair", undone_at__isnull=True, created_at__gte=since)
            .annotate(first_text=Subquery(first_text)))


def cluster_suggestions_open(*, space_ids: list[int] | None = None,
                             cluster_id: int | None = None) -> QuerySet[ClusterSuggestion]:
    """Merge suggestions waiting for a verdict (of ``space_ids``; of ``cluster_id`` when given),
    with both clusters (without their vectors)."""
    queryset = ClusterSuggestion.objects.filter(status=SuggestionStatus.OPEN)
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    if cluster_id is not None:
        queryset = queryset.filter(Q(first_id=cluster_id) | Q(second_id=cluster_id))
    return queryset.select_related("first", "second").defer(
        "first__centroid", "first__direction", "second__centroid", "second__direction")


def skill_version_ids(refs: list[tuple[str, int]]) -> list[int]:
    """The ids of the skill versions named by (skill slug, version number), those there are."""
    if not refs:
        return []
    wanted = set(refs)
    rows = SkillVersion.objects.filter(skill__slug__in={slug for slug, _ in refs}).values_list(
        "pk", "skill__slug", "version")
    return sorted(pk for pk, slug, number in rows if (slug, number) in wanted)


def cluster_suggestions_open_count(*, space_ids: list[int] | None = None) -> int:
    """How many merge suggestions wait for a verdict (of ``space_ids``): the dashboard's count."""
    queryset = ClusterSuggestion.objects.filter(status=SuggestionStatus.OPEN)
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    return queryset.count()


def cluster_change_get(*, change_id: int, space_ids: list[int]) -> ClusterChange | None:
    return ClusterChange.objects.filter(pk=change_id, space_id__in=space_ids).first()


def cluster_suggestion_exists(*, suggestion_id: int, space_ids: list[int]) -> bool:
    return ClusterSuggestion.objects.filter(pk=suggestion_id, space_id__in=space_ids).exists()


def cluster_exists(*, cluster_id: int) -> bool:
    return KnowledgeCluster.objects.filter(pk=cluster_id).exists()
