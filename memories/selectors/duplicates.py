"""Reading what may be a duplicate: the neighbours of a new text, and near-duplicate pairs left
over. Whether they are duplicates is decided in ``memories.judgements.duplicate``."""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection, transaction

from memories.models import Memory
from memories.thresholds import model_thresholds
from memories.vectors import vector_literal

LIST_FIELDS_DEFERRED = ("embedding", "search_vector")


@functools.cache
def _neighbours_sql(exclude: bool) -> str:
    """One statement: the oldest active memory with the same body, then the nearest five active
    ones (the active-memory HNSW index), each with its distance; without the vector and word
    columns, which nothing here reads. Written out rather than composed by the ORM, whose
    compiling of a union cost more than the database's work on it."""
    columns = ", ".join(f'"{field.column}"' for field in Memory._meta.concrete_fields
                        if field.name not in LIST_FIELDS_DEFERRED)
    other = "AND space_id = %(space)s" + (" AND id <> %(exclude)s" if exclude else "")
    table = Memory._meta.db_table
    return f"""
        (SELECT {columns}, embedding <=> %(vector)s::vector AS distance, true AS exact FROM {table}
         WHERE status = 'active' AND content_hash = %(hash)s {other} ORDER BY created_at LIMIT 1)
        UNION ALL
        (SELECT {columns}, embedding <=> %(vector)s::vector AS distance, false AS exact FROM {table}
         WHERE status = 'active' {other} ORDER BY embedding <=> %(vector)s::vector LIMIT 5)
    """


# As a SELECT-list expression: the upload sets it in its first statement (services.upload).
STRICT_SCAN_SETTING = "set_config('hnsw.iterative_scan', 'strict_order', true)"


def memory_duplicate_neighbours(*, body_hash: str, vector: list[float], space_id: int,
                                exclude: Any = None, scan_set: bool = False) -> list[Memory]:
    """The active memories of space ``space_id`` a new (or edited) text may duplicate, for
    ``memories.judgements.duplicate.duplicate_decide``: the oldest with the same body hash
    (``exact``) and the five nearest by meaning, each with its cosine ``similarity``.
    ``exclude``: a memory to leave out (an edited memory is checked against the others).

    The graph holds every space's memories: the scan goes on past other spaces' entries
    (``hnsw.iterative_scan = strict_order``, which keeps the distance order the decision reads)
    until it has five of this space (``scan_set``: the caller's transaction has set it already)."""
    with transaction.atomic():  # the setting lasts to the end of this (or the caller's) transaction
        if not scan_set:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {STRICT_SCAN_SETTING}")
        rows: list[Any] = list(Memory.objects.raw(_neighbours_sql(exclude is not None), {
            "vector": vector_literal(vector), "hash": body_hash, "exclude": exclude, "space": space_id,
        }))
    for row in rows:
        # The same body counts as 1.0 whatever its stored vector says (flow.md#duplicate-check).
        row.similarity = 1.0 if row.exact else 1.0 - float(row.distance)
    return rows


def memory_pairs_near_duplicate(*, limit: int) -> list[tuple[Any, Any, float]]:
    """Active pairs at or above the duplicate threshold: (older id, newer id, similarity).
    Looks at the newest ``limit × 20`` memories (a bounded run), each one's nearest active
    neighbour coming from the active-memory HNSW index."""
    table = Memory._meta.db_table
    threshold = model_thresholds().duplicate
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT m.id, n.id, 1 - (m.embedding <=> n.embedding) AS similarity
            FROM {table} m
            CROSS JOIN LATERAL (
                SELECT id, embedding, created_at FROM {table} o
                WHERE o.status = 'active' AND o.id <> m.id AND o.space_id = m.space_id
                ORDER BY o.embedding <=> m.embedding LIMIT 1
            ) n
            WHERE m.id IN (
                SELECT id FROM {table} WHERE status = 'active' ORDER BY created_at DESC LIMIT %s
              )
              AND 1 - (m.embedding <=> n.embedding) >= %s AND m.created_at <= n.created_at
            ORDER BY similarity DESC
            LIMIT %s
            """,
            # The newest limit × 20 memories (1,000 at the default 50 pairs, flow.md#merging); twice the pairs
            # wanted, as pairs reusing a memory are dropped below.
            [limit * 20, threshold, limit * 2],
        )
        rows = cursor.fetchall()
    pairs: list[tuple[Any, Any, float]] = []
    seen: set[Any] = set()
    for older, newer, similarity in rows:
        if older in seen or newer in seen:
            continue
        seen.update((older, newer))
        pairs.append((older, newer, float(similarity)))
    return pairs[:limit]
