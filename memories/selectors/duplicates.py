"""Finding duplicates: the memory an upload duplicates, and near-duplicate pairs left over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from pgvector.django import CosineDistance

from memories.judgements.prompts import llm_available
from memories.judgements.same_subject import details_conflict
from memories.models import Memory, MemoryType, Status
from memories.text import memory_body

LIST_FIELDS_DEFERRED = ("embedding", "search_vector")


@dataclass(frozen=True)
class DuplicateMatch:
    memory: Memory
    similarity: float
    reason: str  # exact | similar | llm | ask (ask the LLM, then decide again)


def memory_find_duplicate(
    *, memory_type: str, body_hash: str, vector: list[float], verdicts: dict[Any, bool], body: str = ""
) -> DuplicateMatch | None:
    """Find the active memory of the same type that a new upload duplicates (docs/flow.md#duplicate-check).

    Exact body hash first; then the nearest neighbours through the per-type partial HNSW
    index: similarity >= ULTRON_DUPLICATE_THRESHOLD is a duplicate unless the two bodies'
    details conflict (``details_conflict``: different numbers or versions, one negated,
    opposite words); within the soft band, and for such a conflicting pair, the LLM's verdict
    (``verdicts``, filled in by the caller) decides, and a candidate with no verdict yet comes
    back with reason ``ask`` when an LLM is configured. ``body`` is the upload's text
    (content, context, resolution joined by newlines).
    """
    exact = (
        Memory.objects.defer(*LIST_FIELDS_DEFERRED)
        .filter(status=Status.ACTIVE, memory_type=memory_type, content_hash=body_hash)
        .order_by("created_at")
        .first()
    )
    if exact is not None:
        return DuplicateMatch(exact, 1.0, "exact")
    candidates = (
        Memory.objects.defer(*LIST_FIELDS_DEFERRED)
        .filter(status=Status.ACTIVE, memory_type=memory_type)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")[:5]
    )
    can_ask = None
    for candidate in candidates:
        similarity = 1.0 - float(candidate.distance)
        if similarity < settings.ULTRON_DUPLICATE_SOFT_THRESHOLD:
            break
        if similarity >= settings.ULTRON_DUPLICATE_THRESHOLD and not details_conflict(
            body, memory_body(candidate.content, candidate.context, candidate.resolution)
        ):
            return DuplicateMatch(candidate, similarity, "similar")
        verdict = verdicts.get(candidate.pk)
        if verdict is True:
            return DuplicateMatch(candidate, similarity, "llm")
        if verdict is None:
            if can_ask is None:
                can_ask = llm_available()
            if can_ask:
                return DuplicateMatch(candidate, similarity, "ask")
    return None


def memory_pairs_near_duplicate(*, limit: int) -> list[tuple[Any, Any, float]]:
    """Active same-type pairs at or above the duplicate threshold: (older id, newer id, similarity).
    Looks at the newest ``limit × 20`` memories of each type (a bounded run), each one's nearest
    same-type neighbour coming from the type's partial HNSW index."""
    table = Memory._meta.db_table
    threshold = settings.ULTRON_DUPLICATE_THRESHOLD
    pairs: list[tuple[Any, Any, float]] = []
    seen: set[Any] = set()
    for memory_type in MemoryType.values:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT m.id, n.id, 1 - (m.embedding <=> n.embedding) AS similarity
                FROM {table} m
                CROSS JOIN LATERAL (
                    SELECT id, embedding, created_at FROM {table} o
                    WHERE o.status = 'active' AND o.memory_type = '{memory_type}' AND o.id <> m.id
                    ORDER BY o.embedding <=> m.embedding LIMIT 1
                ) n
                WHERE m.id IN (
                    SELECT id FROM {table} WHERE status = 'active' AND memory_type = '{memory_type}'
                    ORDER BY created_at DESC LIMIT %s
                  )
                  AND 1 - (m.embedding <=> n.embedding) >= %s AND m.created_at <= n.created_at
                ORDER BY similarity DESC
                LIMIT %s
                """,
                [limit * 20, threshold, limit],
            )
            for older, newer, similarity in cursor.fetchall():
                if older in seen or newer in seen:
                    continue
                seen.update((older, newer))
                pairs.append((older, newer, float(similarity)))
        if len(pairs) >= limit:
            break
    return pairs[:limit]
