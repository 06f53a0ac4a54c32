"""Site-wide API views: health."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ultron_site.health import health_check


class DatabaseCheckSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    pgvector = serializers.CharField(required=False, allow_null=True, help_text="the extension's version")
    error = serializers.CharField(required=False, help_text="why the database could not be reached or used (e.g. pgvector too old)")


class EmbeddingCheckSerializer(serializers.Serializer):
    provider = serializers.CharField()
    name = serializers.CharField()
    dimensions = serializers.IntegerField()
    installed = serializers.BooleanField(required=False, help_text="the local model's package")
    stored = serializers.CharField(required=False, allow_null=True, help_text="the space the stored vectors are in")
    matches_stored = serializers.BooleanField(required=False)


class LlmCheckSerializer(serializers.Serializer):
    provider = serializers.CharField()
    model = serializers.CharField()


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "degraded"])
    database = DatabaseCheckSerializer()
    embedding_model = EmbeddingCheckSerializer()
    llm = LlmCheckSerializer()


class HealthApi(APIView):
    """Liveness and readiness: the database (with pgvector) and the embedding model."""

    # Open to anyone and never throttled: a load balancer or a monitor polls it without a token.
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    @extend_schema(responses={
        200: OpenApiResponse(HealthSerializer, description="every check passed"),
        503: OpenApiResponse(HealthSerializer, description="a check failed: the body says which"),
    })
    def get(self, request: Request) -> Response:
        healthy, checks = health_check()
        return Response({"status": "ok" if healthy else "degraded", **checks}, status=200 if healthy else 503)
