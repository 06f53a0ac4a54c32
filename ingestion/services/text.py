"""Plain text: extract memories from it and upload them through the memory funnel (one batch),
while the caller waits."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents.models import Agent, Space
from agents.selectors import space_or_shared
from core import errors
from ingestion.judgements import extract
from ingestion.models import RawUpload
from ingestion.services.accept import IngestError, raw_archive
from memories import services as memory_services
from memories.models import Source
from memories.redaction.policy import Occasion, redact_one_for

logger = logging.getLogger("ultron.ingestion")


@dataclass
class TextIngestResult:
    raw: RawUpload
    uploads: list[memory_services.UploadResult]
    extractor: str


def text_ingest(*, agent: Agent | None, text: Any, space: Space | int | None = None) -> TextIngestResult:
    """Extract memories from plain text and upload them through the memory funnel, as one batch,
    into ``space`` (default: the shared space)."""
    space_id = space_or_shared(space)
    if not isinstance(text, str) or not text.strip():
        raise IngestError("text is required and must not be blank", field="text")
    # Checked before redaction, which is the costly part: a refused text costs nothing.
    if len(text) > settings.ULTRON_INGEST_MAX_TEXT_CHARS:
        raise IngestError(f"text is longer than {settings.ULTRON_INGEST_MAX_TEXT_CHARS} characters", code=errors.TOO_LARGE,
                          field="text")
    # Redacted once: the archive keeps this text, and extraction reads it.
    clean = redact_one_for(Occasion.TEXT, text).text
    raw = raw_archive(kind=RawUpload.Kind.TEXT, name="ingest_text", agent=agent, data=text.encode("utf-8"),
                      metadata={}, redacted_text=clean, space_id=space_id)
    items, extractor = extract.text_extract(clean)
    results = memory_services.memories_upload(
        items=[{"content": item.content, "context": item.context, "resolution": item.resolution, "tags": item.tags,
                "memory_type": item.memory_type or None, "provenance": {"raw_upload": raw.pk}} for item in items],
        agent=agent, source=Source.INGEST_TEXT, space=space_id,
    )
    uploads = []
    for result in results:
        if isinstance(result, memory_services.MemoryInputError):
            logger.info("ingest_text: skipped an extracted item: %s", result)
        else:
            uploads.append(result)
    return TextIngestResult(raw, uploads, extractor)
