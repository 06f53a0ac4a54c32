"""REST API of the ingestion service."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion import selectors, services
from ingestion.models import IngestJob
from memories.api import StrictCharField
from ultron_site.models import Agent


class TooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class Forbidden(APIException):
    status_code = status.HTTP_403_FORBIDDEN
    default_code = "permission_denied"


def _raise(exc: services.IngestError):
    if exc.status == 413:
        raise TooLarge(exc.message)
    if exc.status == 403:
        raise Forbidden(exc.message)
    if exc.status == 404:
        raise NotFound(exc.message)
    raise ValidationError({exc.field or "non_field_errors": [exc.message]})


def _acting_agent(request: Request, name: str | None) -> Agent:
    agent = getattr(request.user, "agent", None)
    if name and (agent is None or name != agent.name):
        if not request.user.is_staff:
            raise PermissionDenied("only curators may ingest on behalf of another agent")
        other = Agent.objects.filter(name=name).first()
        if other is None:
            raise ValidationError({"agent": [f"no agent named {name!r}"]})
        return other
    if agent is None:
        raise PermissionDenied("this account is not an agent")
    return agent


class IngestApi(APIView):
    """Upload ``.jsonl`` sessions (multipart ``files``, optional parallel ``names``) or name
    server paths inside ``ULTRON_INGEST_ROOTS`` (JSON ``{paths}``). Returns at once."""

    parser_classes = [MultiPartParser, JSONParser]

    class PathsSerializer(serializers.Serializer):
        paths = serializers.ListField(child=StrictCharField(max_length=4096), min_length=1, max_length=1000)
        agent = StrictCharField(required=False, max_length=100)

    def post(self, request: Request) -> Response:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > settings.ULTRON_INGEST_MAX_REQUEST_BYTES:
            raise TooLarge(f"the request is larger than {settings.ULTRON_INGEST_MAX_REQUEST_BYTES} bytes")
        try:
            if request.content_type.startswith("multipart/"):
                job, results = self._files(request)
            else:
                job, results = self._paths(request)
        except services.IngestError as exc:
            _raise(exc)
        return Response(
            {"total_files": len(results), "files": [r.as_dict() for r in results], "job_id": str(job.pk)},
            status=status.HTTP_202_ACCEPTED,
        )

    def _files(self, request: Request):
        uploads = request.FILES.getlist("files")
        if not uploads:
            raise ValidationError({"files": ["send one or more .jsonl files in the 'files' field"]})
        names = request.data.getlist("names") if hasattr(request.data, "getlist") else []
        if names and len(names) != len(uploads):
            raise ValidationError({"names": ["give one name per file, in the same order"]})
        agent = _acting_agent(request, request.data.get("agent"))
        files = []
        for index, upload in enumerate(uploads):
            name = names[index] if names else upload.name
            if upload.size > settings.ULTRON_INGEST_MAX_FILE_BYTES:
                raise TooLarge(f"{name}: larger than {settings.ULTRON_INGEST_MAX_FILE_BYTES} bytes")
            if not name.endswith(".jsonl"):
                raise ValidationError({"files": [f"{name}: only .jsonl files are ingested"]})
            files.append((name, upload.read()))
        return services.files_ingest(agent=agent, files=files)

    def _paths(self, request: Request):
        data = self.PathsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if not settings.ULTRON_INGEST_ROOTS:
            raise Forbidden("reading server paths is disabled: ULTRON_INGEST_ROOTS is not set; upload the files instead")
        agent = _acting_agent(request, data.validated_data.get("agent"))
        return services.paths_ingest(agent=agent, paths=data.validated_data["paths"], roots=settings.ULTRON_INGEST_ROOTS)


class IngestJobApi(APIView):
    def get(self, request: Request, job_id) -> Response:
        job = IngestJob.objects.filter(pk=job_id).first()
        agent = getattr(request.user, "agent", None)
        if job is None or (not request.user.is_staff and job.agent_id != getattr(agent, "pk", None)):
            raise NotFound("no such ingest job")
        return Response(selectors.job_progress(job=job))


class IngestTextApi(APIView):
    class InputSerializer(serializers.Serializer):
        text = StrictCharField(max_length=10_000_000, trim_whitespace=False)

    @extend_schema(request=InputSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        agent = getattr(request.user, "agent", None)
        try:
            result = services.text_ingest(agent=agent, text=data.validated_data["text"])
        except services.IngestError as exc:
            _raise(exc)
        return Response({
            "extractor": result.extractor,
            "memories": [
                {"id": str(u.memory.pk), "memory_type": u.memory.memory_type, "tier": u.memory.tier,
                 "status": u.memory.status, "hit_count": u.memory.hit_count, "merged": u.merged,
                 "summary_l0": u.memory.summary_l0}
                for u in result.uploads
            ],
        }, status=status.HTTP_201_CREATED if any(not u.merged for u in result.uploads) else status.HTTP_200_OK)
