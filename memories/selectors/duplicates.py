"""Finding duplicates: the memory an upload duplicates, and near-duplicate pairs left over."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.db import connection

from memories.judgements.prompts import llm_available
from memories.judgements.same_subject import details_conflicts
from memories.models import Memory
from memories.text import memory_body
from memories.thresholds import model_thresholds
from memories.vectors import vector_literal

LIST_FIELDS_DEFERRED = ("embedding", "search_vector")


@dataclass(frozen=True)
class DuplicateMatch:
    memory: Memory
    similarity: float
    # exact | similar | llm: a duplicate, merge. ask: ask the LLM, then decide again.
    # candidate: not sure, record a merge candidate beside the new memory.
    reason: str
    conflicts: tuple[str, ...] = ()


@functools.cache
def _neighbours_sql(exclude: bool) -> str:
    """One statement: the oldest active memory with the same body, then the nearest five active
    ones (the active-memory HNSW index), each with its distance; without the vector and word
    columns, which nothing here reads. Written out rather than composed by the ORM, whose
    compiling of a union cost more than the database's work on it."""
    columns = ", ".join(f'"{field.column}"' for field in Memory._meta.concrete_fields
                        if field.name not in LIST_FIELDS_DEFERRED)
    other = "AND id <> %(exclude)s" if exclude else ""
    table = Memory._meta.db_table
    return f"""
        (SELECT {columns}, embedding <=> %(vector)s::vector AS distance, true AS exact FROM {table}
         WHERE status = 'active' AND content_hash = %(hash)s {other} ORDER BY created_at LIMIT 1)
        UNION ALL
        (SELECT {columns}, embedding <=> %(vector)s::vector AS distance, false AS exact FROM {table}
         WHERE status = 'active' {other} ORDER BY embedding <=> %(vector)s::vector LIMIT 5)
    """


# How many neighbours in the candidate band the LLM is asked about, and recorded as candidates.
CANDIDATES_PER_UPLOAD = 2


def memory_find_duplicate(
    *, body_hash: str, vector: list[float], verdicts: dict[Any, bool | None], body: str = "", exclude: Any = None
) -> list[DuplicateMatch]:
    """The memories a new upload duplicates or may duplicate (docs/flow.md#duplicate-check):
    one match to merge into, or the merge candidates (at most ``CANDIDATES_PER_UPLOAD``), or
    nothing.

    Exact body hash first; then the nearest active neighbours through the active-memory HNSW
    index, of any type: the type is a judgement that can differ for two reports of one lesson,
    so it does not decide what is a duplicate. Similarity at or above the model's duplicate threshold with no
    conflicting details (``details_conflicts``) merges automatically. Within the candidate
    band (soft threshold up to the duplicate threshold), and above it when details conflict,
    the pair is a candidate: the LLM's verdict (``verdicts``, filled in by the caller) decides
    when one is configured (a neighbour with no verdict yet comes back as ``ask``);. ``body`` is the upload's text (content,
    context, resolution joined by newlines). ``exclude``: a memory to leave out (an edited
    memory is checked against the others).
    """
    # Each row a Memory with two more attributes: ``distance`` and ``exact``.
    found: list[Any] = list(Memory.objects.raw(_neighbours_sql(exclude is not None), {
        "vector": vector_literal(vector), "hash": body_hash, "exclude": exclude,
    }))
    for row in found:
        if row.exact:
            return [DuplicateMatch(row, 1.0, "exact")]
    limits = model_thresholds()
    neighbours = sorted(found, key=lambda row: row.distance)
    candidates: list[DuplicateMatch] = []
    judged = 0
    for neighbour in neighbours:
        similarity = 1.0 - float(neighbour.distance)
        if similarity < limits.soft or judged >= CANDIDATES_PER_UPLOAD:
            break
        conflicts = details_conflicts(body, memory_body(neighbour.content, neighbour.context, neighbour.resolution))
        if similarity >= limits.duplicate and not conflicts:
            return [DuplicateMatch(neighbour, similarity, "similar")]
        judged += 1
        if neighbour.pk in verdicts:
            verdict = verdicts[neighbour.pk]
            if verdict is True:
                return [DuplicateMatch(neighbour, similarity, "llm", tuple(conflicts))]
            if verdict is False:
                continue  # the LLM said distinct: recorded as a dismissed candidate by the caller
        elif llm_available():
            return [DuplicateMatch(neighbour, similarity, "ask", tuple(conflicts))]
        candidates.append(DuplicateMatch(neighbour, similarity, "candidate", tuple(conflicts)))
    return candidates


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
                WHERE o.status = 'active' AND o.id <> m.id
                ORDER BY o.embedding <=> m.embedding LIMIT 1
            ) n
            WHERE m.id IN (
                SELECT id FROM {table} WHERE status = 'active' ORDER BY created_at DESC LIMIT %s
              )
              AND 1 - (m.embedding <=> n.embedding) >= %s AND m.created_at <= n.created_at
            ORDER BY similarity DESC
            LIMIT %s
            """,
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
