"""The one table the floor keeps: the answers to requests sent with an ``Idempotency-Key``."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class IdempotentRequest(models.Model):
    """A POST sent with an ``Idempotency-Key`` header: claimed while it runs (``status`` null),
    then its answer, which a repeat of the same key within a day gets back unchanged
    (``core/idempotency.py``)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    # What the request was (method, path and a digest of its body): a key sent again with another
    # request is the client's mistake, answered 422, never the first request's answer.
    fingerprint = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="idempotency_owner_key")]

    def __str__(self) -> str:
        return f"{self.owner_id}:{self.key}"
