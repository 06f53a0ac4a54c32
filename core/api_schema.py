"""What every API view declares in the OpenAPI schema besides its own body: the token it needs
and the errors it can answer with, in the one error shape ``ultron_site.api_errors`` writes.

It lives in ``core``, below every app, so that every app's views declare their errors with the
same serializer.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers


class AgentTokenScheme(OpenApiAuthenticationExtension):
    """The agents' bearer token (``Authorization: Bearer ult_...``) as an OpenAPI security scheme."""

    target_class = "agents.auth.AgentTokenAuthentication"
    name = "agentToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "An agent's API token: `Authorization: Bearer ult_<prefix>_<secret>`."}


class ErrorSerializer(serializers.Serializer):
    """Every error the API answers with."""

    error = serializers.CharField(help_text="a short code: invalid, parse_error, not_authenticated, "
                                            "permission_denied, not_found, too_large, throttled, ...")
    message = serializers.CharField(help_text="a sentence; for bad input it starts with the field's name")
    field = serializers.CharField(required=False, help_text="bad input only: the offending field or query "
                                                            "parameter, as a dotted path (tags.0)")
    details = serializers.JSONField(required=False, help_text="bad input only: every problem found, by field")


_WHEN = {
    400: "bad input: a body field or query parameter missing, of the wrong type or out of range (named in `field`)",
    401: "no token, or a malformed, unknown, revoked or expired one",
    403: "a curator-only operation called by an ordinary agent",
    404: "no such row",
    409: "a request with the same Idempotency-Key is still running (idempotency_in_progress): retry after "
         "Retry-After seconds for its answer",
    413: "the request body (or a file in it) is over its limit",
    422: "the Idempotency-Key was sent before with a different request (idempotency_key_reused)",
    429: "over the rate limit: the Retry-After header says when to retry",
    503: "the database is not reachable (database_unavailable, with Retry-After), or the stored vectors and "
         "the configured embedding model disagree (embedding_unavailable: run manage.py reembed), or the "
         "embedding provider failed (embedding_failed, with Retry-After)",
}


def error_responses(*codes: int, authenticated: bool = True) -> dict[int, OpenApiResponse]:
    """The error statuses an operation answers with. An operation that needs a token also
    answers 401 without a valid one, 429 over the rate limit and 503 while the database is down."""
    every = set(codes) | ({401, 429, 503} if authenticated else set())
    return {code: OpenApiResponse(ErrorSerializer, description=_WHEN[code]) for code in sorted(every)}


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"},
    OpenApiParameter.HEADER, required=False,
    description="Any string of 1 to 200 characters, not only spaces, new for each logical request and the same on its retries: "
                "a repeat within a day answers what the first answered (header Idempotent-Replayed: true) "
                "and changes nothing.")



SPACES_PARAM = OpenApiParameter(
    "spaces", {"type": "array", "maxItems": 50, "items": {
        "type": "string", "pattern": r"^[-a-zA-Z0-9_]{1,50}(,[-a-zA-Z0-9_]{1,50}){0,49}$"}},
    OpenApiParameter.QUERY, required=False, explode=True,
    description="Only these spaces (slugs; repeat the parameter or separate them with commas). Default: every "
                "space the caller may read. A space the caller may not read is refused (403) like one that "
                "does not exist.")


def int_path(name: str, description: str) -> OpenApiParameter:
    """An integer id in the path, bounded as the database stores it (bigint): a longer number is
    no id, and is refused as one (404) rather than by a proxy's URL limit."""
    return OpenApiParameter(name, {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}, OpenApiParameter.PATH,
                            description=description)
