"""Storing a memory: the upload funnel every caller goes through (API, text and session
ingestion, curators). Validate and redact, classify, embed, then either merge into the
memory it duplicates or store it as new."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from agents.models import Agent
from memories import signals
from memories.judgements.classify import classify
from memories.judgements.prompts import llm_available
from memories.judgements.same_subject import same_subject
from memories.judgements.summarize import extractive_summaries
from memories.models import Memory, MemoryContribution, Source, Status, Tier
from memories.queue import enqueue_on_commit
from memories.selectors import DuplicateMatch, memory_find_duplicate
from memories.services.embedding_space import embed_texts
from memories.services.inputs import CleanMemory, memory_input_clean, tags_normalise
from memories.text import content_hash, embedding_text, memory_body


@dataclass
class UploadResult:
    memory: Memory
    merged: bool
    similarity: float | None = None
    match_reason: str | None = None
    redactions: Counter = field(default_factory=Counter)


def _dedup_lock_key(memory_type: str) -> int:
    digest = hashlib.sha256(f"ultron:dedup:{memory_type}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def memory_upload(
    *,
    content: Any,
    context: Any = "",
    resolution: Any = "",
    tags: Any = None,
    agent: Agent | None = None,
    source: str = Source.API,
    provenance: dict | None = None,
) -> UploadResult:
    """Store one memory, or merge it into the memory it duplicates (docs/flow.md#upload)."""
    clean = memory_input_clean(content=content, context=context, resolution=resolution, tags=tags)
    memory_type = classify(clean.content, clean.context, clean.resolution)
    body_hash = content_hash(clean.content, clean.context, clean.resolution)
    vector = embed_texts([embedding_text(memory_type, clean.content, clean.context, clean.resolution)])[0]
    provenance = provenance or {}

    verdicts: dict[Any, bool] = {}
    # Decide under a per-type advisory lock, so parallel uploads of one memory cannot both
    # insert. An LLM "same subject?" question is asked outside the lock; then decide again.
    for _ in range(4):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_dedup_lock_key(memory_type)])
            match = memory_find_duplicate(
                memory_type=memory_type, body_hash=body_hash, vector=vector, verdicts=verdicts,
                body=memory_body(clean.content, clean.context, clean.resolution),
            )
            if match is not None and match.reason != "ask":
                memory = _record_duplicate(match, clean, agent=agent, source=source, provenance=provenance)
                result = UploadResult(memory, True, match.similarity, match.reason, clean.redactions)
                break
            if match is None:
                # Extractive summaries now; an LLM (if any) rewrites them after commit.
                l0, l1 = extractive_summaries(clean.content, clean.context, clean.resolution)
                memory = Memory.objects.create(
                    content=clean.content,
                    context=clean.context,
                    resolution=clean.resolution,
                    tags=clean.tags,
                    memory_type=memory_type,
                    tier=Tier.WARM,
                    status=Status.ACTIVE,
                    hit_count=1,
                    last_hit_at=timezone.now(),
                    summary_l0=l0,
                    overview_l1=l1,
                    embedding=vector,
                    content_hash=body_hash,
                    agent=agent,
                    source=source,
                    provenance=provenance,
                    redaction_counts=dict(clean.redactions),
                )
                result = UploadResult(memory, False, None, None, clean.redactions)
                # Inside the transaction: if a receiver (cluster assignment) fails, the new
                # memory is not stored either.
                signals.memory_added.send(sender=Memory, memory_id=memory.pk)
                break
        # match.reason == "ask": the LLM decides, outside the lock, then we decide again.
        candidate = match.memory
        verdicts[candidate.pk] = same_subject(
            (clean.content, clean.context, clean.resolution),
            (candidate.content, candidate.context, candidate.resolution),
        )
    else:  # pragma: no cover - four rounds only if memories keep changing under us
        raise RuntimeError("duplicate check did not settle")

    _after_upload(result)
    return result


def _record_duplicate(
    match: DuplicateMatch, clean: CleanMemory, *, agent: Agent | None, source: str, provenance: dict
) -> Memory:
    """Count the hit, keep the upload as a contribution, union the tags (inside the lock)."""
    now = timezone.now()
    memory = Memory.objects.select_for_update().defer("embedding").get(pk=match.memory.pk)
    identical = match.reason == "exact"
    MemoryContribution.objects.create(
        memory=memory,
        agent=agent,
        content=clean.content,
        context=clean.context,
        resolution=clean.resolution,
        tags=clean.tags,
        similarity=match.similarity,
        match_reason=match.reason,
        source=source,
        provenance=provenance,
        redaction_counts=dict(clean.redactions),
        # An identical body has nothing to fold in; only its tags count.
        merged_at=now if identical else None,
    )
    update: dict[str, Any] = {"hit_count": F("hit_count") + 1, "last_hit_at": now, "updated_at": now}
    tags = tags_normalise(memory.tags + clean.tags)
    if tags != memory.tags:
        update["tags"] = tags
    if not identical:
        update["merge_pending"] = True
    if clean.redactions:
        counts = Counter(memory.redaction_counts)
        counts.update(clean.redactions)
        update["redaction_counts"] = dict(counts)
    Memory.objects.filter(pk=memory.pk).update(**update)
    return Memory.objects.defer("embedding").get(pk=memory.pk)


def _after_upload(result: UploadResult) -> None:
    if not llm_available():
        return
    memory_id = str(result.memory.pk)
    if not result.merged:
        enqueue_on_commit("memories.tasks.memory_summarize_task", memory_id)
    elif result.memory.merge_pending:
        enqueue_on_commit("memories.tasks.memory_merge_task", memory_id)
