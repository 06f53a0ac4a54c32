"""REST API of the ingestion service: each view parses input, calls one service or selector and
serializes the result; ingestion errors become responses in the project's exception handler."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import renderers, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.scoping import (
    SpaceScope,
    api_access,
    api_write_target,
    in_space,
    query_read_ids,
    read_ids,
)
from core import errors
from core.api_schema import IDEMPOTENCY_KEY, SPACES_PARAM, ErrorSerializer, error_responses
from core.fields import StrictCharField, space_slug_field
from core.idempotency import IdempotentPost
from core.parsers import JSONBodyParser
from core.query import DeclaredQueryOnly
from ingestion import selectors, services, training
from ingestion.formats import ACCEPTED
from ingestion.services import IngestError
from memories.api import UploadResultSerializer


class FileResultSerializer(serializers.Serializer):
    """One file of an ingest request, as ``FileResult.as_dict`` gives it."""

    name = serializers.CharField()
    session_id = serializers.IntegerField(allow_null=True)
    status = serializers.ChoiceField(choices=["new", "changed", "unchanged", "skipped"])
    lines = serializers.IntegerField()
    messages = serializers.IntegerField()
    malformed = serializers.DictField(child=serializers.IntegerField(), help_text="lines not read, by reason")
    reason = serializers.CharField(required=False, help_text="why a file was skipped")


class JobErrorSerializer(serializers.Serializer):
    stage = serializers.CharField(help_text="segmentation, or segment <n>")
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    parked = serializers.BooleanField(required=False)


class JobQuietSegmentSerializer(serializers.Serializer):
    segment_id = serializers.IntegerField()
    index = serializers.IntegerField()
    topic = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    reason = serializers.CharField(help_text="why the segment gave no memory (the first of its notes)")


class JobFileSerializer(serializers.Serializer):
    """A file's progress; the counts appear once its session is stored."""

    name = serializers.CharField()
    status = serializers.CharField()
    session_id = serializers.IntegerField(allow_null=True)
    segmentation = serializers.CharField(required=False)
    segments = serializers.IntegerField(required=False)
    scored = serializers.IntegerField(required=False)
    extracted = serializers.IntegerField(required=False)
    memories = serializers.IntegerField(required=False)
    failed = serializers.IntegerField(required=False)
    parked = serializers.IntegerField(required=False)
    # A field named like a serializer attribute: DRF takes it out of the class, mypy cannot know.
    errors = JobErrorSerializer(many=True, required=False)  # type: ignore[assignment]
    without_memory = JobQuietSegmentSerializer(
        many=True, required=False, help_text="finished segments that gave no memory, and why (at most 20)")


class JobProgressSerializer(serializers.Serializer):
    """What ``ingestion.selectors.job_progress`` returns."""

    job_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    done = serializers.BooleanField()
    segments = serializers.IntegerField()
    scored = serializers.IntegerField()
    extracted = serializers.IntegerField()
    memories = serializers.IntegerField()
    errors = serializers.IntegerField()  # type: ignore[assignment]
    parked = serializers.IntegerField()
    files = JobFileSerializer(many=True)


class IngestApi(IdempotentPost, APIView):
    """Upload session files (multipart ``files``, optional parallel ``names``; ``.jsonl``, ``.json``,
    ``.traj`` or ``.md``, the format read from the content) or name
    server paths inside ``ULTRON_INGEST_ROOTS`` (JSON ``{paths}``). Returns at once."""

    parser_classes = [MultiPartParser, JSONBodyParser]

    @extend_schema_serializer(component_name="IngestPaths")
    class PathsSerializer(serializers.Serializer):
        paths = serializers.ListField(child=StrictCharField(max_length=4096), min_length=1, max_length=1000)
        agent = StrictCharField(required=False, max_length=100)
        space = space_slug_field(required=False,
                                 help_text="the space to ingest into (default: the agent's default space)")

    @extend_schema_serializer(component_name="IngestFiles")
    class FilesSerializer(serializers.Serializer):
        """The multipart form (read by the view itself, file by file); for the schema."""

        files = serializers.ListField(child=serializers.FileField(), min_length=1)
        names = serializers.ListField(child=serializers.CharField(), required=False,
                                      help_text="one name per file, in the same order")
        agent = serializers.CharField(required=False, help_text="curators: the agent to ingest for")
        space = space_slug_field(required=False, help_text="the space to ingest into (default: the agent's "
                                                           "default space)")

    @extend_schema(
        request={"multipart/form-data": FilesSerializer, "application/json": PathsSerializer},
        responses={202: inline_serializer("IngestAccepted", {
            "total_files": serializers.IntegerField(), "files": FileResultSerializer(many=True),
            "job_id": serializers.UUIDField()}), **error_responses(400, 403, 404, 409, 413, 422)},
        parameters=[IDEMPOTENCY_KEY],
    )
    def post(self, request: Request) -> Response:
        # Refused before the body is read: a client's 2 GB upload must not be spooled first.
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > settings.ULTRON_INGEST_MAX_REQUEST_BYTES:
            raise IngestError(f"the request is larger than {settings.ULTRON_INGEST_MAX_REQUEST_BYTES} bytes",
                              code=errors.TOO_LARGE)
        if request.content_type.startswith("multipart/"):
            job, results = self._files(request)
        else:
            job, results = self._paths(request)
        return Response(
            {"total_files": len(results), "files": [r.as_dict() for r in results], "job_id": str(job.pk)},
            status=status.HTTP_202_ACCEPTED,
        )

    def _files(self, request: Request):
        uploads = request.FILES.getlist("files") + services.text_uploads(request.POST.getlist("files"))
        if not uploads:
            raise ValidationError({"files": [f"send one or more session files ({ACCEPTED}) in the 'files' field"]})
        names = request.data.getlist("names") if hasattr(request.data, "getlist") else []
        if names and len(names) != len(uploads):
            raise ValidationError({"names": ["give one name per file, in the same order"]})
        # The name is the session's identity: without ``names``, two uploads called run.jsonl are one session
        # (flow.md#session-files).
        named = [(names[index] if names else upload.name, upload) for index, upload in enumerate(uploads)]
        space = request.data.get("space")
        if space is not None:  # as the form's schema declares it (the view reads the form itself)
            try:
                space = space_slug_field().run_validation(space)
            except ValidationError as exc:
                raise ValidationError({"space": exc.detail}) from exc
        target = api_write_target(request, space)[1]
        with in_space(target.pk):  # the sessions, archives and job belong to that space only
            return services.uploads_ingest(user=request.user, agent_name=request.data.get("agent"), uploads=named,
                                           space=target)

    def _paths(self, request: Request):
        data = self.PathsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        target = api_write_target(request, data.validated_data.get("space"))[1]
        with in_space(target.pk):
            return services.paths_ingest(user=request.user, agent_name=data.validated_data.get("agent"),
                                         paths=data.validated_data["paths"], space=target)


