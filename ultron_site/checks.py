"""System checks that need the database (``manage.py migrate`` and ``check --database default``
run them; ``make run`` migrates first, so the hub refuses to start when one fails)."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import DatabaseError

from ultron_site.health import pgvector_refusal, pgvector_versions


@checks.register(checks.Tags.database)
def pgvector_new_enough(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if not databases or "default" not in databases:
        return []
    try:
        refusal = pgvector_refusal(*pgvector_versions())
    except DatabaseError:
        return []  # an unreachable database is reported by the command itself
    return [checks.Error(f"The hub cannot use this database: {refusal}.", id="ultron.E001")] if refusal else []
