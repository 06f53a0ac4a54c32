"""Storing a memory: the upload funnel every caller goes through (API, text and session
ingestion, curators). Validate and redact, embed, classify, then either merge into the
memory it duplicates or store it as new (with merge candidates when unsure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from agents.models import Agent, Space
from agents.selectors import space_or_shared
from core.locks import lock_class
from core.queue import enqueue_on_commit
from memories import signals
from memories.judgements.classify import TypeDecision, classify_decide
from memories.judgements.duplicate import CANDIDATES_PER_UPLOAD, DuplicateMatch, duplicate_decide
from memories.judgements.prompts import llm_available
from memories.judgements.same_subject import same_subject
from memories.judgements.summarize import extractive_summaries
from memories.models import (
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MemoryHold,
    MemoryType,
    MergeCandidate,
    Source,
    Status,
    Tier,
    TypeChange,
)
from memories.screening import MARK, Verdict
from memories.selectors import memory_duplicate_neighbours
from memories.selectors.duplicates import STRICT_SCAN_SETTING
from memories.services.candidates import merge_candidate_record
from memories.services.embedding_space import embed_texts
from memories.services.holds import WriteGate, hold_origin, hold_record, screen_items, write_gate
from memories.services.inputs import (
    CleanMemory,
    MemoryInputError,
    memory_input_clean,
    memory_inputs_clean,
    tags_normalise,
)
from memories.services.supersede import changes_check
from memories.services.types import type_review_record
from memories.services.uses import memory_uses_record
from memories.text import content_hash, embedding_text, memory_body


@dataclass
class UploadResult:
    memory: Memory
    merged: bool
    similarity: float | None = None
    match_reason: str | None = None
    redactions: Counter = field(default_factory=Counter)
    # A new memory that may duplicate another: the open merge candidates recorded for it.
    candidates: list[MergeCandidate] = field(default_factory=list)
    # A new memory that replaced older ones, or contradicts them (docs/flow.md#supersession).
    superseded: list[KnowledgeChange] = field(default_factory=list)
    conflicts: list[KnowledgeChange] = field(default_factory=list)
    # A new memory whose type the classifier was unsure of: its open review (docs/flow.md#the-review-queue).
    type_review: TypeChange | None = None
    # Held for a curator (docs/flow.md#screening): stored, served to nobody but its writer.
    hold: MemoryHold | None = None
    verdict: Verdict | None = None

    @property
    def held(self) -> bool:
        return self.hold is not None

    @property
    def candidate_of(self) -> Any:
        """The memory this new one may duplicate (the most similar open candidate), or None."""
        return self.candidates[0].duplicate_of_id if self.candidates else None


# The duplicate decision's lock is per space (core.locks).
_DEDUP_CLASS = lock_class("dedup")
# What other apps have every upload take with its own lock, in the same statement (see
# ``upload_lock_register``): label -> SELECT-list expression, run in order after the duplicate lock.
_UPLOAD_LOCKS: dict[str, str] = {}


def upload_lock_register(label: str, expression: str) -> None:
    """Have every upload evaluate ``expression`` (an advisory-lock call, a ``set_config``) in its
    first statement, right after taking the duplicate lock: an app that must lock before it acts
    on a new memory (the cluster side placing it) then needs no statement of its own for that,
    and the locks are always taken in one order. ``%(space)s`` in the expression is the upload's
    space id. Receivers of ``memory_added`` are told so
    (``locks_held=True``). ``label`` says what the lock is for; it is written into the statement
    as a SQL comment, so ``pg_stat_activity`` and the logs show it. Called from an
    ``AppConfig.ready()``; registering a label twice keeps the last expression."""
    if "*/" in label:
        raise ValueError("a lock's label must not close a SQL comment")
    _UPLOAD_LOCKS[label] = expression


def upload_locks() -> list[tuple[str, str]]:
    """Every lock an upload takes, in the order it takes them: (label, SQL expression)."""
    # Duplicates are decided within a space, so uploads to different spaces never wait for each
    # other; within a space one upload decides at a time. The graph holds every space's memories:
    # the duplicate check's neighbours in the upload's space are found by scanning on past the
    # others, in distance order (selectors.duplicates).
    return [("duplicate check: one upload of a space decides at a time, its scan in distance order",
             f"pg_advisory_xact_lock({_DEDUP_CLASS}, %(space)s), {STRICT_SCAN_SETTING}"), *_UPLOAD_LOCKS.items()]


def _upload_locks_take(cursor: Any, space_id: int) -> None:
    """The upload's first statement, one round trip: the locks of ``upload_locks()`` for its space,
    each with its label as a comment (``SELECT pg_advisory_xact_lock(…) /* duplicate check… */, …``)."""
    cursor.execute("SELECT " + ", ".join(f"{sql} /* {label} */" for label, sql in upload_locks()),
                   {"space": space_id})


# At most this many memories are cleaned, embedded and checked together (an API batch's limit).
UPLOAD_BATCH_MAX = 100

StoredHook = Callable[[int, UploadResult], object]


def memory_upload(
    *,
    content: Any,
    context: Any = "",
    resolution: Any = "",
    tags: Any = None,
    agent: Agent | None = None,
    source: str = Source.API,
    provenance: dict | None = None,
    memory_type: str | None = None,
    space: Space | int | None = None,
) -> UploadResult:
    """Store one memory in ``space`` (default: the shared space), or merge it into the memory of
    that space it duplicates (docs/flow.md#upload).

    ``memory_type`` is for callers that know the kind from how they found the memory (the
    session extractor knows an error chain from a stated preference); otherwise it is classified.
    """
    clean = memory_input_clean(content=content, context=context, resolution=resolution, tags=tags)
    space_id = space_or_shared(space)
    gate = write_gate(space_id=space_id, agent=agent)
    vector = embed_texts([embedding_text(clean.content, clean.context, clean.resolution)])[0]
    [verdict] = screen_items([_screened(clean)], gate, vectors=[vector])
    return _funnel(clean, vector, memory_type, agent=agent, source=source, provenance=provenance or {},
                   space_id=space_id, screen=verdict, gate=gate)


def _screened(clean: CleanMemory) -> dict[str, Any]:
    return {"content": clean.content, "context": clean.context, "resolution": clean.resolution, "tags": clean.tags,
            "hidden": clean.hidden}


def memories_upload(
    *,
    items: list[dict[str, Any]],
    agent: Agent | None = None,
    source: str = Source.API,
    on_stored: StoredHook | None = None,
    space: Space | int | None = None,
) -> list[UploadResult | MemoryInputError]:
    """Store several memories (docs/flow.md#batch-upload): each item a dict of
    ``memory_upload``'s fields (``content``, ``context``, ``resolution``, ``tags``, and for
    internal callers ``memory_type`` and ``provenance``).

    Up to ``UPLOAD_BATCH_MAX`` items at a time share one redaction pass and one embedding batch;
    then each is checked for duplicates and stored in order, in its own transaction, so an item
    that repeats an earlier one of the same batch merges into it. The result for each item, in
    order, is its :class:`UploadResult` or the :class:`MemoryInputError` that refused it (the
    others are stored all the same). ``on_stored(index, result)`` runs inside the transaction
    that stored the item at ``index``: a caller's own record of it commits, or not, with it.
    """
    out: list[UploadResult | MemoryInputError] = []
    space_id = space_or_shared(space)
    gate = write_gate(space_id=space_id, agent=agent)
    for start in range(0, len(items), UPLOAD_BATCH_MAX):
        chunk = items[start : start + UPLOAD_BATCH_MAX]
        cleaned = memory_inputs_clean(chunk)
        valid = [clean for clean in cleaned if isinstance(clean, CleanMemory)]
        embedded = embed_texts([embedding_text(c.content, c.context, c.resolution) for c in valid]) if valid else []
        screens = iter(screen_items([_screened(c) for c in valid], gate, vectors=embedded) if valid else [])
        vectors = iter(embedded)
        for offset, (item, clean) in enumerate(zip(chunk, cleaned, strict=True)):
            if isinstance(clean, MemoryInputError):
                out.append(clean)
                continue
            index = start + offset
            # index=index binds this item's position now: a plain closure would see the loop's last value.
            hook = (lambda result, index=index: on_stored(index, result)) if on_stored else None
            out.append(_funnel(clean, next(vectors), item.get("memory_type"), agent=agent, source=source,
                               provenance=item.get("provenance") or {}, on_stored=hook, space_id=space_id,
                               screen=next(screens), gate=gate))
    return out


def _funnel(
    clean: CleanMemory, vector: list[float], memory_type: str | None, *, agent: Agent | None, source: str,
    provenance: dict, space_id: int, screen: Verdict, gate: WriteGate,
    on_stored: Callable[[UploadResult], object] | None = None,
) -> UploadResult:
    """Classify (unless the type is given); a memory the screen flagged, or that a reviewed
    writer sent, is stored held; any other merges into its duplicate or is stored as new."""
    decision: TypeDecision | None = None
    if memory_type not in MemoryType.values:
        decision = classify_decide(clean.content, clean.context, clean.resolution, vector=vector)
        memory_type = decision.memory_type
    body_hash = content_hash(clean.content, clean.context, clean.resolution)
    body = memory_body(clean.content, clean.context, clean.resolution)
    origin = hold_origin(screen, gate)
    if origin is not None:
        # Held: merged with nothing, in no cluster, no candidate of anything, until a curator approves it.
        with transaction.atomic():
            result = _store_new(clean, memory_type, vector, body_hash, agent=agent, source=source,
                                provenance=provenance, space_id=space_id, status=Status.HELD)
            reasons = screen.reasons()
            if origin == "writer":
                reasons.insert(0, {"rule": "trust", "label": "its writer's memories are reviewed before they are served",
                                   "field": "", "start": 0, "end": 0, "text": "", "severity": "hold"})
            result.hold = hold_record(memory=result.memory, origin=origin, reasons=reasons)
            result.verdict = screen
            if on_stored:
                on_stored(result)
        return result
    flags = [reason for reason in screen.reasons() if reason["severity"] == MARK]

    verdicts: dict[Any, bool | None] = {}
    asked: dict[Any, DuplicateMatch] = {}
    # Decide under an advisory lock, so parallel uploads of one memory cannot both insert. An LLM "same subject?" question is asked outside the lock; then decide again.
    # One round per LLM question (at most CANDIDATES_PER_UPLOAD) plus the deciding one, with room for
    # neighbours that change between rounds.
    for _ in range(CANDIDATES_PER_UPLOAD + 3):
        with transaction.atomic():
            with connection.cursor() as cursor:
                _upload_locks_take(cursor, space_id)
            neighbours = memory_duplicate_neighbours(body_hash=body_hash, vector=vector, space_id=space_id,
                                                     scan_set=True)
            found = duplicate_decide(body=body, neighbours=neighbours, verdicts=verdicts)
            match = found[0] if found else None
            if match is not None and match.reason not in ("ask", "candidate"):
                memory = _record_duplicate(match, clean, agent=agent, source=source, provenance=provenance)
                result = UploadResult(memory, True, match.similarity, match.reason, clean.redactions)
                if on_stored:
                    on_stored(result)
                break
            if match is None or match.reason == "candidate":
                result = _store_new(clean, memory_type, vector, body_hash, agent=agent, source=source,
                                    provenance=provenance, space_id=space_id, screen_flags=flags)
                result.verdict = screen
                # A type the classifier was unsure of is stored all the same and waits for a curator.
                if decision is not None:
                    result.type_review = type_review_record(memory=result.memory, decision=decision)
                # Does the new memory replace or contradict one of its neighbours? A memory it
                # replaced is no merge candidate: it is no longer current. (One it contradicts
                # stays one, answered as candidate_of; the review queue shows the pair once.)
                changes = changes_check(memory=result.memory, neighbours=neighbours)
                result.superseded, result.conflicts = changes.superseded, changes.conflicts
                replaced = {change.old_id for change in changes.superseded}
                for pk, verdict in verdicts.items():
                    if verdict is False and pk not in replaced:  # the LLM judged them distinct: kept as its decision
                        merge_candidate_record(memory=result.memory, match=asked[pk], llm_verdict=False)
                result.candidates = [
                    merge_candidate_record(memory=result.memory, match=m, llm_verdict=verdicts.get(m.memory.pk))
                    for m in found if m.memory.pk not in replaced
                ]
                # Clusters last: every writer takes the memory rows before the cluster row
                # (a candidate's foreign key locks the memory it names), or an edit of that
                # memory, holding it and waiting for the cluster, would deadlock with us.
                signals.memory_added.send(sender=Memory, memory_id=result.memory.pk, memory=result.memory,
                                          locks_held=True)
                if on_stored:
                    on_stored(result)
                break
        # match.reason == "ask": the LLM decides, outside the lock, then we decide again.
        existing = match.memory
        asked[existing.pk] = match
        verdicts[existing.pk] = same_subject(
            (clean.content, clean.context, clean.resolution),
            (existing.content, existing.context, existing.resolution),
            conflicts=list(match.conflicts),
        )
    else:  # pragma: no cover - only if memories keep changing under us
        raise RuntimeError("duplicate check did not settle")

    _after_upload(result)
    return result


def _store_new(
    clean: CleanMemory, memory_type: str, vector: list[float], body_hash: str, *, agent: Agent | None,
    source: str, provenance: dict, space_id: int, status: str = Status.ACTIVE, screen_flags: list | None = None,
) -> UploadResult:
    # Extractive summaries now; an LLM (if any) rewrites them after commit.
    l0, l1 = extractive_summaries(clean.content, clean.context, clean.resolution)
    memory = Memory.objects.create(
        space_id=space_id,
        content=clean.content,
        context=clean.context,
        resolution=clean.resolution,
        tags=clean.tags,
        memory_type=memory_type,
        tier=Tier.WARM,
        status=status,
        screen_flags=screen_flags or [],
        # A curator's own memory (a promotion) is vouched for by that curator.
        verified_by=_curator_of(source, provenance) if status == Status.ACTIVE else "",
        verified_at=timezone.now() if status == Status.ACTIVE and source == Source.CURATOR else None,
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
    # The caller sends memory_added inside this transaction: if a receiver (cluster assignment)
    # fails, the new memory is not stored either.
    return UploadResult(memory, False, None, None, clean.redactions)


def _curator_of(source: str, provenance: dict) -> str:
    if source != Source.CURATOR:
        return ""
    return str((provenance.get("promoted_from") or {}).get("by") or "curator")[:150]


def _record_duplicate(
    match: DuplicateMatch, clean: CleanMemory, *, agent: Agent | None, source: str, provenance: dict
) -> Memory:
    """Count the hit, keep the upload as a contribution, union the tags (inside the lock)."""
    now = timezone.now()
    # Row-locked so that a curator's edit or a merge of this memory waits for us; its vector is not needed.
    memory = Memory.objects.select_for_update().defer("embedding").get(pk=match.memory.pk)
    identical = match.reason == "exact"
    MemoryContribution.objects.create(
        space_id=memory.space_id,
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
    # The upload counts as a use of the memory like a read: once a day per agent, never its writer's own
    # repeat (memory_uses_record below), so one agent uploading it again and again does not rank it.
    update: dict[str, Any] = {"updated_at": now}
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
    memory_uses_record(ids=[memory.pk], reader_id=agent.pk if agent else None)
    return Memory.objects.defer("embedding").get(pk=memory.pk)


def _after_upload(result: UploadResult) -> None:
    # Without an LLM nothing is queued: summaries stay extractive, merges stay pending (flow.md#merging).
    if not llm_available():
        return
    from memories.tasks import (  # the tasks import this module
        change_judge_task,
        memory_merge_task,
        memory_summarize_task,
    )

    for change in result.conflicts:  # the LLM reads each conflict the offline rules could not order
        enqueue_on_commit(change_judge_task, change.pk)

    memory_id = str(result.memory.pk)
    # A new memory gets LLM summaries; a merged upload gets the LLM merge, unless it was exact (nothing
    # to fold in, merge_pending left unset).
    if not result.merged:
        enqueue_on_commit(memory_summarize_task, memory_id)
    elif result.memory.merge_pending:
        enqueue_on_commit(memory_merge_task, memory_id)
