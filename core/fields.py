"""Serializer fields the hub's APIs share."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.validators import MinLengthValidator, RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

# White space as both sides count it (Python's ``str.strip`` and JSON Schema's ECMA ``\s``): a
# value that must not be blank has a character outside it, which the schema declares as a pattern.
_WHITE = "\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# PostgreSQL text holds no NUL, so no string field takes one: the schema says so too. Linear for
# any text without NUL (the only texts the validator sees: NUL is refused before, by its name).
NOT_BLANK_PATTERN = rf"^[^\x00]*?[^{_WHITE}\x00][^\x00]*$"
NO_NUL_PATTERN = r"^[^\x00]*$"


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans and other non-strings instead of coercing. One
    that must not be blank says so in the schema (``minLength`` 1 and a pattern of one character
    that is not white space), so a client generated from the schema never sends what it refuses."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.allow_blank:
            if self.min_length is None:
                self.min_length = 1
                self.validators.append(MinLengthValidator(1))
            self.validators.append(RegexValidator(NOT_BLANK_PATTERN, message="This field may not be blank."))
        else:
            self.validators.append(RegexValidator(NO_NUL_PATTERN, message="must not contain NUL characters"))

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


# A space's slug as the schema declares it (JSON Schema's ``pattern``, ECMA syntax) and as the
# server checks it: the whole value, no surrounding white space, no trailing newline.
SLUG_PATTERN = r"^[-a-zA-Z0-9_]+$"


class _WholeValue(RegexValidator):
    """``RegexValidator`` matching the whole value (``$`` alone lets a trailing newline through);
    drf-spectacular still reads its pattern into the schema."""

    def __call__(self, value: Any) -> None:
        if not isinstance(value, str) or not re.fullmatch(self.regex, value):
            raise ValidationError(self.message, code=self.code)


def space_slug_field(**kwargs: Any) -> StrictCharField:
    """One space slug: letters, digits, ``-`` and ``_``, 1–50 characters, exactly as sent."""
    return StrictCharField(max_length=50, min_length=1, trim_whitespace=False,
                           validators=[_WholeValue(SLUG_PATTERN, message="not a space slug (letters, digits, - and _)")],
                           **kwargs)


def space_field_schema() -> serializers.CharField:
    """A write's optional ``space``."""
    return space_slug_field(required=False, help_text=(
        "the space to write to (a slug; default: the agent's default space). 403 where the caller may not write"))


def spaces_filter() -> serializers.ListField:
    """A read's optional ``spaces``."""
    return serializers.ListField(child=space_slug_field(), required=False, max_length=50, help_text=(
        "only these spaces (slugs; default: every space the caller may read)"))


_CANONICAL_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class CanonicalUUIDField(serializers.UUIDField):
    """A UUID written as the schema's ``format: uuid`` says (8-4-4-4-12 hex digits), not any of
    the other spellings Python's ``uuid.UUID`` would take (no dashes, braces, ``urn:uuid:``)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str) or not _CANONICAL_UUID_RE.fullmatch(data):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)
