"""One error shape for the whole API: ``{"error": code, "message": text, "field": name?}``.

Services raise ``core.errors.ApplicationError`` subclasses (bad memory input, bad ingestion input,
a mismatched embedding space), each carrying a code and the field it is about, or a model's
``DoesNotExist``; this handler is the one place that maps them to HTTP responses, so views never
catch them and services never name a status.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core import errors
from core.errors import ApplicationError

logger = logging.getLogger("ultron.api")


class _Refused(exceptions.APIException):
    """A service's refusal other than bad input, with the status its code maps to."""

    def __init__(self, exc: ApplicationError):
        self.status_code = _STATUS[exc.code]
        self.default_code = exc.code
        self.field = exc.field
        super().__init__(exc.message, exc.code)


class DatabaseUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "database_unavailable"
    default_detail = ("The hub's database is not reachable (restarting, or down), so this request was not "
                      "carried out. Retry in a few seconds.")


# Each service error code and the status it answers with (``invalid`` becomes DRF's 400 shape).
_STATUS = {
    errors.TOO_LARGE: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    errors.FORBIDDEN: status.HTTP_403_FORBIDDEN,
    errors.NOT_FOUND: status.HTTP_404_NOT_FOUND,
    # Retrying will not help (it needs ``manage.py reembed``), but the service is unavailable.
    errors.EMBEDDING_UNAVAILABLE: status.HTTP_503_SERVICE_UNAVAILABLE,
    errors.EMBEDDING_FAILED: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def _translate(exc: Exception) -> Exception:
    """A service's exception as the API exception it answers with."""
    if isinstance(exc, ApplicationError):
        if exc.code == errors.INVALID:
            return exceptions.ValidationError({exc.field or "non_field_errors": [exc.message]})
        return _Refused(exc)
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, (Http404, ObjectDoesNotExist)):
        return exceptions.NotFound()
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The connection failed or was lost mid-request: the client is told to retry, the
        # operator's log gets what the driver said.
        logger.error("database unavailable: %s", exc)
        return DatabaseUnavailable()
    return exc


def _first_message(detail: Any, path: str = "") -> tuple[str, str]:
    """Walk DRF's nested error detail to the first message and the field path it names."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            sub = f"{path}.{key}" if path else str(key)
            # non_field_errors names no field: the message is about the object at ``path`` itself.
            if key == "non_field_errors":
                sub = path
            return _first_message(value, sub)
    if isinstance(detail, list) and detail:
        first = detail[0]
        if isinstance(first, (dict, list)):
            return _first_message(first, f"{path}[0]" if path else "")
        return path, str(first)
    return path, str(detail)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    # Django's own body limit (DATA_UPLOAD_MAX_MEMORY_SIZE) is no DRF exception: answered here, in the
    # API's shape, as the 413 it is.
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"error": "too_large", "message": "The request body is too large."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    exc = _translate(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        field, message = _first_message(exc.detail)
        body: dict[str, Any] = {
            "error": "invalid",
            "message": f"{field}: {message}" if field else message,
            "details": exc.detail,
        }
        if field:
            body["field"] = field
    else:
        code = getattr(exc, "default_code", "error")
        detail = getattr(exc, "detail", str(exc))
        body = {"error": code, "message": str(detail)}
        if getattr(exc, "field", None):
            body["field"] = exc.field  # type: ignore[attr-defined]
    # Both pass: a database restarting, an embedding server that timed out.
    if isinstance(exc, DatabaseUnavailable) or getattr(exc, "default_code", "") == errors.EMBEDDING_FAILED:
        response["Retry-After"] = "5"
    response.data = body
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 404 for a URL no route matches: under ``/api/`` in the API's error shape (a
    client reads JSON there, including for a path parameter of the wrong form, such as
    ``/api/clusters/abc``), elsewhere the site's HTML page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": "not_found", "message": "No API endpoint at this path."}, status=404)
    return page_not_found(request, exception)
