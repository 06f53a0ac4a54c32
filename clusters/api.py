"""REST API for clusters and skills: agents read, curators trigger and publish. Each view
parses input, calls one service or selector and serializes the result; a missing cluster,
skill or version is a 404 from the project's exception handler."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    extend_schema,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import Role
from agents.scoping import SpaceScope, api_access, in_space, query_read_ids, read_ids
from clusters import selectors, services
from core.api_schema import SPACES_PARAM, error_responses, int_path
from core.fields import SpaceSlugField, StrictCharField, spaces_filter
from core.query import DeclaredQueryOnly


def _context(request: Request) -> dict[str, Any]:
    return {"slugs": api_access(request).slugs}


def _space_ids(request: Request) -> list[int]:
    """The spaces a read covers (``?spaces=``, ``SPACES_PARAM``)."""
    return query_read_ids(request)


class SkillSerializer(serializers.Serializer):
    slug = serializers.CharField()
    space = SpaceSlugField(source="space_id")
    name = serializers.CharField()
    description = serializers.CharField()
    status = serializers.CharField()
    version = serializers.IntegerField(source="current_version.version", allow_null=True, default=None)
    score = serializers.FloatField(source="current_version.score", allow_null=True, default=None)
    source_cluster = serializers.IntegerField(source="source_cluster_id", allow_null=True)
    updated_at = serializers.DateTimeField()


class SkillDetailSerializer(SkillSerializer):
    markdown = serializers.SerializerMethodField()
    memory_ids = serializers.SerializerMethodField()

    def get_markdown(self, skill: Any) -> str:  # a Skill (drf-spectacular reads the hints at run time)
        return skill.current_version.body if skill.current_version else ""

    def get_memory_ids(self, skill: Any) -> list[str]:
        return [str(m) for m in skill.current_version.memory_ids] if skill.current_version else []


class SkillVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    status = serializers.CharField()
    score = serializers.FloatField()
    reason = serializers.CharField()
    name = serializers.CharField()
    author = serializers.CharField()
    created_at = serializers.DateTimeField()
    quality = serializers.JSONField()
    verification = serializers.JSONField()
    markdown = serializers.CharField(source="body")
    memory_ids = serializers.SerializerMethodField()
    cluster = serializers.IntegerField(source="cluster_id", allow_null=True)

    def get_memory_ids(self, version: Any) -> list[str]:  # a SkillVersion
        return [str(m) for m in version.memory_ids]


class ClusterMemberSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="pk")
    memory_type = serializers.CharField()
    tier = serializers.CharField()
    hit_count = serializers.IntegerField()
    summary_l0 = serializers.CharField()


class CrystallizationSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    result = serializers.CharField()
    reason = serializers.CharField()
    members = serializers.IntegerField(help_text="the cluster's size at that attempt")


class ClusterSummarySerializer(serializers.Serializer):
    """What ``clusters.selectors.cluster_summary`` returns."""

    id = serializers.IntegerField()
    space = SpaceSlugField(source="space_id")
    topic = serializers.CharField()
    size = serializers.IntegerField()
    readiness = serializers.ChoiceField(choices=["ready", "recrystallize"], allow_null=True)
    threshold = serializers.IntegerField(help_text="members a cluster needs to be crystallized")
    skill = serializers.CharField(allow_null=True, help_text="the slug of the skill crystallized from it")
    superseded_skill_slugs = serializers.ListField(child=serializers.CharField())
    last_crystallization = CrystallizationSerializer(allow_null=True)


class ClusterDetailSerializer(ClusterSummarySerializer):
    members = ClusterMemberSerializer(many=True, help_text="active members, most hit first (at most 200)")


CLUSTER_ID = int_path("cluster_id", "the cluster's id")


class ClusterListApi(APIView):
    @extend_schema_serializer(component_name="ClusterListFilter")
    class FilterSerializer(serializers.Serializer):
        min_size = serializers.IntegerField(min_value=1, max_value=2**31 - 1, default=1)

    @extend_schema(operation_id="clusters_list", parameters=[FilterSerializer, SPACES_PARAM], responses={
        200: inline_serializer("ClusterList", {"results": ClusterSummarySerializer(many=True)}),
        **error_responses(400, 403)})
    def get(self, request: Request) -> Response:
        data = self.FilterSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        summaries = selectors.cluster_summaries(min_members=data.validated_data["min_size"], limit=500,
                                                space_ids=_space_ids(request))
        return Response({"results": ClusterSummarySerializer(summaries, many=True, context=_context(request)).data})


class ClusterDetailApi(APIView):
    @extend_schema(parameters=[SPACES_PARAM, CLUSTER_ID], responses={200: ClusterDetailSerializer,
                                                                  **error_responses(400, 403, 404)})
    def get(self, request: Request, cluster_id: int) -> Response:
        detail = selectors.cluster_detail(cluster_id=cluster_id, members_limit=200, space_ids=_space_ids(request))
        return Response(ClusterDetailSerializer(detail, context=_context(request)).data)


class ClusterCrystallizeApi(APIView):
    permission_classes = [IsAdminUser, DeclaredQueryOnly, SpaceScope]

    @extend_schema(request=None, parameters=[CLUSTER_ID], responses={
        200: inline_serializer("CrystallizeResult", {
            "cluster": ClusterSummarySerializer(),
            "version": SkillVersionSerializer(allow_null=True, help_text="the version written, if any"),
            "skill": serializers.CharField(allow_null=True, help_text="the cluster's skill's slug")}),
        **error_responses(403, 404)})
    def post(self, request: Request, cluster_id: int) -> Response:
        access = api_access(request)
        # A cluster the caller may not write to is missing, as one that never was.
        cluster = selectors.cluster_get(cluster_id=cluster_id, space_ids=access.ids(Role.WRITER))
        with in_space(cluster.space_id):  # type: ignore[arg-type]  # never null (stubs read a default as optional)
            outcome = services.cluster_crystallize_now(cluster_id=cluster_id)
        return Response({
            "cluster": ClusterSummarySerializer(outcome.cluster, context=_context(request)).data,
            "version": SkillVersionSerializer(outcome.version).data if outcome.version else None,
            "skill": outcome.skill,
        })


class SkillListApi(APIView):
    @extend_schema(operation_id="skills_list", parameters=[SPACES_PARAM], responses={200: inline_serializer("SkillList", {"results": SkillSerializer(many=True)}),
                              **error_responses(400, 403)})
    def get(self, request: Request) -> Response:
        skills = selectors.skills_listed(include_unpublished=request.user.is_staff, limit=500,
                                         space_ids=_space_ids(request))
        return Response({"results": SkillSerializer(skills, many=True, context=_context(request)).data})


class SkillDetailApi(APIView):
    @extend_schema(parameters=[SPACES_PARAM], responses={200: SkillDetailSerializer, **error_responses(400, 403, 404)})
    def get(self, request: Request, slug: str) -> Response:
        skill = selectors.skill_get(slug=slug, include_unpublished=request.user.is_staff,
                                    space_ids=_space_ids(request))
        return Response(SkillDetailSerializer(skill, context=_context(request)).data)


class SkillVersionsApi(APIView):
    @extend_schema(parameters=[SPACES_PARAM], responses={
        200: inline_serializer("SkillVersions", {"slug": serializers.CharField(),
                                                 "versions": SkillVersionSerializer(many=True)}),
        **error_responses(400, 403, 404)})
    def get(self, request: Request, slug: str) -> Response:
        skill = selectors.skill_get(slug=slug, include_unpublished=request.user.is_staff,
                                    space_ids=_space_ids(request))
        versions = selectors.skill_versions(skill=skill, curator=request.user.is_staff)
        return Response({"slug": skill.slug, "versions": SkillVersionSerializer(versions, many=True).data})


class SkillPublishApi(APIView):
    """Publish a version (a new one a curator approved, or an older one: a rollback)."""

    permission_classes = [IsAdminUser, DeclaredQueryOnly, SpaceScope]

    @extend_schema(request=None, parameters=[SPACES_PARAM, int_path("version", "the version's number")],
                   responses={200: SkillVersionSerializer, **error_responses(400, 403, 404)})
    def post(self, request: Request, slug: str, version: int) -> Response:
        writable = [i for i in _space_ids(request) if api_access(request).can(i, Role.WRITER)]
        row = selectors.skill_version_get(slug=slug, version=version, space_ids=writable)
        with in_space(row.space_id):  # type: ignore[arg-type]  # never null (stubs read a default as optional)
            published = services.skill_version_publish(version_id=row.pk)
        return Response(SkillVersionSerializer(published).data)


class SkillHitSerializer(SkillSerializer):
    similarity_score = serializers.FloatField()


class SkillSearchApi(APIView):
    @extend_schema_serializer(component_name="SkillSearchInput")
    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000)
        limit = serializers.IntegerField(min_value=1, max_value=50, default=5)
        spaces = spaces_filter()

    @extend_schema(request=InputSerializer, responses={
        200: inline_serializer("SkillSearchResults", {"results": SkillHitSerializer(many=True)}),
        **error_responses(400, 403, 413, 503)})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = dict(data.validated_data)
        # Popped before the call: ``**params`` is unpacked before the keyword arguments after it run.
        space_ids = read_ids(api_access(request), params.pop("spaces", None))
        hits = services.skills_search(**params, space_ids=space_ids)
        context = _context(request)
        return Response({"results": [{**SkillSerializer(skill, context=context).data,
                                      "similarity_score": round(similarity, 6)} for skill, similarity in hits]})
