"""The one base class of the errors a service raises when it refuses a request.

A service says *what* went wrong (``code``), *which input* it is about (``field``) and a message a
person can act on; it never says how a transport answers. The API's exception handler
(``ultron_site/api_errors.py``) is the one place that maps a code to an HTTP status; the console
commands print the message.
"""

from __future__ import annotations

from typing import ClassVar

# The codes a service may raise with. They are the ``error`` strings of the API's error shape, so
# a client sees the same word whichever service refused it.
INVALID = "invalid"
TOO_LARGE = "too_large"
FORBIDDEN = "permission_denied"
NOT_FOUND = "not_found"
# The stored vectors and the configured embedding model disagree: retrying will not help.
EMBEDDING_UNAVAILABLE = "embedding_unavailable"
# The embedding provider failed (a server down, a timeout, an unusable answer): retrying may help.
EMBEDDING_FAILED = "embedding_failed"
CODES = frozenset({INVALID, TOO_LARGE, FORBIDDEN, NOT_FOUND, EMBEDDING_UNAVAILABLE, EMBEDDING_FAILED})


class ApplicationError(Exception):
    """A request a service refuses: ``code`` (one of ``CODES``), ``message``, and ``field`` (the
    input it is about, when there is one)."""

    default_code: ClassVar[str] = INVALID

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None):
        super().__init__(f"{field}: {message}" if field else message)
        self.message = message
        self.code = code or self.default_code
        # An unknown code would reach the API's handler with no status to map it to: refused where raised.
        if self.code not in CODES:
            raise ValueError(f"unknown error code {self.code!r}; use one of {sorted(CODES)}")
        self.field = field
