"""REST API for clusters and skills: agents read, curators trigger and publish."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters import selectors, services
from clusters.models import KnowledgeCluster, Skill, SkillVersion
from memories.api import StrictCharField, _service_call
from memories.redaction import redact
from memories.services import embed_texts


def _skill(skill: Skill, *, body: bool) -> dict:
    version = skill.current_version
    data = {
        "slug": skill.slug, "name": skill.name, "description": skill.description, "status": skill.status,
        "version": version.version if version else None, "score": version.score if version else None,
        "source_cluster": skill.source_cluster_id, "updated_at": skill.updated_at,
    }
    if body:
        data["markdown"] = version.body if version else ""
        data["memory_ids"] = [str(m) for m in version.memory_ids] if version else []
    return data


def _version(version: SkillVersion) -> dict:
    return {
        "version": version.version, "status": version.status, "score": version.score, "reason": version.reason,
        "name": version.name, "author": version.author, "created_at": version.created_at,
        "quality": version.quality, "verification": version.verification, "markdown": version.body,
        "memory_ids": [str(m) for m in version.memory_ids], "cluster": version.cluster_id,
    }


class ClusterListApi(APIView):
    def get(self, request: Request) -> Response:
        clusters = selectors.cluster_list(min_members=int(request.query_params.get("min_size", 1) or 1))[:500]
        return Response({"results": [selectors.cluster_summary(c) for c in clusters]})


class ClusterDetailApi(APIView):
    def get(self, request: Request, cluster_id: int) -> Response:
        cluster = get_object_or_404(KnowledgeCluster.objects.select_related("skill"), pk=cluster_id)
        members = selectors.cluster_members(cluster=cluster)[:200]
        return Response({
            **selectors.cluster_summary(cluster),
            "members": [{"id": str(m.pk), "memory_type": m.memory_type, "tier": m.tier, "hit_count": m.hit_count,
                         "summary_l0": m.summary_l0} for m in members],
        })


class ClusterCrystallizeApi(APIView):
    permission_classes = [IsAdminUser]

    def post(self, request: Request, cluster_id: int) -> Response:
        get_object_or_404(KnowledgeCluster, pk=cluster_id)
        version = services.cluster_crystallize(cluster_id=cluster_id)
        cluster = KnowledgeCluster.objects.select_related("skill").get(pk=cluster_id)
        return Response({
            "cluster": selectors.cluster_summary(cluster),
            "version": _version(version) if version else None,
            "skill": cluster.skill.slug if cluster.skill_id else None,
        })


class SkillListApi(APIView):
    def get(self, request: Request) -> Response:
        skills = selectors.skill_list(include_unpublished=request.user.is_staff)[:500]
        return Response({"results": [_skill(s, body=False) for s in skills]})


class SkillDetailApi(APIView):
    def get(self, request: Request, slug: str) -> Response:
        skill = get_object_or_404(selectors.skill_list(include_unpublished=request.user.is_staff), slug=slug)
        return Response(_skill(skill, body=True))


class SkillVersionsApi(APIView):
    def get(self, request: Request, slug: str) -> Response:
        skill = get_object_or_404(selectors.skill_list(include_unpublished=request.user.is_staff), slug=slug)
        return Response({"slug": skill.slug, "versions": [_version(v) for v in skill.versions.order_by("-version")]})


class SkillPublishApi(APIView):
    """Publish a version (a new one a curator approved, or an older one: a rollback)."""

    permission_classes = [IsAdminUser]

    def post(self, request: Request, slug: str, version: int) -> Response:
        row = get_object_or_404(SkillVersion, skill__slug=slug, version=version)
        services.skill_version_publish(version_id=row.pk)
        return Response(_version(SkillVersion.objects.get(pk=row.pk)))


class SkillSearchApi(APIView):
    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000)
        limit = serializers.IntegerField(min_value=1, max_value=50, default=5)

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        vector = _service_call(embed_texts, texts=[redact(data.validated_data["query"]).text])[0]
        hits = selectors.skill_search(vector=vector, limit=data.validated_data["limit"])
        return Response({"results": [{**_skill(s, body=False), "similarity_score": round(sim, 6)} for s, sim in hits]})
