"""REST API of the ingestion service: each view parses input, calls one service or selector and
serializes the result; ingestion errors become responses in the project's exception handler."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion import selectors, services, training
from ingestion.formats import ACCEPTED, accepted_name
from ingestion.services import IngestError
from memories.api import UploadResultSerializer
from memories.fields import StrictCharField


class IngestApi(APIView):
    """Upload session files (multipart ``files``, optional parallel ``names``; ``.jsonl``, ``.json``,
    ``.traj`` or ``.md``, the format read from the content) or name
    server paths inside ``ULTRON_INGEST_ROOTS`` (JSON ``{paths}``). Returns at once."""

    parser_classes = [MultiPartParser, JSONParser]

    class PathsSerializer(serializers.Serializer):
        paths = serializers.ListField(child=StrictCharField(max_length=4096), min_length=1, max_length=1000)
        agent = StrictCharField(required=False, max_length=100)

    def post(self, request: Request) -> Response:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > settings.ULTRON_INGEST_MAX_REQUEST_BYTES:
            raise IngestError(f"the request is larger than {settings.ULTRON_INGEST_MAX_REQUEST_BYTES} bytes",
                              status=413)
        if request.content_type.startswith("multipart/"):
            job, results = self._files(request)
        else:
            job, results = self._paths(request)
        return Response(
            {"total_files": len(results), "files": [r.as_dict() for r in results], "job_id": str(job.pk)},
            status=status.HTTP_202_ACCEPTED,
        )

    def _files(self, request: Request):
        uploads = request.FILES.getlist("files")
        if not uploads:
            raise ValidationError({"files": [f"send one or more session files ({ACCEPTED}) in the 'files' field"]})
        names = request.data.getlist("names") if hasattr(request.data, "getlist") else []
        if names and len(names) != len(uploads):
            raise ValidationError({"names": ["give one name per file, in the same order"]})
        agent = services.acting_agent(user=request.user, name=request.data.get("agent"))
        files = []
        for index, upload in enumerate(uploads):
            name = names[index] if names else upload.name
            if upload.size > settings.ULTRON_INGEST_MAX_FILE_BYTES:
                raise IngestError(f"{name}: larger than {settings.ULTRON_INGEST_MAX_FILE_BYTES} bytes", status=413)
            if not accepted_name(name):
                raise ValidationError({"files": [f"{name}: only {ACCEPTED} session files are ingested"]})
            files.append((name, upload.read()))
        return services.files_ingest(agent=agent, files=files)

    def _paths(self, request: Request):
        data = self.PathsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if not settings.ULTRON_INGEST_ROOTS:
            raise IngestError("reading server paths is disabled: ULTRON_INGEST_ROOTS is not set; upload the files "
                              "instead", status=403)
        agent = services.acting_agent(user=request.user, name=data.validated_data.get("agent"))
        return services.paths_ingest(agent=agent, paths=data.validated_data["paths"], roots=settings.ULTRON_INGEST_ROOTS)


class IngestJobApi(APIView):
    def get(self, request: Request, job_id) -> Response:
        job = selectors.job_visible(job_id=job_id, user=request.user)
        if job is None:
            raise NotFound("no such ingest job")
        return Response(selectors.job_progress(job=job))


class IngestTextApi(APIView):
    class InputSerializer(serializers.Serializer):
        text = StrictCharField(max_length=10_000_000, trim_whitespace=False)

    class MemorySerializer(UploadResultSerializer):
        summary_l0 = serializers.CharField(source="memory.summary_l0")

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.text_ingest(agent=getattr(request.user, "agent", None), text=data.validated_data["text"])
        created = any(not u.merged for u in result.uploads)
        return Response({"extractor": result.extractor, "memories": self.MemorySerializer(result.uploads, many=True).data},
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

    permission_classes = [IsAdminUser]
    renderer_classes = [renderers.JSONRenderer, JsonLinesRenderer]

    class FilterSerializer(serializers.Serializer):
        min_score = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
        task_type = serializers.ChoiceField(choices=training.TASK_TYPES, required=False)
        since = serializers.DateTimeField(required=False, help_text="segments created at or after this "
                                                                     "(ISO 8601 date or date-time; UTC if no zone)")

    @extend_schema(
        parameters=[FilterSerializer],
        responses={(200, "application/x-ndjson"): OpenApiResponse(
            OpenApiTypes.STR, description='one JSON object per line: {"messages": [...]} in the OpenAI chat '
                                          "fine-tuning shape")},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        data = self.FilterSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        lines = training.sft_lines(
            min_score=params.get("min_score", settings.ULTRON_SFT_MIN_SCORE),
            task_type=params.get("task_type"), since=params.get("since"),
        )
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="training.jsonl"'
        return response
