"""One exception hierarchy for everything the client can fail with.

Errors the hub answered carry its JSON error body: ``error`` (a short code such as
``invalid`` or ``not_found``), ``message`` (a sentence; for bad input it starts with the
field's name), ``field`` (the offending field as a dotted path, for bad input) and ``details``.
Errors that never reached an answer (connection refused, a timeout) carry ``status`` None.
"""

from __future__ import annotations

from typing import Any


class UltronError(Exception):
    """Base class: catch this to handle every failure of a call."""

    def __init__(self, message: str, *, status: int | None = None, error: str = "",
                 field: str | None = None, details: Any = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error = error
        self.field = field
        self.details = details
        self.body = body

    def __str__(self) -> str:
        prefix = f"{self.status} {self.error}: " if self.status else ""
        return f"{prefix}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"error": self.error or type(self).__name__, "message": self.message}
        if self.status is not None:
            data["status"] = self.status
        if self.field:
            data["field"] = self.field
        return data


class UsageError(UltronError):
    """The call was refused before anything was sent: a missing path, an unsafe skill slug,
    no hub URL."""


class UltronConnectionError(UltronError):
    """The hub could not be reached or did not answer in time (after the retries)."""


class WaitTimeout(UltronError):
    """``wait()`` gave up before the ingest job was done."""


class APIError(UltronError):
    """The hub answered with an error status."""


class InvalidRequestError(APIError):
    """400: a field is missing, of the wrong type or out of range (``field`` names it)."""


class AuthenticationError(APIError):
    """401: no token, or a malformed, unknown or revoked one."""


class PermissionDeniedError(APIError):
    """403: a curator-only operation, or server paths that may not be read."""


class NotFoundError(APIError):
    """404: no such memory, ingest job, skill or path."""


class RequestTooLargeError(APIError):
    """413: a body, file or text over the hub's limit."""


class RateLimitError(APIError):
    """429 after every retry: the agent is over the hub's rate limit."""


class ServerError(APIError):
    """5xx after every retry, e.g. 503 ``embedding_unavailable``."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 413: RequestTooLargeError, 429: RateLimitError,
}


def error_from_response(status: int, body: Any, text: str = "") -> APIError:
    """The exception for an error answer; ``body`` is the decoded JSON, or None when the answer
    was not JSON (a proxy's page, Django's plain 404 for an unknown URL)."""
    if status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif status >= 500:
        cls = ServerError
    else:
        cls = APIError
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        field = body.get("field")
        return cls(body["message"], status=status, error=str(body.get("error", "")),
                   field=field if isinstance(field, str) else None, details=body.get("details"), body=body)
    snippet = " ".join(text.split())[:200]
    message = f"HTTP {status}" + (f": {snippet}" if snippet else "")
    if status == 404:
        message += " (no such endpoint: is the URL the hub's?)"
    return cls(message, status=status, error="http_error", body=body)
