"""Finding duplicates: the memory an upload duplicates, and near-duplicate pairs left over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Value
from pgvector.django import CosineDistance

from memories.judgements.prompts import llm_available
from memories.judgements.same_subject import details_conflicts
from memories.models import Memory, Status
from memories.text import memory_body
from memories.thresholds import model_thresholds

LIST_FIELDS_DEFERRED = ("embedding", "search_vector")


@dataclass(frozen=True)
class DuplicateMatch:
    memory: Memory
    similarity: float
    # exact | similar | llm: a duplicate, merge. ask: ask the LLM, then decide again.
    # candidate: not sure, record a merge candidate beside the new memory.
    reason: str
    conflicts: tuple[str, ...] = ()


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
    active = (Memory.objects.defer(*LIST_FIELDS_DEFERRED).filter(status=Status.ACTIVE)
              .annotate(distance=CosineDistance("embedding", vector)))
    if exclude is not None:
        active = active.exclude(pk=exclude)
    # One statement: the oldest memory with the same body, then the nearest five.
    exact = active.filter(content_hash=body_hash).annotate(exact=Value(True)).order_by("created_at")[:1]
    nearest = active.annotate(exact=Value(False)).order_by("distance")[:5]
    found = list(exact.union(nearest, all=True))
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
