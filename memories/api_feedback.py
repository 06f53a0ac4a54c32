"""``POST /api/memories/{id}/feedback``: an agent's vote on a memory a search or context call
served it (docs/api.md#feedback; the rules are ``memories.services.feedback``'s)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.scoping import api_access, api_agent, read_ids
from core.api_schema import error_responses
from core.fields import StrictCharField
from memories.models import Rating
from memories.services.feedback import MAX_REASON, memory_feedback_record


class MemoryFeedbackApi(APIView):
    @extend_schema_serializer(component_name="FeedbackInput")
    class InputSerializer(serializers.Serializer):
        rating = serializers.ChoiceField(choices=Rating.values, allow_null=True, help_text=(
            "helpful | not_helpful move its rank a little; wrong | outdated send it to the curators' review "
            "queue; null clears your vote"))
        reason = StrictCharField(max_length=MAX_REASON, required=False, allow_blank=True, default="")
        serve_id = StrictCharField(max_length=4000, help_text=(
            "the serve_id of the search or context call that served you this memory"))

    @extend_schema_serializer(component_name="FeedbackResult")
    class OutputSerializer(serializers.Serializer):
        id = serializers.UUIDField(source="memory_id")
        rating = serializers.ChoiceField(choices=Rating.values, allow_null=True)
        feedback = serializers.IntegerField(help_text="the memory's net vote (helpful minus not helpful), capped")
        reported = serializers.BooleanField(help_text="an open report on it waits in the review queue")
        agents_reporting = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **error_responses(400, 403, 404)})
    def post(self, request: Request, memory_id: Any) -> Response:
        agent = api_agent(request)
        if agent is None:
            raise PermissionDenied("Only agents vote on what they were served.")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        outcome = memory_feedback_record(
            memory_id=memory_id, agent=agent, rating=params["rating"], reason=params.get("reason") or "",
            serve_id=params["serve_id"], space_ids=read_ids(api_access(request), None))
        return Response(self.OutputSerializer(outcome).data)
