"""People who work in the admin site (curators, admins) — not agents, which have tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from ultron_site.models import FirstPassword
from ultron_site.roles import ROLE_GROUPS, groups_sync


class PersonError(ValueError):
    pass


@dataclass
class CreatedPerson:
    username: str
    role: str
    password: str


def person_create(*, username: str, role: str, password_once: bool = True) -> CreatedPerson:
    """A staff user in the role's group, with a random password returned once (only its hash
    is stored) and, with ``password_once``, good for the first login only: the admin site asks
    for a new one before anything else. Raises ``PersonError`` for an unknown role, a taken name or an agent's name."""
    if role not in ROLE_GROUPS:
        raise PersonError(f"unknown role {role!r}; choose one of: {', '.join(ROLE_GROUPS)}")
    username = username.strip()
    if not username or ":" in username or len(username) > 150:
        raise PersonError("the name must be 1-150 characters without ':' (agent users are named agent:NAME)")
    users = get_user_model()
    password = secrets.token_urlsafe(12)
    with transaction.atomic():
        if users.objects.filter(username=username).exists():
            raise PersonError(f"a user named {username!r} already exists")
        user = users.objects.create_user(username=username, password=password, is_staff=True)
        group = Group.objects.filter(name=ROLE_GROUPS[role]).first()
        if group is None:  # the data migration made the groups; a flushed database has lost them
            groups_sync(django_apps)
            group = Group.objects.get(name=ROLE_GROUPS[role])
        user.groups.add(group)
        if password_once:
            FirstPassword.objects.create(user=user, password_hash=user.password)
    return CreatedPerson(username, role, password)
