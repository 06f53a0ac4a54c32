"""Agents and their API tokens.

Each agent is backed by a Django user (so permissions, staff rights and the admin work the
usual way); agents authenticate with bearer tokens, stored only as SHA-256 hashes.
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone


class Agent(models.Model):
    name = models.CharField(max_length=100, unique=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent"
    )
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
