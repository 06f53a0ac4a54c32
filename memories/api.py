"""REST API of the memory service: one view per operation, validating and calling services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import selectors, services
from memories.models import Memory, MemoryType, Status, Tier
from memories.redaction import redact
from memories.text import normalise_tags


class EmbeddingUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "embedding_unavailable"
    default_detail = "The embedding model is unavailable."


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans and other non-strings instead of coercing."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            raise ValidationError("must not contain NUL characters")
        return super().to_internal_value(data)


def _agent(request: Request):
    return getattr(request.user, "agent", None)


def _service_call(func, **kwargs):
    try:
        return func(**kwargs)
    except services.MemoryInputError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    except services.EmbeddingSpaceMismatch as exc:
        raise EmbeddingUnavailable(str(exc)) from None


def _tags_field() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=settings.ULTRON_MAX_TAG_CHARS, allow_blank=True),
        required=False,
        max_length=100,
    )


class MemoryUploadApi(APIView):
    class InputSerializer(serializers.Serializer):
        content = StrictCharField(max_length=settings.ULTRON_MAX_CONTENT_CHARS)
        context = StrictCharField(max_length=settings.ULTRON_MAX_FIELD_CHARS, required=False, allow_blank=True)
        resolution = StrictCharField(max_length=settings.ULTRON_MAX_FIELD_CHARS, required=False, allow_blank=True)
        tags = _tags_field()

    class OutputSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        memory_type = serializers.CharField()
        tier = serializers.CharField()
        status = serializers.CharField()
        hit_count = serializers.IntegerField()
        merged = serializers.BooleanField()
        merge_pending = serializers.BooleanField()
        similarity_score = serializers.FloatField(allow_null=True)

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 200: OutputSerializer})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = _service_call(services.memory_upload, agent=_agent(request), **data.validated_data)
        memory = result.memory
        body = self.OutputSerializer(
            {
                "id": memory.pk,
                "memory_type": memory.memory_type,
                "tier": memory.tier,
                "status": memory.status,
                "hit_count": memory.hit_count,
                "merged": result.merged,
                "merge_pending": memory.merge_pending,
                "similarity_score": result.similarity,
            }
        ).data
        return Response(body, status=status.HTTP_200_OK if result.merged else status.HTTP_201_CREATED)


class MemorySearchApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000)
        detail_level = serializers.ChoiceField(choices=["l0", "l1"], default="l1")
        limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
        memory_type = serializers.ChoiceField(choices=MemoryType.values, required=False)
        tier = serializers.ChoiceField(choices=Tier.values, required=False)
        tags = _tags_field()
        min_score = serializers.FloatField(required=False, default=0.0, min_value=-10.0, max_value=10.0)
        mode = serializers.ChoiceField(choices=list(selectors.SEARCH_MODES), required=False)

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        query = redact(params["query"]).text
        vector = _service_call(services.embed_texts, texts=[query])[0]
        tags = normalise_tags(
            params.get("tags") or [], max_tags=settings.ULTRON_MAX_TAGS, max_chars=settings.ULTRON_MAX_TAG_CHARS
        )
        hits = selectors.memory_search(
            vector=vector,
            limit=params["limit"],
            memory_type=params.get("memory_type"),
            tier=params.get("tier"),
            tags=tags,
            min_score=params["min_score"],
            mode=params.get("mode") or settings.ULTRON_SEARCH_MODE,
            text=query,
        )
        services.memory_hits_record(ids=[hit.id for hit in hits], amount=services.SEARCH_HIT)
        detail_l1 = params["detail_level"] == "l1"
        results = []
        for hit in hits:
            item: dict[str, Any] = {
                "id": str(hit.id),
                "memory_type": hit.memory_type,
                "tier": hit.tier,
                "tags": hit.tags,
                "hit_count": hit.hit_count + services.SEARCH_HIT,
                "summary_l0": hit.summary_l0,
                "similarity_score": round(hit.similarity, 6),
                "score": round(hit.score, 6),
            }
            if detail_l1:
                item["overview_l1"] = hit.overview_l1
                item["context"] = hit.context
            results.append(item)
        return Response({"results": results, "count": len(results),
                         "mode": params.get("mode") or settings.ULTRON_SEARCH_MODE})


def memory_full(memory: Memory) -> dict[str, Any]:
    return {
        "id": str(memory.pk),
        "content": memory.content,
        "context": memory.context,
        "resolution": memory.resolution,
        "tags": memory.tags,
        "memory_type": memory.memory_type,
        "tier": memory.tier,
        "status": memory.status,
        "hit_count": memory.hit_count,
        "last_hit_at": memory.last_hit_at,
        "summary_l0": memory.summary_l0,
        "overview_l1": memory.overview_l1,
        "merge_pending": memory.merge_pending,
        "redactions": memory.redaction_counts,
        "agent": memory.agent.name if memory.agent else None,
        "source": memory.source,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }


class MemoryDetailsApi(APIView):
    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(child=serializers.UUIDField(), min_length=1, max_length=100)

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ids = list(dict.fromkeys(data.validated_data["ids"]))
        memories = selectors.memory_details(ids=ids)
        services.memory_hits_record(ids=[m.pk for m in memories], amount=services.DETAILS_HIT)
        found = {m.pk for m in memories}
        out = []
        for memory in memories:
            record = memory_full(memory)
            record["hit_count"] += services.DETAILS_HIT
            out.append(record)
        return Response({"memories": out, "missing": [str(i) for i in ids if i not in found]})


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
        total = queryset.count()
        page = queryset[params["offset"] : params["offset"] + params["limit"]]
        return Response({
            "count": total,
            "results": [
                {
                    "id": str(m.pk), "memory_type": m.memory_type, "tier": m.tier, "status": m.status,
                    "tags": m.tags, "hit_count": m.hit_count, "summary_l0": m.summary_l0,
                    "created_at": m.created_at,
                }
                for m in page
            ],
        })


class ContextApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000, required=False, allow_blank=True)
        token_budget = serializers.IntegerField(min_value=50, max_value=32000, default=2000)
        memory_type = serializers.ChoiceField(choices=MemoryType.values, required=False)
        tags = _tags_field()

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        query = (params.get("query") or "").strip()
        vector = _service_call(services.embed_texts, texts=[redact(query).text])[0] if query else None
        tags = normalise_tags(
            params.get("tags") or [], max_tags=settings.ULTRON_MAX_TAGS, max_chars=settings.ULTRON_MAX_TAG_CHARS
        )
        assembled = selectors.context_assemble(
            vector=vector, token_budget=params["token_budget"],
            memory_type=params.get("memory_type"), tags=tags, text=redact(query).text,
        )
        # Only memories chosen for this query count as hits: HOT ones are included for every
        # caller, and counting them would keep them HOT forever.
        services.memory_hits_record(
            ids=[b.id for b in assembled.blocks if b.section == "relevant"], amount=services.SEARCH_HIT
        )
        return Response({
            "context": assembled.text,
            "tokens": assembled.tokens,
            "token_budget": params["token_budget"],
            "memories": [{"id": str(b.id), "section": b.section, "tokens": b.tokens} for b in assembled.blocks],
        })