class IngestJobApi(APIView):
    @extend_schema(responses={200: JobProgressSerializer, **error_responses(404)})
    def get(self, request: Request, job_id) -> Response:
        job = selectors.job_visible(job_id=job_id, user=request.user)
        if job is None or job.space_id not in read_ids(api_access(request), None):
            raise NotFound("no such ingest job")
        return Response(selectors.job_progress(job=job))


class IngestTextApi(IdempotentPost, APIView):
    @extend_schema_serializer(component_name="IngestTextInput")
    class InputSerializer(serializers.Serializer):
        # A backstop only: the service refuses text over ULTRON_INGEST_MAX_TEXT_CHARS with a 413 of its own.
        text = StrictCharField(max_length=10_000_000, trim_whitespace=False)
        space = space_slug_field(required=False,
                                 help_text="the space to store the memories in (default: the agent's default space)")

    @extend_schema_serializer(component_name="IngestTextMemory")
    class MemorySerializer(UploadResultSerializer):
        summary_l0 = serializers.CharField(source="memory.summary_l0")

    ResultSerializer = inline_serializer("IngestTextResult", {
        "extractor": serializers.CharField(help_text="the LLM's name, or offline"),
        "memories": MemorySerializer(many=True)})

    @extend_schema(request=InputSerializer, responses={
        201: OpenApiResponse(ResultSerializer, description="at least one new memory"),
        200: OpenApiResponse(ResultSerializer, description="every memory merged into one already stored"),
        **error_responses(400, 403, 409, 413, 422, 503)}, parameters=[IDEMPOTENCY_KEY])
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        target = api_write_target(request, data.validated_data.get("space"))[1]
        with in_space(target.pk):
            result = services.text_ingest(agent=getattr(request.user, "agent", None), text=data.validated_data["text"],
                                          space=target)
        created = any(not u.merged for u in result.uploads)
        memories = self.MemorySerializer(result.uploads, many=True, context={"slugs": api_access(request).slugs}).data
        return Response({"extractor": result.extractor, "memories": memories},
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class JsonLinesRenderer(renderers.BaseRenderer):
    """``application/x-ndjson``: what the export streams; an error is one JSON line too."""

    media_type = "application/x-ndjson"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return (json.dumps(data, ensure_ascii=False) + "\n").encode()


class TrajectoryExportApi(APIView):
    """Training data (staff only): task segments scoring at least ``min_score`` (default
    ``ULTRON_SFT_MIN_SCORE``) as chat fine-tuning JSONL, one ``{"messages": [...]}`` per segment,
    redacted, streamed as it is read."""

    permission_classes = [IsAdminUser, DeclaredQueryOnly, SpaceScope]
    renderer_classes = [renderers.JSONRenderer, JsonLinesRenderer]

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        """An unknown ``?format=`` is bad input naming the parameter (DRF answers 404)."""
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:
            if force:
                raise
            raise ValidationError({"format": ["use json or jsonl"]}) from None

    @extend_schema_serializer(component_name="TrajectoryExportFilter")
    class FilterSerializer(serializers.Serializer):
        min_score = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
        task_type = serializers.ChoiceField(choices=training.TASK_TYPES, required=False)
        since = serializers.DateTimeField(required=False, help_text="segments created at or after this "
                                                                     "(ISO 8601 date or date-time; UTC if no zone)")

    @extend_schema(
        parameters=[FilterSerializer, SPACES_PARAM],
        responses={(200, "application/x-ndjson"): OpenApiResponse(
            OpenApiTypes.STR, description='one JSON object per line: {"messages": [...]} in the OpenAI chat '
                                          "fine-tuning shape"),
                   # An error is JSON, or one JSON line when the client asked for ?format=jsonl.
                   **{(code, media): OpenApiResponse(ErrorSerializer, description=response.description)
                      for code, response in error_responses(400, 403).items()
                      for media in ("application/json", "application/x-ndjson")}},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        data = self.FilterSerializer(data=request.query_params.dict())
        data.is_valid(raise_exception=True)
        params = data.validated_data
        lines = training.sft_lines(
            min_score=params.get("min_score", settings.ULTRON_SFT_MIN_SCORE),
            task_type=params.get("task_type"), since=params.get("since"),
            space_ids=query_read_ids(request),
        )
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="training.jsonl"'
        return response
