"""REST API of spaces: which ones the caller may use, and as what."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.scoping import api_access
from agents.selectors import spaces_listed
from core.api_schema import error_responses


class SpaceSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    role = serializers.CharField(help_text="reader, writer, curator or admin")
    default = serializers.BooleanField(help_text="where the caller's writes go when a request names no space")


class SpaceListApi(APIView):
    @extend_schema(operation_id="spaces_list", responses={
        200: inline_serializer("SpaceList", {"results": SpaceSerializer(many=True)}), **error_responses()})
    def get(self, request: Request) -> Response:
        access = api_access(request)
        agent = getattr(request.user, "agent", None)
        default = agent.default_space_id if agent else None
        spaces = spaces_listed(ids=access.ids())
        return Response({"results": [
            {"slug": s.slug, "name": s.name, "description": s.description, "role": access.roles[s.pk],
             "default": s.pk == default}
            for s in spaces
        ]})
