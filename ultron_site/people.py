"""People who work in the admin site (curators, admins) — not agents, which have tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import SHARED_SPACE, Space
from agents.services import SpaceError, membership_set
from ultron_site.models import FirstPassword
from ultron_site.roles import ROLE_GROUPS, groups_sync


class PersonError(ValueError):
    pass


@dataclass
class CreatedPerson:
    username: str
    role: str
    password: str


def _one_time_password(user) -> str:
    """A new random password for ``user``, good for one login (``FirstPassword``); it meets the
    password validators (22 URL-safe characters)."""
    password = secrets.token_urlsafe(16)
    validate_password(password, user)
    user.set_password(password)
    user.save(update_fields=["password"])
    # used_at cleared: the new one-time password opens exactly one session again.
    FirstPassword.objects.update_or_create(user=user, defaults={"password_hash": user.password, "used_at": None})
    return password


def password_reset(*, username: str) -> str:
    """Issue a new one-time password for a person (a lost password, an unused first password
    that already opened its one session). Their sessions elsewhere end: the hash changed."""
    users = get_user_model()
    user = users.objects.filter(username=username).first()
    if user is None:
        raise PersonError(f"no person named {username!r}")
    if username.startswith("agent:"):
        raise PersonError(f"{username!r} is an agent: agents have tokens, not passwords")
    with transaction.atomic():
        return _one_time_password(user)


def person_create(*, username: str, role: str, password_once: bool = True, password: str | None = None,
                  spaces: list[tuple[Space, str]] | None = None) -> CreatedPerson:
    """A staff user in the role's group, with a random password returned once (only its hash
    is stored) and, with ``password_once``, good for one login only: the admin site asks for a
    new one before anything else. ``password``: the person's own choice instead (checked by the
    password validators; not one-time). ``spaces``: their roles by space (default: ``role`` in
    the shared space, as every person had before spaces). Raises ``PersonError`` for an unknown
    role, a taken name, an agent's name or a password the validators refuse."""
    if role not in ROLE_GROUPS:
        raise PersonError(f"unknown role {role!r}; choose one of: {', '.join(ROLE_GROUPS)}")
    username = username.strip()
    if not username or ":" in username or len(username) > 150:
        raise PersonError("the name must be 1-150 characters without ':' (agent users are named agent:NAME)")
    users = get_user_model()
    chosen = password is not None
    if password is not None:
        try:
            validate_password(password, users(username=username))
        except ValidationError as exc:
            raise PersonError("the password is refused: " + " ".join(exc.messages)) from None
    secret = password if password is not None else secrets.token_urlsafe(16)
    with transaction.atomic():
        if users.objects.filter(username=username).exists():
            raise PersonError(f"a user named {username!r} already exists")
        user = users.objects.create_user(username=username, password=secret, is_staff=True)
        group = Group.objects.filter(name=ROLE_GROUPS[role]).first()
        if group is None:  # the data migration made the groups; a flushed database has lost them
            groups_sync(django_apps)
            group = Group.objects.get(name=ROLE_GROUPS[role])
        user.groups.add(group)
        if spaces is None:
            shared = Space.objects.filter(slug=SHARED_SPACE).first()
            spaces = [(shared, role)] if shared is not None else []
        try:
            for space, space_role in spaces:
                membership_set(space=space, user=user, role=space_role)
        except SpaceError as exc:
            raise PersonError(str(exc)) from None
        if password_once and not chosen:
            FirstPassword.objects.create(user=user, password_hash=user.password)
    return CreatedPerson(username, role, secret)
