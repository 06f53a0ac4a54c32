"""Merging: folding duplicate uploads into their memory (with an LLM), regenerating
summaries, and consolidating near-duplicate pairs left over."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories import signals
from memories.judgements import merge as merge_judgement
from memories.judgements.duplicate import duplicate_decide
from memories.judgements.prompts import llm_available
from memories.judgements.summarize import summarize
from memories.models import Memory, MemoryContribution, Status
from memories.selectors import memory_pairs_near_duplicate
from memories.services.candidates import (
    memory_fold,
    merge_candidate_for_pair,
    merge_candidate_record,
)
from memories.services.embedding_space import embed_texts
from memories.services.inputs import MemoryInputError, memory_input_clean, tags_normalise
from memories.text import content_hash, embedding_text, memory_body

logger = logging.getLogger("ultron.memories")


def memory_summarize(*, memory_id: Any) -> bool:
    """Regenerate L0/L1 from the current body (LLM, else extractive). False if it changed meanwhile."""
    memory = Memory.objects.defer("embedding").filter(pk=memory_id).first()
    if memory is None:
        return False
    # Stored below only if the body is still the one summarised: an edit or merge meanwhile made its own.
    l0, l1 = summarize(memory.content, memory.context, memory.resolution)
    updated = Memory.objects.filter(pk=memory.pk, content_hash=memory.content_hash).update(
        summary_l0=l0, overview_l1=l1, updated_at=timezone.now()
    )
    return bool(updated)


def memory_merge_contributions(*, memory_id: Any) -> bool:
    """Fold a memory's unmerged contributions into it with the LLM (docs/flow.md#merging).

    Returns True when the memory has nothing left to merge. Without an LLM, or when it fails,
    the memory keeps its text and stays ``merge_pending`` for a later retry.
    """
    # Archived or deleted meanwhile: nothing is left to merge, and True stops the retries.
    memory = Memory.objects.defer("embedding").filter(pk=memory_id, status=Status.ACTIVE).first()
    if memory is None:
        return True
    pending = list(memory.contributions.filter(merged_at__isnull=True).order_by("created_at"))
    if not pending:
        if memory.merge_pending:
            Memory.objects.filter(pk=memory.pk).update(merge_pending=False)
        return True
    merged = merge_judgement.merge(
        (memory.content, memory.context, memory.resolution),
        [(c.content, c.context, c.resolution) for c in pending],
        memory.tags,
    )
    if merged is None:
        if not memory.merge_pending:
            Memory.objects.filter(pk=memory.pk).update(merge_pending=True)
        return False
    # The model only saw redacted text, but what it writes is checked like any other input.
    try:
        clean = memory_input_clean(
            content=merged.content,
            context=merged.context,
            resolution=merged.resolution,
            tags=tags_normalise(memory.tags + merged.tags),
        )
    except MemoryInputError as exc:
        logger.warning("merge of %s rejected: %s", memory.pk, exc)
        return False
    new_hash = content_hash(clean.content, clean.context, clean.resolution)
    body_changed = new_hash != memory.content_hash
    update: dict[str, Any] = {"tags": clean.tags, "merge_pending": False, "updated_at": timezone.now()}
    if body_changed:
        # The LLM and the model are slow: both run before the transaction, whose write checks that the body
        # did not change meanwhile.
        l0, l1 = summarize(clean.content, clean.context, clean.resolution)
        vector = embed_texts([embedding_text(clean.content, clean.context, clean.resolution)])[0]
        update.update(
            content=clean.content, context=clean.context, resolution=clean.resolution,
            content_hash=new_hash, summary_l0=l0, overview_l1=l1, embedding=vector,
        )
    with transaction.atomic():
        # Apply only if nobody changed the body while the model was thinking.
        updated = Memory.objects.filter(pk=memory.pk, content_hash=memory.content_hash).update(**update)
        if not updated:
            return False
        MemoryContribution.objects.filter(pk__in=[c.pk for c in pending]).update(merged_at=timezone.now())
        # Contributions that arrived while the model was writing were not in its prompt: they keep it pending.
        still_pending = memory.contributions.filter(merged_at__isnull=True).exists()
        if still_pending:
            Memory.objects.filter(pk=memory.pk).update(merge_pending=True)
        if body_changed:
            # A new body has a new vector: the cluster side takes the old one out of the centroid, puts the new in.
            signals.memory_changed.send(sender=Memory, memory_id=memory.pk)
    return not still_pending


def memories_merge_retry(*, limit: int = 100) -> dict[str, int]:
    """Retry the merge of memories left ``merge_pending`` (the scheduled pipeline step)."""
    if not llm_available():
        # Without an LLM nobody can write the merged text: the step only reports how many wait (flow.md).
        pending = Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).count()
        return {"attempted": 0, "merged": 0, "pending": pending}
    ids = list(
        Memory.objects.filter(status=Status.ACTIVE, merge_pending=True)
        .order_by("updated_at").values_list("pk", flat=True)[:limit]
    )
    merged = sum(1 for memory_id in ids if memory_merge_contributions(memory_id=memory_id))
    pending = Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).count()
    return {"attempted": len(ids), "merged": merged, "pending": pending}


def memories_consolidate(*, limit: int = 50) -> dict[str, int]:
    """Fold near-duplicate active pairs left over (e.g. from before a threshold change) into one
    memory: the newer becomes a contribution of the older and is archived; a pair whose
    details conflict becomes a merge candidate instead, and a pair already decided is left
    alone. Bounded per run; off unless ULTRON_CONSOLIDATION_ENABLED."""
    if not settings.ULTRON_CONSOLIDATION_ENABLED:
        return {"enabled": 0, "merged": 0, "candidates": 0}
    merged = candidates = 0
    for keep_id, drop_id, similarity in memory_pairs_near_duplicate(limit=limit):
        # A pair already recorded, open or decided, is never proposed again (flow.md#merge-candidates).
        if merge_candidate_for_pair(keep_id, drop_id) is not None:
            continue
        pair = {m.pk: m for m in Memory.objects.defer("embedding").filter(pk__in=[keep_id, drop_id])}
        if len(pair) != 2:
            continue
        keep: Any = pair[keep_id]  # read as a neighbour of ``drop``: similarity and exact added
        drop = pair[drop_id]
        keep.similarity, keep.exact = similarity, False
        # The upload's rule, without asking the LLM: a consolidation run must stay bounded.
        decided = duplicate_decide(body=memory_body(drop.content, drop.context, drop.resolution),
                                   neighbours=[keep], verdicts={}, ask_llm=False)
        if decided and decided[0].reason == "candidate":
            merge_candidate_record(memory=drop, match=decided[0])
            candidates += 1
        elif decided and memory_fold(keep_id=keep_id, drop_id=drop_id, similarity=similarity,
                                     reason="consolidated"):
            merged += 1
    return {"enabled": 1, "merged": merged, "candidates": candidates}
