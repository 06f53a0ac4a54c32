"""Query parameters an operation does not declare are refused (400 naming the parameter), so a
typo does not pass silently: ``?space=team-a`` instead of ``?spaces=team-a`` would otherwise search
every space the caller may read. What each operation declares is read from the API's own OpenAPI
schema (``/api/schema/``), built once per process: the schema is the contract, and the check
cannot drift from it."""

from __future__ import annotations

import re
import threading
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission

_ROUTE_PARAM_RE = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
_lock = threading.Lock()
_declared: dict[tuple[str, str], frozenset[str]] | None = None


def _declared_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """(path, method) -> the query parameters the operation declares, from the generated schema."""
    global _declared
    if _declared is None:
        with _lock:
            if _declared is None:
                from drf_spectacular.generators import SchemaGenerator

                schema: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
                _declared = {
                    (path, method.upper()): frozenset(p["name"] for p in operation.get("parameters", [])
                                                      if p.get("in") == "query")
                    for path, operations in schema.get("paths", {}).items()
                    for method, operation in operations.items() if isinstance(operation, dict)
                }
    return _declared


def operation_path(route: str) -> str:
    """A URL route as the schema names its path: ``api/clusters/<int:cluster_id>`` ->
    ``/api/clusters/{cluster_id}``."""
    return "/" + _ROUTE_PARAM_RE.sub(r"{\1}", route)


class DeclaredQueryOnly(BasePermission):
    """Refuses a request whose query string names a parameter its operation does not declare.
    After authentication, so that a caller without a token learns nothing of the operations."""

    def has_permission(self, request, view) -> bool:
        if not request.query_params:
            return True
        match = getattr(request._request, "resolver_match", None)
        method = "GET" if request.method == "HEAD" else request.method
        declared = _declared_parameters().get((operation_path(match.route), method)) if match else None
        if declared is None:
            return True  # not an operation of the schema (OPTIONS, the schema itself)
        unknown = sorted(set(request.query_params) - declared)
        if unknown:
            takes = ", ".join(sorted(declared)) or "no query parameters"
            raise ValidationError({unknown[0]: [f"unknown query parameter; this call takes {takes}"]})
        return True
