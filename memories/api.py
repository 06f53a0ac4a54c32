"""REST API of the memory service: each view parses input, calls one service or selector and
serializes the result. Service errors (bad input, a mismatched embedding space) are turned
into responses by the project's one exception handler."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import selectors, services
from memories.fields import StrictCharField, tags_field
from memories.models import MemoryType, Status, Tier


def _agent(request: Request):
    return getattr(request.user, "agent", None)


class UploadResultSerializer(serializers.Serializer):
    """One upload's outcome: the memory it created or merged into."""

    id = serializers.UUIDField(source="memory.pk")
    memory_type = serializers.CharField(source="memory.memory_type")
    tier = serializers.CharField(source="memory.tier")
    status = serializers.CharField(source="memory.status")
    hit_count = serializers.IntegerField(source="memory.hit_count")
    merged = serializers.BooleanField()
    merge_pending = serializers.BooleanField(source="memory.merge_pending")
    similarity_score = serializers.FloatField(source="similarity", allow_null=True)
    candidate_of = serializers.UUIDField(
        allow_null=True,
        help_text="A new memory that may duplicate another one (not sure enough to merge): that "
                  "memory's id. The pair waits for the LLM's or a curator's judgement.")


class MemoryUploadApi(APIView):
    class InputSerializer(serializers.Serializer):
        content = StrictCharField(max_length=settings.ULTRON_MAX_CONTENT_CHARS)
        # A field named like a serializer attribute: DRF takes it out of the class, mypy cannot know.
        context = StrictCharField(  # type: ignore[assignment]
            max_length=settings.ULTRON_MAX_FIELD_CHARS, required=False, allow_blank=True)
        resolution = StrictCharField(max_length=settings.ULTRON_MAX_FIELD_CHARS, required=False, allow_blank=True)
        tags = tags_field()

    OutputSerializer = UploadResultSerializer

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 200: OutputSerializer})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.memory_upload(agent=_agent(request), **data.validated_data)
        return Response(self.OutputSerializer(result).data,
                        status=status.HTTP_200_OK if result.merged else status.HTTP_201_CREATED)


class SearchHitSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    memory_type = serializers.CharField()
    tier = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    hit_count = serializers.IntegerField()
    summary_l0 = serializers.CharField()
    similarity_score = serializers.SerializerMethodField()
    score = serializers.SerializerMethodField()
    overview_l1 = serializers.CharField(required=False)
    context = serializers.CharField(required=False)  # type: ignore[assignment]

    def __init__(self, *args, detail_level: str = "l1", **kwargs):
        super().__init__(*args, **kwargs)
        if detail_level != "l1":
            del self.fields["overview_l1"], self.fields["context"]

    def get_similarity_score(self, hit: selectors.SearchHit) -> float:
        return round(hit.similarity, 6)

    def get_score(self, hit: selectors.SearchHit) -> float:
        return round(hit.score, 6)


class MemorySearchApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000)
        detail_level = serializers.ChoiceField(choices=["l0", "l1"], default="l1")
        limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
        memory_type = serializers.ChoiceField(choices=MemoryType.values, required=False)
        tier = serializers.ChoiceField(choices=Tier.values, required=False)
        tags = tags_field()
        min_score = serializers.FloatField(required=False, default=0.0, min_value=-10.0, max_value=10.0)
        mode = serializers.ChoiceField(choices=list(selectors.SEARCH_MODES), required=False)

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = dict(data.validated_data)
        detail_level = params.pop("detail_level")
        outcome = services.memories_search(**params)
        results = SearchHitSerializer(outcome.hits, many=True, detail_level=detail_level).data
        return Response({"results": results, "count": len(results), "mode": outcome.mode})


class MemoryRecordSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="pk")
    content = serializers.CharField()
    context = serializers.CharField()  # type: ignore[assignment]
    resolution = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    memory_type = serializers.CharField()
    tier = serializers.CharField()
    status = serializers.CharField()
    hit_count = serializers.IntegerField()
    last_hit_at = serializers.DateTimeField(allow_null=True)
    summary_l0 = serializers.CharField()
    overview_l1 = serializers.CharField()
    merge_pending = serializers.BooleanField()
    redactions = serializers.DictField(source="redaction_counts", child=serializers.IntegerField())
    agent = serializers.CharField(source="agent.name", allow_null=True, default=None)
    source = serializers.CharField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MemoryDetailsApi(APIView):
    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(child=serializers.UUIDField(), min_length=1, max_length=100)

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        memories, missing = services.memories_read(ids=data.validated_data["ids"])
        return Response({"memories": MemoryRecordSerializer(memories, many=True).data,
                         "missing": [str(i) for i in missing]})


class MemoryStatsApi(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.memory_stats())


class MemoryListApi(APIView):
    class FilterSerializer(serializers.Serializer):
        memory_type = serializers.ChoiceField(choices=MemoryType.values, required=False)
        tier = serializers.ChoiceField(choices=Tier.values, required=False)
        status = serializers.ChoiceField(choices=Status.values, required=False, default=Status.ACTIVE)
        tag = StrictCharField(required=False, max_length=settings.ULTRON_MAX_TAG_CHARS)
        limit = serializers.IntegerField(min_value=1, max_value=200, default=50)
        offset = serializers.IntegerField(min_value=0, default=0)

    class OutputSerializer(serializers.Serializer):
        id = serializers.UUIDField(source="pk")
        memory_type = serializers.CharField()
        tier = serializers.CharField()
        status = serializers.CharField()
        tags = serializers.ListField(child=serializers.CharField())
        hit_count = serializers.IntegerField()
        summary_l0 = serializers.CharField()
        created_at = serializers.DateTimeField()

    @extend_schema(parameters=[FilterSerializer])
    def get(self, request: Request) -> Response:
        data = self.FilterSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        if params["status"] != Status.ACTIVE and not request.user.is_staff:
            raise ValidationError({"status": ["only curators can list archived memories"]})
        queryset = selectors.memory_list(
            memory_type=params.get("memory_type"), tier=params.get("tier"),
            status=params["status"], tag=params.get("tag"),
        )
        page = queryset[params["offset"] : params["offset"] + params["limit"]]
        return Response({"count": queryset.count(), "results": self.OutputSerializer(page, many=True).data})


class ContextApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000, required=False, allow_blank=True)
        token_budget = serializers.IntegerField(min_value=50, max_value=32000, default=2000)
        memory_type = serializers.ChoiceField(choices=MemoryType.values, required=False)
        tags = tags_field()

    class BlockSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        section = serializers.CharField()
        tokens = serializers.IntegerField()

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        assembled = services.context_build(
            query=params.get("query") or "", token_budget=params["token_budget"],
            memory_type=params.get("memory_type"), tags=params.get("tags"),
        )
        return Response({
            "context": assembled.text,
            "tokens": assembled.tokens,
            "token_budget": params["token_budget"],
            "memories": self.BlockSerializer(assembled.blocks, many=True).data,
        })
