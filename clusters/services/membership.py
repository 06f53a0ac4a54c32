"""Cluster membership, kept exact as memories come and go: each cluster stores the sum of its
members' vectors (its centroid's direction) and each member the vector it was added with, so
a member leaving or changing subtracts exactly what it added."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from clusters.judgements.label import cluster_label
from clusters.models import ClusterMember, KnowledgeCluster
from core.locks import lock_class
from memories.models import Memory, Status
from memories.thresholds import model_thresholds
from memories.vectors import vector_literal

# Clusters never mix spaces: placements in different spaces never wait for each other.
ASSIGN_LOCK = "cluster-assign"
ASSIGN_CLASS = lock_class(ASSIGN_LOCK)


def _centroid_shift(cluster_id: int, *, add: Any = None, subtract: Any = None, members: int = 0) -> None:
    """Add and/or subtract one vector from a cluster's centroid sum, and change its member count."""
    terms = ["centroid"]
    params: list[Any] = []
    if subtract is not None:
        terms.append("- %s::vector")
        params.append(vector_literal(subtract))
    if add is not None:
        terms.append("+ %s::vector")
        params.append(vector_literal(add))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {KnowledgeCluster._meta.db_table} SET centroid = {' '.join(terms)}, "
            "member_count = member_count + %s, updated_at = now() WHERE id = %s",
            [*params, members, cluster_id],
        )


def nearest_cluster(vector: Any, *, space_id: int, exclude: int | None = None,
                    ef_set: bool = False) -> tuple[int, float] | None:
    """The non-empty cluster of space ``space_id`` whose centroid is nearest to ``vector`` (id, cosine similarity),
    through the index on the clusters' ``direction`` (the centroid as last copied, within
    ``DIRECTION_DRIFT`` of it), ranked by the exact centroid.

    A direction refresh leaves a dead entry in that index until VACUUM: near a busy cluster many
    of the nearest entries can be dead. So the scan looks wider than the default (``ef_set``:
    the caller has already set it for this transaction), and when it still finds nothing (while
    clusters exist) the exact scan answers."""
    where = "member_count > 0 AND space_id = %(space)s" + ("" if exclude is None else " AND id <> %(exclude)s")
    with connection.cursor() as cursor:
        if not ef_set:
            cursor.execute(_WIDE_SCAN)
        cursor.execute(_nearest_sql(where), {"vector": vector_literal(vector), "exclude": exclude, "space": space_id})
        row = cursor.fetchone()
    return (int(row[0]), float(row[1])) if row is not None and row[1] is not None else None


# Candidates the index branch ranks by the exact centroid: a direction is at most
# DIRECTION_DRIFT away from its centroid, so the nearest centroid is among the nearest few directions.
_DIRECTION_CANDIDATES = 8


def _nearest_sql(where: str) -> str:
    """The statement behind ``nearest_cluster`` (id, similarity of the centroid nearest to
    ``%(vector)s`` among the clusters matching ``where``): the nearest directions from the index,
    ranked by their exact centroids, and an exact scan of the centroids ("+ 0" keeps the planner
    off the index) that runs only when the index scan found nothing."""
    table = KnowledgeCluster._meta.db_table
    return f"""
        (SELECT id, 1 - (centroid <=> %(vector)s::vector) AS similarity FROM (
            SELECT id, centroid FROM {table} WHERE {where}
            ORDER BY direction <=> %(vector)s::vector LIMIT {_DIRECTION_CANDIDATES}
         ) candidates ORDER BY centroid <=> %(vector)s::vector LIMIT 1)
        UNION ALL
        (SELECT id, 1 - (centroid <=> %(vector)s::vector) FROM {table}
         WHERE {where} ORDER BY (centroid <=> %(vector)s::vector) + 0 LIMIT 1)
        LIMIT 1"""


# ef_search only, not the iterative scan: these settings last the whole upload transaction, and
# its duplicate check reads its nearest neighbours in distance order, which a relaxed iterative
# scan does not keep.
# Strict iterative scans (distance order kept): the index holds every space's clusters, and the
# scan goes on past other spaces' entries until it has its candidates.
_WIDE_SCAN_SETTING = "set_config('hnsw.ef_search', '100', true), set_config('hnsw.iterative_scan', 'strict_order', true)"
_WIDE_SCAN = f"SELECT {_WIDE_SCAN_SETTING}"
# The placement lock and the wider index scan, as SELECT-list expressions: the upload evaluates
# them in its first statement, after its own lock; any other placement takes them alone.
UPLOAD_LOCKS = {
    "cluster placement (clusters): one memory of a space joins or founds a cluster at a time":
        f"pg_advisory_xact_lock({ASSIGN_CLASS}, %(space)s)",
    "wider HNSW scan for the nearest centroid (clusters)": _WIDE_SCAN_SETTING,
}


