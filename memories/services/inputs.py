"""Validating and redacting what a caller sends as a memory, before anything is stored."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from core.errors import ApplicationError
from memories.redaction.policy import Occasion, redact_for
from memories.screening.hidden import hidden_texts
from memories.text import normalise_tags


class MemoryInputError(ApplicationError):
    """Bad input for a memory operation; ``field`` names the offending field."""

    field: str

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


def tags_normalise(tags: list[str]) -> list[str]:
    """Tags in their stored form, within the hub's limits (``ULTRON_MAX_TAGS`` tags of at most
    ``ULTRON_MAX_TAG_CHARS`` characters)."""
    return normalise_tags(tags, max_tags=settings.ULTRON_MAX_TAGS, max_chars=settings.ULTRON_MAX_TAG_CHARS)


def _clean_text(value: Any, field_name: str, *, required: bool, limit: int) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise MemoryInputError(field_name, "must be a string")
    # PostgreSQL text cannot hold NUL: refused here, naming the field, instead of failing at the insert.
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
    # What the fields hide once decoded (base64, hex, Unicode tags, rot13), read before redaction
    # and redacted like them: (field, text), for the poisoning screen.
    hidden: list[tuple[str, str]] = field(default_factory=list)


def memory_input_clean(*, content: Any, context: Any = "", resolution: Any = "", tags: Any = None) -> CleanMemory:
    """Validate and redact the fields of a memory. Raises :class:`MemoryInputError`."""
    [clean] = memory_inputs_clean([{"content": content, "context": context, "resolution": resolution, "tags": tags}])
    if isinstance(clean, MemoryInputError):
        raise clean
    return clean


def memory_inputs_clean(items: list[dict[str, Any]]) -> list[CleanMemory | MemoryInputError]:
    """Validate and redact several memories' fields (``content``, ``context``, ``resolution``,
    ``tags`` of each dict) in one redaction pass: each item's cleaned form, or the error that
    names its bad field."""
    valid: list[tuple[str, str, str, list[str]] | MemoryInputError] = []
    for item in items:
        try:
            valid.append((
                _clean_text(item.get("content"), "content", required=True, limit=settings.ULTRON_MAX_CONTENT_CHARS),
                _clean_text(item.get("context"), "context", required=False, limit=settings.ULTRON_MAX_FIELD_CHARS),
                _clean_text(item.get("resolution"), "resolution", required=False,
                            limit=settings.ULTRON_MAX_FIELD_CHARS),
                _clean_tags(item.get("tags")),
            ))
        except MemoryInputError as exc:
            valid.append(exc)
    names = ("content", "context", "resolution")
    hidden = [[] if isinstance(fields, MemoryInputError) else
              [(name, text) for name, value in zip(names, fields[:3], strict=True) for text in hidden_texts(value)]
              for fields in valid]
    texts = [text for fields, found in zip(valid, hidden, strict=True) if not isinstance(fields, MemoryInputError)
             for text in (*fields[:3], *fields[3], *(t for _, t in found))]
    redacted = iter(redact_for(Occasion.MEMORY, texts))
    out: list[CleanMemory | MemoryInputError] = []
    for fields, found in zip(valid, hidden, strict=True):
        if isinstance(fields, MemoryInputError):
            out.append(fields)
            continue
        results = [next(redacted) for _ in range(3 + len(fields[3]))]
        decoded = [(name, next(redacted).text) for name, _ in found]
        counts: Counter = Counter()
        for result in results:
            counts.update(result.counts)
        out.append(CleanMemory(results[0].text, results[1].text, results[2].text,
                               tags_normalise([r.text for r in results[3:]]), counts, decoded))
    return out
