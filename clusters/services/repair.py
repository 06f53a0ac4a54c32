"""Repairing what incremental assignment gets wrong (docs/flow.md#cluster-repair).

A memory joins the nearest cluster when it arrives, so the clusters depend on arrival order:
the first two reports of one problem may miss each other and start two clusters that later
grow towards each other. The scheduled pipeline repairs that, bounded per run:

1. clusters whose centroids have come close (``cluster_merge`` of the model's thresholds)
   merge, the smaller into the larger;
2. members that fit another cluster better than their own move (singletons only once they
   are a day old: a new memory was just compared with every cluster);
3. a skill stays with the cluster that holds most of the memories it was written from;
4. pairs of clusters a little under the merge similarity are suggested to a curator, with the
   evidence (``clusters.services.suggestions``).

Each merge and move is recorded (``ClusterChange``, decided by ``repair``), shows in the review
queue and can be undone (``clusters.services.changes``). Centroids stay exact sums throughout.
"""

from __future__ import annotations

import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from agents.models import Space
from clusters.models import ClusterChangeKind, ClusterMember, KnowledgeCluster
from clusters.services.changes import (
    REPAIR,
    change_record,
    cluster_fold,
    clusters_drop_empty,
    skill_versions_follow,
)
from clusters.services.membership import ASSIGN_LOCK, _centroid_shift, nearest_cluster
from clusters.services.suggestions import cluster_suggestions_record, suggestion_band
from core.locks import space_locks_take
from memories.thresholds import model_thresholds
from memories.vectors import vector_literal

SINGLETON_GRACE = datetime.timedelta(days=1)
# A member moves only when another cluster is clearly closer than its own.
MOVE_MARGIN = 0.02


def clusters_repair(*, limit: int = 200) -> dict[str, int]:
    """One bounded repair pass: at most ``limit`` merges and ``limit`` members checked."""
    limits = model_thresholds()
    with transaction.atomic():
        # A pass over every space's clusters: every space's placement lock, in order.
        space_locks_take(ASSIGN_LOCK, Space.objects.values_list("pk", flat=True))
        merged, suggested = _merge_close(threshold=limits.cluster_merge, band=suggestion_band(limits), limit=limit)
        moved = _move_misfits(threshold=limits.cluster, limit=limit)
    return {"merged": merged, "moved": moved, "suggested": suggested}


def _merge_close(*, threshold: float, band: tuple[float, float], limit: int) -> tuple[int, int]:
    """Each recently changed cluster's nearest other cluster (through the centroid index);
    pairs at or above ``threshold`` merge, most similar first, each cluster once per run. Pairs
    in ``band`` (under ``threshold``) are suggested to a curator (``clusters.services.suggestions``).
    Returns (merged, suggested)."""
    recent = (KnowledgeCluster.objects.filter(member_count__gt=0).order_by("-updated_at")
              .values_list("pk", "centroid", "space_id")[: limit * 5])
    pairs = []
    suggested: list[tuple[float, int, int]] = []
    space_of: dict[int, int] = {}
    for cluster_id, centroid, space_id in recent:
        space_of[cluster_id] = space_id
        found = nearest_cluster(centroid, space_id=space_id, exclude=cluster_id)
        if found is not None and found[1] >= threshold:
            pairs.append((found[1], cluster_id, found[0]))
        elif found is not None and band[0] <= found[1] < band[1] and len(suggested) < limit:
            suggested.append((found[1], cluster_id, found[0]))
    touched: set[int] = set()
    merged = 0
    for similarity, first, second in sorted(pairs, reverse=True):
        if merged >= limit or first in touched or second in touched:
            continue
        touched.update((first, second))
        _merge_pair(first, second, similarity)
        merged += 1
    # A pair one of whose clusters just merged is looked at again on the next pass.
    kept = [p for p in suggested if p[1] not in touched and p[2] not in touched]
    return merged, cluster_suggestions_record(pairs=kept, scanned=list(space_of), space_of=space_of)


def _merge_pair(first: int, second: int, similarity: float) -> None:
    """Fold the smaller cluster into the larger: members, centroid sum and skill (a recorded,
    undoable change decided by the repair)."""
    pair = list(KnowledgeCluster.objects.select_for_update().defer("direction").filter(pk__in=[first, second]))
    keep, gone = sorted(pair, key=lambda c: (-c.member_count, c.pk))
    cluster_fold(keep=keep, gone=gone, by=REPAIR, similarity=similarity, relabel=False)


def _move_misfits(*, threshold: float, limit: int) -> int:
    """Members with the weakest hold on their cluster (lowest recorded similarity) are compared
    with their own centroid without themselves, and with the nearest other cluster."""
    grace = timezone.now() - SINGLETON_GRACE
    members = list(
        ClusterMember.objects.select_related("cluster").order_by("similarity", "pk")
        .only("pk", "space_id", "memory_id", "vector", "similarity", "cluster__member_count", "cluster__centroid",
              "cluster__created_at", "cluster__topic", "cluster__space_id")[:limit]
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
        change = change_record(kind=ClusterChangeKind.MOVE, source=own, target=_topic_of(target),
                               memory_ids=[member.memory_id], by=REPAIR, similarity=float(similarity))
        moved += 1
        if skill_versions_follow(change=change, gone=member.cluster_id, to=target) or own.member_count <= 1:
            emptied.add(member.cluster_id)
    clusters_drop_empty(emptied)
    return moved


def _topic_of(cluster_id: int) -> KnowledgeCluster:
    return KnowledgeCluster.objects.only("pk", "space_id", "topic").get(pk=cluster_id)


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
