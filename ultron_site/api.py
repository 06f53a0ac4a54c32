"""Site-wide API views: health."""

from __future__ import annotations

from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ultron_site.health import health_check


class HealthApi(APIView):
    """Liveness and readiness: the database (with pgvector) and the embedding model."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    def get(self, request: Request) -> Response:
        healthy, checks = health_check()
        return Response({"status": "ok" if healthy else "degraded", **checks}, status=200 if healthy else 503)
