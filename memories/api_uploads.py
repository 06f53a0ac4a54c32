"""What an upload answers (``memories.api.MemoryUploadApi``): one memory's outcome, a batch's
results, and the status code each stands for (201 stored, 200 merged, 202 held for review)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, status

from core.fields import SpaceSlugField


class UploadResultSerializer(serializers.Serializer):
    """One upload's outcome: the memory it created or merged into."""

    id = serializers.UUIDField(source="memory.pk")
    space = SpaceSlugField(source="memory.space_id")
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
    reasons = serializers.SerializerMethodField(
        help_text="status held: why the memory waits for a curator (what the poisoning screen found, or that its "
                  "writer's memories are reviewed), each {rule, label, field, start, end, text, severity}; "
                  "otherwise what the screen noted on a memory it served (flags), or []")

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_reasons(self, result: Any) -> list[dict]:
        if result.hold is not None:
            return list(result.hold.reasons)
        return list(result.memory.screen_flags or []) if not result.merged else []


def upload_status(result: Any) -> int:
    """What an upload answers: 202 held for review, 200 merged, 201 stored."""
    if result.held:
        return status.HTTP_202_ACCEPTED
    return status.HTTP_200_OK if result.merged else status.HTTP_201_CREATED


class ItemErrorSerializer(serializers.Serializer):
    """Why one item of a batch was refused: the API's error shape, ``field`` naming the item."""

    error = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(help_text="the refused item's field, e.g. memories[3].content")


class BatchItemSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="the item's position in the request's memories list")
    status = serializers.IntegerField(
        help_text="what a single upload of this item would have answered: 201 created, 200 merged, 202 held for "
                  "review, 400 refused")
    result = UploadResultSerializer(required=False, help_text="with status 201, 200 or 202: a single upload's response")
    error = ItemErrorSerializer(required=False, help_text="with status 400: why the item was refused")


class BatchResultSerializer(serializers.Serializer):
    results = BatchItemSerializer(many=True, help_text="one per item, in the request's order")
    created = serializers.IntegerField()
    merged = serializers.IntegerField()
    held = serializers.IntegerField(help_text="items held for a curator's review (status 202)")
    failed = serializers.IntegerField()


def _item_error(index: int, detail: Any) -> dict[str, Any]:
    """The first message in a serializer's (or a service's) error detail, as one item's error."""
    path = f"memories[{index}]"
    while isinstance(detail, (dict, list)) and detail:
        if isinstance(detail, dict):
            key, detail = next(iter(detail.items()))
            if key != "non_field_errors":
                path += f"[{key}]" if isinstance(key, int) else f".{key}"
        else:
            detail = detail[0]
    return {"error": "invalid", "message": f"{path}: {detail}", "field": path}
