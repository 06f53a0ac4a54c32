"""pgvector values in raw SQL."""

from __future__ import annotations

from collections.abc import Iterable


def vector_literal(vector: Iterable[float]) -> str:
    """A vector as pgvector's text form (``'[0.1,0.2,…]'``), for ``%s::vector`` parameters.
    Seven significant digits: a float32 survives the round trip."""
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
