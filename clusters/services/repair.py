"""Repairing what incremental assignment gets wrong (docs/flow.md#cluster-repair).

A memory joins the nearest cluster when it arrives, so the clusters depend on arrival order:
the first two reports of one problem may miss each other and start two clusters that later
grow towards each other. The scheduled pipeline repairs that, bounded per run:

1. clusters whose centroids have come close (``cluster_merge`` of the model's thresholds)
   merge, the smaller into the larger;
2. members that fit another cluster better than their own move (singletons only once they
   are a day old: a new memory was just compared with every cluster);
3. a skill stays with the cluster that holds most of the memories it was written from.

Centroids stay exact sums throughout (``_centroid_shift``).
"""

from __future__ import annotations

import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from clusters.models import ClusterMember, KnowledgeCluster, Skill
from clusters.services.membership import _ASSIGN_LOCK, _centroid_shift, nearest_cluster
from memories.thresholds import model_thresholds
from memories.vectors import vector_literal

SINGLETON_GRACE = datetime.timedelta(days=1)
# A member moves only when another cluster is clearly closer than its own.
MOVE_MARGIN = 0.02


def clusters_repair(*, limit: int = 200) -> dict[str, int]:
    """One bounded repair pass: at most ``limit`` merges and ``limit`` members checked."""
    limits = model_thresholds()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ASSIGN_LOCK])
        merged = _merge_close(threshold=limits.cluster_merge, limit=limit)
        moved = _move_misfits(threshold=limits.cluster, limit=limit)
    return {"merged": merged, "moved": moved}


def _merge_close(*, threshold: float, limit: int) -> int:
    """Each recently changed cluster's nearest other cluster (through the centroid index);
    pairs at or above ``threshold`` merge, most similar first, each cluster once per run."""
    recent = (KnowledgeCluster.objects.filter(member_count__gt=0).order_by("-updated_at")
              .values_list("pk", "centroid", "space_id")[: limit * 5])
    pairs = []
    for cluster_id, centroid, space_id in recent:
        found = nearest_cluster(centroid, space_id=space_id, exclude=cluster_id)
        if found is not None and found[1] >= threshold:
            pairs.append((found[1], cluster_id, found[0]))
    touched: set[int] = set()
    merged = 0
    for _, first, second in sorted(pairs, reverse=True):
        if merged >= limit or first in touched or second in touched:
            continue
        touched.update((first, second))
        _merge_pair(first, second)
        merged += 1
    return merged


def _merge_pair(first: int, second: int) -> None:
    """Fold the smaller cluster into the larger: members, centroid sum and skill."""
    pair = {c.pk: c for c in KnowledgeCluster.objects.select_for_update().filter(pk__in=[first, second])}
    keep, gone = sorted(pair.values(), key=lambda c: (-c.member_count, c.pk))
    moved = ClusterMember.objects.filter(cluster=gone).update(cluster=keep)
    table = KnowledgeCluster._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} k SET centroid = k.centroid + g.centroid, member_count = k.member_count + %s, "
            "updated_at = now() FROM {table} g WHERE k.id = %s AND g.id = %s".replace("{table}", table),
            [moved, keep.pk, gone.pk],
        )
    keep.refresh_from_db(fields=["member_count", "skill", "superseded_skill_slugs"])
    superseded = [*keep.superseded_skill_slugs, *gone.superseded_skill_slugs]
    if gone.skill_id is not None:
        if keep.skill_id is None:
            keep.skill_id = gone.skill_id
            keep.members_at_last_crystallization = gone.members_at_last_crystallization
            Skill.objects.filter(pk=gone.skill_id).update(source_cluster=keep)
        else:
            superseded.append(Skill.objects.values_list("slug", flat=True).get(pk=gone.skill_id))
    keep.superseded_skill_slugs = list(dict.fromkeys(superseded))
    keep.save(update_fields=["skill", "members_at_last_crystallization", "superseded_skill_slugs"])
    gone.delete()


def _move_misfits(*, threshold: float, limit: int) -> int:
    """Members with the weakest hold on their cluster (lowest recorded similarity) are compared
    with their own centroid without themselves, and with the nearest other cluster."""
    grace = timezone.now() - SINGLETON_GRACE
    members = list(
        ClusterMember.objects.select_related("cluster").order_by("similarity", "pk")
        .only("pk", "space_id", "vector", "similarity", "cluster__member_count", "cluster__centroid",
              "cluster__created_at")[:limit]
    )
    moved = 0
    emptied: set[int] = set()
    for member in members:
        own = member.cluster
        if own.member_count <= 1 and own.created_at > grace:
            continue
        vector = [float(x) for x in member.vector]
        own_similarity = _own_similarity(member.cluster_id, vector)
        row = nearest_cluster(vector, space_id=member.space_id, exclude=member.cluster_id)  # type: ignore[arg-type]  # never null (stubs read a default as optional)
        if row is None or row[1] < threshold or row[1] <= own_similarity + MOVE_MARGIN:
            # Stays: remember how well it fits now, so the next pass looks at others first.
            ClusterMember.objects.filter(pk=member.pk).update(similarity=max(own_similarity, -1.0))
            continue
        target, similarity = row
        _centroid_shift(member.cluster_id, subtract=vector, members=-1)
        _centroid_shift(target, add=vector, members=1)
        ClusterMember.objects.filter(pk=member.pk).update(cluster_id=target, similarity=float(similarity))
        moved += 1
        if own.member_count <= 1:
            emptied.add(member.cluster_id)
    _drop_empty(emptied)
    return moved


def _own_similarity(cluster_id: int, vector: list[float]) -> float:
    """Cosine between a member and its cluster's centroid without it (-1 for a singleton)."""
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT CASE WHEN member_count > 1 THEN 1 - ((centroid - %s::vector) <=> %s::vector) ELSE -1 END "
            f"FROM {KnowledgeCluster._meta.db_table} WHERE id = %s",
            [literal, literal, cluster_id],
        )
        row = cursor.fetchone()
    value: Any = row[0] if row else -1.0
    return -1.0 if value is None else float(value)


def _drop_empty(cluster_ids: set[int]) -> None:
    """Delete clusters left without members; a skill they held follows its memories."""
    for cluster in KnowledgeCluster.objects.filter(pk__in=cluster_ids, member_count=0).select_related(
            "skill__current_version"):
        skill = cluster.skill
        cluster.delete()
        if skill is None or skill.current_version is None:
            continue
        home = (KnowledgeCluster.objects.filter(members__memory_id__in=skill.current_version.memory_ids)
                .values_list("pk", flat=True).order_by("pk"))
        counts: dict[int, int] = {}
        for pk in home:
            counts[pk] = counts.get(pk, 0) + 1
        if counts:
            target = KnowledgeCluster.objects.get(pk=max(counts, key=lambda pk: (counts[pk], -pk)))
            if target.skill_id is None:
                target.skill = skill
                target.save(update_fields=["skill"])
                Skill.objects.filter(pk=skill.pk).update(source_cluster=target)
            elif skill.slug not in target.superseded_skill_slugs:
                target.superseded_skill_slugs = [*target.superseded_skill_slugs, skill.slug]
                target.save(update_fields=["superseded_skill_slugs"])
