"""Downloading a skill to install it (docs/api.md#download-a-skill): its SKILL.md alone, or the
folder with the memories it cites as a zip. Authenticated like every API call; agents get
published skills, curators also the newest version of a skill never published."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.views import APIView

from agents.scoping import api_access, query_read_ids
from clusters import selectors
from clusters.knowledge_file import knowledge_markdown
from clusters.skill_files import skill_package, skill_version_for_download
from core.api_schema import SPACES_PARAM, error_responses

if TYPE_CHECKING:  # annotations only: views hold no model classes
    from clusters.models import SkillVersion


class _Download(APIView):
    # A file answers whatever the client says it accepts (curl -H 'Accept: text/markdown');
    # errors keep the API's JSON shape.
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)

    def version(self, request: Request, slug: str) -> SkillVersion:
        staff = bool(request.user and request.user.is_staff)
        skill = selectors.skill_get(slug=slug, include_unpublished=staff,
                                    space_ids=query_read_ids(request))
        version = skill_version_for_download(skill, include_unpublished=staff)
        if version is None:
            raise NotFound(f"skill {slug!r} has no version to download")
        return version


_FILE: dict[Any, OpenApiResponse] = {(200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR,
                                                                             description="SKILL.md")}
_PACKAGE: dict[Any, OpenApiResponse] = {(200, "application/zip"): OpenApiResponse(
    OpenApiTypes.BINARY, description="<slug>/SKILL.md and references")}


class SkillFileApi(_Download):
    @extend_schema(parameters=[SPACES_PARAM], responses={**_FILE, **error_responses(400, 403, 404)})
    def get(self, request: Request, slug: str) -> HttpResponse:
        version = self.version(request, slug)
        response = HttpResponse(version.body, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="SKILL.md"'
        return response


class SkillPackageApi(_Download):
    @extend_schema(parameters=[SPACES_PARAM], responses={**_PACKAGE, **error_responses(400, 403, 404)})
    def get(self, request: Request, slug: str) -> HttpResponse:
        version = self.version(request, slug)
        response = HttpResponse(skill_package(version), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{version.skill.slug}.zip"'
        return response


_MEMORY_FILE: dict[Any, OpenApiResponse] = {(200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR,
                                                                                    description="MEMORY.md")}


class MemoryFileApi(_Download):
    """MEMORY.md: the current knowledge of the spaces read, as one Markdown file (docs/api.md#memorymd)."""

    @extend_schema(operation_id="memories_export_md", parameters=[SPACES_PARAM],
                   responses={**_MEMORY_FILE, **error_responses(400, 403)})
    def get(self, request: Request) -> HttpResponse:
        ids = query_read_ids(request)
        slugs = api_access(request).slugs
        text = knowledge_markdown(space_ids=ids, space_slugs=sorted(slugs[i] for i in ids if i in slugs),
                                  skill_url=lambda slug: request.build_absolute_uri(reverse("skill-file", args=[slug])))
        response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="MEMORY.md"'
        return response
