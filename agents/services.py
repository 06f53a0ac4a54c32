"""Writes for agents, tokens, spaces and memberships."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from agents.models import AGENT_ROLES, SHARED_SPACE, Agent, ApiToken, Membership, Role, Space, Trust

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


class SpaceError(ValueError):
    """A space or membership request that cannot be done, with the reason for a person."""


def space_slug_clean(slug: str) -> str:
    """``slug`` in its stored form (lower case), or ``SpaceError`` saying what a slug may hold."""
    slug = slug.strip().lower()
    if not slug or len(slug) > 50 or not all(c.isalnum() or c in "-_" for c in slug) or not slug[0].isalnum():
        raise SpaceError(f"space slug {slug!r}: use 1-50 letters, digits, '-' or '_', starting with a letter or digit")
    return slug


def space_create(*, slug: str, name: str = "", description: str = "") -> Space:
    """A new space (a slug is lower-case letters, digits and dashes; creating one that exists
    updates its name and description)."""
    slug = space_slug_clean(slug)
    space, created = Space.objects.get_or_create(slug=slug, defaults={"name": name or slug, "description": description})
    if not created and (name or description):
        space.name = name or space.name
        space.description = description or space.description
        space.save(update_fields=["name", "description"])
    return space


def space_hosts_clean(hosts: list[str]) -> list[str]:
    """Host names as a space's ``allowed_hosts`` keeps them: trimmed, lower case, each once; a
    leading '.' is kept (it and none both allow the subdomains). ``SpaceError`` names a value
    that is not a host name (a URL, a path, a port, a space inside)."""
    cleaned: list[str] = []
    for raw in hosts:
        host = raw.strip().lower().rstrip(".")
        if not host:
            continue
        bare = host.lstrip(".")
        labels = bare.split(".")
        if (len(bare) > 253 or host.count(".") - bare.count(".") > 1 or not all(
                label and len(label) <= 63 and label[0] != "-" and label[-1] != "-"
                and all(c.isalnum() or c == "-" for c in label) for label in labels)):
            raise SpaceError(f"{raw.strip()!r} is not a host name (write it as docs.example.com, without "
                             "https:// or a path)")
        if host not in cleaned:
            cleaned.append(host)
    return cleaned


def space_edit(*, space: Space, name: str, description: str, default_trust: str | None = None,
               allowed_hosts: list[str] | None = None) -> Space:
    """A space's name and description, as given (an empty description clears it; an empty
    name is the slug), and when given the trust new members get and the hosts its memories may
    link to (``space_hosts_clean``). The slug is the space's name in every API call: it never
    changes."""
    fields = ["name", "description"]
    space.name = name.strip() or space.slug
    space.description = description
    if default_trust is not None:
        if default_trust not in Trust.values:
            raise SpaceError(f"trust {default_trust!r}: one of {', '.join(Trust.values)}")
        space.default_trust = default_trust
        fields.append("default_trust")
    if allowed_hosts is not None:
        space.allowed_hosts = space_hosts_clean(allowed_hosts)
        fields.append("allowed_hosts")
    space.save(update_fields=fields)
    return space


def space_get(*, slug: str) -> Space:
    space = Space.objects.filter(slug=slug.strip().lower()).first()
    if space is None:
        raise SpaceError(f"no space {slug!r} (manage.py create_space {slug} --name ... makes one)")
    return space


def membership_role_check(*, user, role: str) -> None:
    """Raise ``SpaceError`` unless ``user`` may hold ``role`` (the rule ``membership_set``
    keeps; a form asks it to put the message beside its field)."""
    if role not in Role.values:
        raise SpaceError(f"role {role!r}: one of {', '.join(Role.values)}")
    if hasattr(user, "agent") and role not in AGENT_ROLES:
        raise SpaceError(f"agents read and write; {role!r} is a person's role (curation stays with people)")


def membership_set(*, space: Space, user, role: str, trust: str | None = None) -> Membership:
    """Give ``user`` exactly ``role`` in ``space`` (agents: reader or writer only), and ``trust``
    when given. A new membership without one takes the space's ``default_trust``; an existing
    one keeps its own."""
    membership_role_check(user=user, role=role)
    if trust is not None and trust not in Trust.values:
        raise SpaceError(f"trust {trust!r}: one of {', '.join(Trust.values)}")
    membership, _ = Membership.objects.update_or_create(
        space=space, user=user, defaults={"role": role, **({"trust": trust} if trust is not None else {})},
        create_defaults={"role": role, "trust": trust or space.default_trust})
    return membership


def membership_remove(*, space: Space, user) -> bool:
    deleted, _ = Membership.objects.filter(space=space, user=user).delete()
    return bool(deleted)


def parse_space_roles(values: list[str], default_role: str) -> list[tuple[Space, str]]:
    """``SLUG`` or ``SLUG:ROLE`` arguments (create_agent --space, create_user --space) as
    (space, role) pairs, in order."""
    pairs = []
    for value in values:
        slug, _, role = value.partition(":")
        pairs.append((space_get(slug=slug), role or default_role))
    return pairs


@transaction.atomic
def agent_spaces_set(*, agent: Agent, spaces: list[tuple[Space, str]]) -> None:
    """Give ``agent`` these roles; the first space becomes its default for writes."""
    for space, role in spaces:
        membership_set(space=space, user=agent.user, role=role)
    if spaces:
        agent.default_space = spaces[0][0]
        agent.save(update_fields=["default_space"])


@transaction.atomic
def agent_create(*, name: str, staff: bool = False, spaces: list[tuple[Space, str]] | None = None) -> Agent:
    """An agent (or the existing one of that name). ``spaces``: its roles, the first its default
    for writes; a new agent given none writes to the shared space, as every agent did before
    spaces existed."""
    agent = _agent_get_or_create(name=name, staff=staff)
    if spaces is None and agent.default_space_id is None:
        shared = Space.objects.filter(slug=SHARED_SPACE).first()
        spaces = [(shared, Role.WRITER)] if shared is not None else []
    agent_spaces_set(agent=agent, spaces=spaces or [])
    return agent


def _agent_get_or_create(*, name: str, staff: bool) -> Agent:
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
