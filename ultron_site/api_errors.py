"""One error shape for the whole API: ``{"error": code, "message": text, "field": name?}``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def _first_message(detail: Any, path: str = "") -> tuple[str, str]:
    """Walk DRF's nested error detail to the first message and the field path it names."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            sub = f"{path}.{key}" if path else str(key)
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
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"error": "too_large", "message": "The request body is too large."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
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
    response.data = body
    return response
