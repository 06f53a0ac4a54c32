"""Serializer fields the hub's APIs share."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
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


@extend_schema_field(OpenApiTypes.STR)
class SpaceSlugField(serializers.Field):
    """The slug of the space an object is in (its ``space_id``), from the serializer's ``slugs``
    context: the caller's spaces, which every object it is shown comes from."""

    def __init__(self, **kwargs):
        kwargs.setdefault("read_only", True)
        kwargs.setdefault("help_text", "the space it is in")
        super().__init__(**kwargs)

    def to_representation(self, value):
        return self.context.get("slugs", {}).get(value, "")


def space_field_schema() -> serializers.CharField:
    """A write's optional ``space``."""
    return serializers.CharField(required=False, max_length=50, help_text=(
        "the space to write to (a slug; default: the agent's default space). 403 where the caller may not write"))


def spaces_filter() -> serializers.ListField:
    """A read's optional ``spaces``."""
    return serializers.ListField(child=serializers.CharField(max_length=50), required=False, max_length=50, help_text=(
        "only these spaces (slugs; default: every space the caller may read)"))
