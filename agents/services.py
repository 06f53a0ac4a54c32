"""Writes for agents and tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from agents.models import Agent, ApiToken

TOKEN_PREFIX = "ult_"


@dataclass(frozen=True)
class IssuedToken:
    agent: Agent
    token: str  # shown once, never stored


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def split_token(token: str) -> tuple[str, str] | None:
    """Return (prefix, token) for a well-formed token, or None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    rest = token[len(TOKEN_PREFIX) :]
    prefix, sep, secret = rest.partition("_")
    if not sep or len(prefix) != 12 or len(secret) < 20:
        return None
    return prefix, token


@transaction.atomic
def agent_create(*, name: str, staff: bool = False) -> Agent:
    name = name.strip()
    if not name or len(name) > 100:
        raise ValueError("agent name must be 1-100 characters")
    user_model = get_user_model()
    # Creating an existing agent reuses it (create_agent then prints a new token for it); staff=True only
    # ever promotes, never demotes (flow.md#commands).
    existing = Agent.objects.select_related("user").filter(name=name).first()
    if existing is not None:
        if staff and not existing.user.is_staff:
            existing.user.is_staff = True
            existing.user.save(update_fields=["is_staff"])
        return existing
    # Agents log in with tokens only: their user has no usable password.
    user = user_model(username=f"agent:{name}", is_staff=staff)
    user.set_unusable_password()
    user.save()
    return Agent.objects.create(name=name, user=user)


def token_lifetime(days: int | None = None) -> timedelta | None:
    """A token's lifetime: ``days`` if given, else the hub's ``ULTRON_TOKEN_DAYS``; 0 means none."""
    if days is None:
        days = settings.ULTRON_TOKEN_DAYS
    if days < 0:
        raise ValueError("a token's lifetime in days must be 0 (never expires) or more")
    return timedelta(days=days) if days else None


@transaction.atomic
def token_issue(*, agent: Agent, label: str = "", lifetime: timedelta | None = None) -> IssuedToken:
    prefix = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    expires_at = timezone.now() + lifetime if lifetime else None
    ApiToken.objects.create(agent=agent, prefix=prefix, key_hash=token_hash(token), label=label,
                            expires_at=expires_at)
    return IssuedToken(agent=agent, token=token)


def token_revoke(*, token: ApiToken) -> None:
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
