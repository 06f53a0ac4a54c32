"""Bearer-token authentication for agents (DRF)."""

from __future__ import annotations

import hmac
from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from agents.models import ApiToken
from agents.services import split_token, token_hash

# last_used_at is a convenience for operators; write it at most once a minute per token.
_LAST_USED_RESOLUTION = timedelta(minutes=1)
# Compared against when no token row matched (no SHA-256 hex digest equals it).
_NO_MATCH = "0" * 63 + "-"


class AgentTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, credential = header.partition(" ")
        if scheme.lower() not in ("bearer", "token"):
            return None
        credential = credential.strip()
        parts = split_token(credential)
        if parts is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        prefix, token = parts
        row = (
            ApiToken.objects.select_related("agent", "agent__user")
            .filter(prefix=prefix, revoked_at__isnull=True)
            .first()
        )
        # Hash and compare even when no row matched, in constant time, so the answer takes as
        # long for an unknown prefix as for a known one with a wrong secret.
        stored = row.key_hash if row is not None else _NO_MATCH
        if not hmac.compare_digest(stored, token_hash(token)) or row is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        now = timezone.now()
        # After the hash check: only whoever holds the secret is told that the token expired.
        if row.expired(now):
            raise exceptions.AuthenticationFailed("Token expired.")
        user = row.agent.user
        if not user.is_active:
            raise exceptions.AuthenticationFailed("Agent is disabled.")
        if row.last_used_at is None or now - row.last_used_at > _LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        return user, row

    def authenticate_header(self, request) -> str:
        return self.keyword