def cluster_assign(*, memory_id: Any, memory: Memory | None = None, locked: bool = False) -> int | None:
    """Put an active memory into the nearest cluster (cosine ≥ threshold) or a new one; returns
    the cluster's id, or None if the memory is not active or already has a cluster.

    ``memory``: the memory itself, with its embedding, content and context, when the caller has
    just stored it in this transaction (the upload): then it is known to be active and without a
    cluster, and is not read again. ``locked``: this transaction already holds the placement
    lock with the wider index scan (``UPLOAD_LOCKS``, which the upload takes in its first
    statement). Joining a cluster is then one statement: the nearest centroid, its shift and the
    member row."""
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if not locked:
            # The lock is the space's: read the memory's space first (a memory never changes space).
            space_id = memory.space_id if memory is not None else (
                Memory.objects.filter(pk=memory_id).values_list("space_id", flat=True).first())
            if space_id is None:
                return None
            cursor.execute("SELECT " + ", ".join(UPLOAD_LOCKS.values()), {"space": space_id})
        if memory is None:
            memory = Memory.objects.filter(
                pk=memory_id, status=Status.ACTIVE, cluster_member__isnull=True,
            ).only("pk", "space_id", "embedding", "content", "context").first()
            if memory is None:
                return None
        joined = _join_nearest(cursor, memory)
        if joined is not None:
            return joined
        # Named offline from the memory alone (placement holds the lock, often in an upload's
        # transaction); the pipeline's crystallization step relabels it on its next run.
        cluster = KnowledgeCluster.objects.create(
            space_id=memory.space_id, topic=cluster_label([memory.content, memory.context])[:200], centroid=memory.embedding, member_count=1,
        )
        ClusterMember.objects.create(space_id=memory.space_id, cluster=cluster, memory=memory,
                                     vector=memory.embedding, similarity=1.0)
        return cluster.pk


def _join_nearest(cursor: Any, memory: Memory) -> int | None:
    """Add ``memory`` to the cluster with the nearest centroid, if that is at least the cluster
    threshold similar: its centroid shifted and its member row written, in one statement; the
    cluster's id, or None when no cluster is near enough (or none exists). The nearest centroid
    comes from the index and, when that finds nothing (see ``nearest_cluster``), from an exact scan."""
    clusters, members = KnowledgeCluster._meta.db_table, ClusterMember._meta.db_table
    cursor.execute(
        f"""
        WITH nearest AS ({_nearest_sql("member_count > 0 AND space_id = %(space)s")}
        ), shifted AS (
            UPDATE {clusters} k
            SET centroid = k.centroid + %(vector)s::vector, member_count = k.member_count + 1, updated_at = now()
            FROM nearest WHERE k.id = nearest.id AND nearest.similarity >= %(threshold)s
            RETURNING k.id, nearest.similarity
        ), joined AS (
            INSERT INTO {members} (space_id, cluster_id, memory_id, vector, similarity, joined_at)
            SELECT %(space)s, id, %(memory)s, %(vector)s::vector, similarity, now() FROM shifted
            RETURNING cluster_id
        )
        SELECT cluster_id FROM joined
        """,
        {"vector": vector_literal(memory.embedding), "threshold": model_thresholds().cluster, "memory": memory.pk,
         "space": memory.space_id},
    )
    row = cursor.fetchone()
    return int(row[0]) if row is not None else None


def cluster_member_remove(*, memory_id: Any) -> None:
    """Take a memory out of its cluster (merged away, archived, deleted)."""
    with transaction.atomic():
        member = ClusterMember.objects.select_for_update().filter(memory_id=memory_id).first()
        if member is None:
            return
        _centroid_shift(member.cluster_id, subtract=member.vector, members=-1)
        member.delete()


def cluster_member_refresh(*, memory_id: Any) -> None:
    """After a memory's embedding changed (edit, merge) or it was restored: keep the centroid
    exact — subtract the old vector, add the new — or (re)assign it."""
    memory = Memory.objects.filter(pk=memory_id).only("pk", "status", "embedding").first()
    if memory is None or memory.status != Status.ACTIVE:
        cluster_member_remove(memory_id=memory_id)
        return
    with transaction.atomic():
        member = ClusterMember.objects.select_for_update().filter(memory_id=memory_id).first()
        if member is None:
            transaction.on_commit(lambda: cluster_assign(memory_id=memory_id))
            return
        _centroid_shift(member.cluster_id, subtract=member.vector, add=memory.embedding)
        member.vector = memory.embedding
        member.save(update_fields=["vector"])


def clusters_prune_inactive() -> int:
    """Set-based: drop members whose memory is no longer active, subtracting their vectors
    from each cluster's sum (used after the tier rebalance archives memories in bulk)."""
    clusters = KnowledgeCluster._meta.db_table
    members = ClusterMember._meta.db_table
    memories = Memory._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH gone AS (
                DELETE FROM {members} c USING {memories} m
                WHERE c.memory_id = m.id AND m.status <> 'active'
                RETURNING c.cluster_id, c.vector
            ), totals AS (
                SELECT cluster_id, sum(vector) AS total, count(*) AS n FROM gone GROUP BY cluster_id
            )
            UPDATE {clusters} k SET centroid = k.centroid - totals.total, member_count = k.member_count - totals.n,
                   updated_at = now()
            FROM totals WHERE k.id = totals.cluster_id
            """
        )
        return cursor.rowcount


def clusters_assign_missing(*, limit: int = 500) -> int:
    """Active memories that have no cluster yet (e.g. an assignment that failed) get one."""
    ids = list(Memory.objects.filter(status=Status.ACTIVE, cluster_member__isnull=True)
               .order_by("created_at", "pk").values_list("pk", flat=True)[:limit])
    for memory_id in ids:
        cluster_assign(memory_id=memory_id)
    return len(ids)
