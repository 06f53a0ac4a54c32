"""Agents and their API tokens; spaces and who may do what in each.

Each agent is backed by a Django user (so permissions, staff rights and the admin work the
usual way); agents authenticate with bearer tokens, stored only as SHA-256 hashes.

A space holds one team's knowledge (memories, sessions, clusters, skills: every table of it has
a ``space`` column, and the database keeps the rows apart, ``core/spaces.py``). A membership
gives a user (a person or an agent's user) one role in one space.
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

SHARED_SPACE = "shared"


class Trust(models.TextChoices):
    """How far the hub trusts what a member writes (docs/flow.md#screening)."""

    TRUSTED = "trusted", "Trusted"  # served at once, unless the screen flags it
    REVIEWED = "reviewed", "Reviewed"  # everything it writes waits for a curator


class Space(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    default_trust = models.CharField(
        max_length=10, choices=Trust.choices, default=Trust.TRUSTED,
        help_text="The trust given to an agent that joins this space.")
    allowed_hosts = ArrayField(
        models.CharField(max_length=253), default=list, blank=True,
        help_text=("Hosts a memory may link to without being held, besides the hub's "
                   "ULTRON_SCREEN_ALLOWED_HOSTS; a leading '.' or none: the host and its subdomains."))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


def shared_space_id() -> int:
    """The space of a row created without naming one: the shared space. The hub's services
    always name the space; this serves rows made by hand (a shell, a test's fixtures), and the
    database refuses such a row where the shared space is not among the writer's spaces."""
    found = Space.objects.filter(slug=SHARED_SPACE).values_list("pk", flat=True).first()
    if found is None:
        raise RuntimeError("the hub has no space 'shared': run manage.py migrate")
    return found


class Role(models.TextChoices):
    """Roles in a space, each with the rights of the ones before it."""

    READER = "reader", "Reader"  # search, context, details, skills
    WRITER = "writer", "Writer"  # + upload, ingest
    CURATOR = "curator", "Curator"  # + review, edit, merge, crystallize, publish
    ADMIN = "admin", "Admin"  # + members, tokens, raw archives, deletion


ROLE_ORDER = [Role.READER, Role.WRITER, Role.CURATOR, Role.ADMIN]
# Agents act through the API: they read and write, never curate (curation is a person's call).
AGENT_ROLES = [Role.READER, Role.WRITER]


def role_at_least(role: str, wanted: str) -> bool:
    return ROLE_ORDER.index(Role(role)) >= ROLE_ORDER.index(Role(wanted))


class Membership(models.Model):
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="space_memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    # Existing memberships (made before trust existed) are trusted; a new one takes its space's default.
    trust = models.CharField(max_length=10, choices=Trust.choices, default=Trust.TRUSTED,
                             help_text="reviewed: everything this member writes is held until a curator approves it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["space__slug", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["space", "user"], name="membership_one_role_per_space"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_valid"),
            models.CheckConstraint(condition=models.Q(trust__in=Trust.values), name="membership_trust_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.space}: {self.role}"


class Agent(models.Model):
    name = models.CharField(max_length=100, unique=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent"
    )
    # Where the agent's uploads and ingests go when a request names no space.
    default_space = models.ForeignKey(Space, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The tables keep the names they had when agents lived in the project package
        # (migration agents.0001 adopts them without touching the database).
        db_table = "ultron_site_agent"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_staff(self) -> bool:
        return bool(self.user.is_staff)


class ApiTokenQuerySet(models.QuerySet):
    def active(self, now: datetime.datetime | None = None) -> ApiTokenQuerySet:
        """Tokens that open the API: not revoked, not past their expiry (``ApiToken.expired``)."""
        return self.filter(revoked_at__isnull=True).exclude(expires_at__lte=now or timezone.now())


class ApiToken(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    # The first characters of the token, stored in clear, find the row; the hash proves it.
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Optional: a token past this moment no longer opens the API (null: it never expires).
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        db_table = "ultron_site_apitoken"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent.name}:{self.prefix}"

    def expired(self, now: datetime.datetime) -> bool:
        """Past its expiry at ``now`` (the same rule as ``ApiTokenQuerySet.active``)."""
        return self.expires_at is not None and self.expires_at <= now
