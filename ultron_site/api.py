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


class WarmCheckSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=["cold", "warming", "ready", "failed"],
                                    help_text="whether this process has loaded its models and engines")
    error = serializers.CharField(required=False, help_text="why loading them failed")


class ReplicaCheckSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="replica_1, replica_2, … in the order DATABASE_REPLICA_URL lists them")
    answers = serializers.BooleanField()
    lag_seconds = serializers.FloatField(allow_null=True, help_text="how far its data is behind the primary's")
    in_use = serializers.BooleanField(help_text="whether searches read from it now")
    error = serializers.CharField(required=False, help_text="why searches do not read from it")


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ok", "warming", "degraded"],
        help_text="ok: ready to serve; warming: the models are still loading (retry in a few seconds); "
                  "degraded: a check failed")
    database = DatabaseCheckSerializer()
    embedding_model = EmbeddingCheckSerializer()
    llm = LlmCheckSerializer()
    warm = WarmCheckSerializer()
    replicas = ReplicaCheckSerializer(many=True, required=False, help_text=(
        "each configured read replica (absent without DATABASE_REPLICA_URL); a replica that lags or does not "
        "answer leaves the status as it is: its reads go to the primary"))


class HealthApi(APIView):
    """Liveness and readiness: the database (with pgvector) and the embedding model."""

    # Open to anyone and never throttled: a load balancer or a monitor polls it without a token.
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    @extend_schema(responses={
        200: OpenApiResponse(HealthSerializer, description="every check passed"),
        503: OpenApiResponse(HealthSerializer, description="still warming up, or a check failed: the body says which"),
    })
    def get(self, request: Request) -> Response:
        status, checks = health_check()
        return Response({"status": status, **checks}, status=200 if status == "ok" else 503)
