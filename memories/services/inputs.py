"""Validating and redacting what a caller sends as a memory, before anything is stored."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memories.redaction import redact_many
from memories.text import normalise_tags


class MemoryInputError(ValueError):
    """Bad input for a memory operation; ``field`` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def tags_normalise(tags: list[str]) -> list[str]:
    """Tags in their stored form, within the hub's limits (``ULTRON_MAX_TAGS`` tags of at most
    ``ULTRON_MAX_TAG_CHARS`` characters)."""
    return normalise_tags(tags, max_tags=settings.ULTRON_MAX_TAGS, max_chars=settings.ULTRON_MAX_TAG_CHARS)


def _clean_text(value: Any, field_name: str, *, required: bool, limit: int) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise MemoryInputError(field_name, "must be a string")
    if "\x00" in value:
        raise MemoryInputError(field_name, "must not contain NUL characters")
    value = value.strip()
    if required and not value:
        raise MemoryInputError(field_name, "is required and must not be blank")
    if len(value) > limit:
        raise MemoryInputError(field_name, f"is too long ({len(value)} characters, at most {limit})")
    return value


def _clean_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise MemoryInputError("tags", "must be a list of strings")
    for tag in value:
        if len(tag.strip()) > settings.ULTRON_MAX_TAG_CHARS:
            raise MemoryInputError("tags", f"each tag must be at most {settings.ULTRON_MAX_TAG_CHARS} characters")
    # Distinct by their normal form, but kept as written: redaction sees "Grace Hopper", not
    # "grace hopper" (names are found by their capitals); normalisation comes after.
    distinct: dict[str, str] = {}
    for tag in value:
        raw = " ".join(tag.split())
        if raw and raw.lower() not in distinct:
            distinct[raw.lower()] = raw
    tags = list(distinct.values())
    if len(tags) > settings.ULTRON_MAX_TAGS:
        raise MemoryInputError("tags", f"at most {settings.ULTRON_MAX_TAGS} distinct tags are allowed")
    return tags


@dataclass
class CleanMemory:
    content: str
    context: str
    resolution: str
    tags: list[str]
    redactions: Counter


def memory_input_clean(*, content: Any, context: Any = "", resolution: Any = "", tags: Any = None) -> CleanMemory:
    """Validate and redact the fields of a memory. Raises :class:`MemoryInputError`."""
    clean_content = _clean_text(content, "content", required=True, limit=settings.ULTRON_MAX_CONTENT_CHARS)
    clean_context = _clean_text(context, "context", required=False, limit=settings.ULTRON_MAX_FIELD_CHARS)
    clean_resolution = _clean_text(resolution, "resolution", required=False, limit=settings.ULTRON_MAX_FIELD_CHARS)
    clean_tags = _clean_tags(tags)
    counts: Counter = Counter()
    results = redact_many([clean_content, clean_context, clean_resolution, *clean_tags])
    for result in results:
        counts.update(result.counts)
    fields = [r.text for r in results[:3]]
    redacted_tags = [r.text for r in results[3:]]
    redacted_tags = tags_normalise(redacted_tags)
    return CleanMemory(fields[0], fields[1], fields[2], redacted_tags, counts)
