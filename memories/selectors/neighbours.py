"""The memories nearest to one memory (the curators' "similar memories" panel)."""

from __future__ import annotations

from typing import Any

from pgvector.django import CosineDistance

from memories.models import Memory, Status


def memory_neighbours(*, memory_id: Any, limit: int = 5) -> list[tuple[Memory, float]]:
    """Active memories of the same space nearest to ``memory_id``'s embedding, with their cosine
    similarity (a curator of several spaces sees them all, but memories merge only within one)."""
    vector, space_id = Memory.objects.values_list("embedding", "space_id").get(pk=memory_id)
    rows = (Memory.objects.filter(status=Status.ACTIVE, space_id=space_id).exclude(pk=memory_id)
            .defer("embedding", "search_vector").select_related("agent")
            .annotate(distance=CosineDistance("embedding", vector)).order_by("distance")[:limit])
    return [(row, 1.0 - float(row.distance)) for row in rows]
