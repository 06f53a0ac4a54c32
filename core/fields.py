"""Serializer fields the hub's APIs share."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.exceptions import ValidationError


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans and other non-strings instead of coercing."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        # PostgreSQL text cannot hold NUL: refused as bad input here rather than failing at the insert.
        if "\x00" in data:
            raise ValidationError("must not contain NUL characters")
        return super().to_internal_value(data)


def tags_field() -> serializers.ListField:
    return serializers.ListField(
        # Blank tags pass: normalisation drops them (flow.md#validation).
        child=StrictCharField(max_length=settings.ULTRON_MAX_TAG_CHARS, allow_blank=True),
        required=False,
        # A parse limit only: the service counts distinct tags against ULTRON_MAX_TAGS, as repeats collapse.
        max_length=100,
    )
