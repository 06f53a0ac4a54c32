"""The pipeline's steps over sessions: segmentation into task segments, scoring, and the
extraction of memories from eligible segments (docs/flow.md#ingestion). Each step claims its
items (``work.claim``) and records failures for a retry (``work.attempt_failed``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from ingestion.judgements import extract, score
from ingestion.judgements.segmentation import fingerprint, segment
from ingestion.models import (
    RawChunk,
    RawUpload,
    SegmentMemory,
    SessionRecord,
    TaskSegment,
    WorkState,
)
from ingestion.parsing import Message, parse_jsonl
from ingestion.services.accept import ARCHIVE_PENDING, archive_redact, raw_bytes
from ingestion.services.work import LEASE_LOST, attempt_failed, claim, work_done
from memories import services as memory_services
from memories.models import Memory, Source, Status
from memories.redaction.policy import Occasion, redact_for

logger = logging.getLogger("ultron.ingestion")

_SEGMENT_MESSAGE_CHARS = 4000  # what of each message is kept (redacted) for the pipeline


def _redacted_messages(messages: list[Message]) -> list[Message]:
    """Every text a segment keeps goes through redaction: the messages and the targets of their
    tool calls (a command line can carry a token as easily as a message)."""
    calls = [call for m in messages for call in getattr(m, "calls", None) or [] if call.get("target")]
    texts = [m.text[:_SEGMENT_MESSAGE_CHARS] for m in messages] + [str(c["target"]) for c in calls]
    results = redact_for(Occasion.SESSION, texts)
    for message, result in zip(messages, results[: len(messages)], strict=True):
        message.text = result.text
    for call, result in zip(calls, results[len(messages) :], strict=True):
        call["target"] = result.text
    return messages


def session_segment(*, session_id: int) -> bool:
    """Segment one session; keep segments whose fingerprint survives, add new ones, drop the
    rest and archive the memories that came only from them. False if it failed (recorded)."""
    session = SessionRecord.objects.select_related("raw").get(pk=session_id)
    try:
        if session.raw is None:
            raise FileNotFoundError("the session has no raw upload to segment")
        # Everything slow (redaction, the LLM, the archive's redaction) runs before the transaction below,
        # which only writes and holds the session's row lock briefly.
        data = raw_bytes(session.raw)
        parsed = parse_jsonl(data)
        messages = _redacted_messages(parsed.messages)
        spans = segment(messages)
        # The archive's redacted text, left to this step by the upload (it takes seconds per MB).
        archive_text = archive_redact(data) if session.raw.metadata.get("archive") == ARCHIVE_PENDING else None
    except Exception as exc:  # LLM failures, missing bytes, anything: recorded, retried, never lost
        attempt_failed(SessionRecord, session_id, "segmentation", exc, lease=session.lease_until)
        return False
    with transaction.atomic():
        lease = session.lease_until
        session = SessionRecord.objects.select_for_update().get(pk=session_id)
        if session.lease_until != lease:  # another worker took it over (our lease ran out)
            logger.warning(LEASE_LOST, "SessionRecord", session_id)
            return False
        existing = {s.fingerprint: s for s in session.segments.all()}
        keep: set[int] = set()
        for index, span in enumerate(spans):
            part = messages[span.start : span.end]
            digest = fingerprint(part)
            segment_row = existing.get(digest)
            if segment_row is not None:
                if segment_row.pk in keep:
                    continue  # the same segment twice in one session: keep one
                keep.add(segment_row.pk)
                # A kept segment keeps its score and extraction state (flow.md#re-ingestion); only its place moves.
                TaskSegment.objects.filter(pk=segment_row.pk).update(
                    index=index, start_message=span.start, end_message=span.end)
            else:
                created = TaskSegment.objects.create(
                    space_id=session.space_id, session=session, index=index, start_message=span.start, end_message=span.end,
                    topic=span.topic[:200], fingerprint=digest, messages=[m.as_dict() for m in part],
                )
                existing[digest] = created
                keep.add(created.pk)
        gone = [s.pk for s in existing.values() if s.pk not in keep]
        # Before the delete: the provenance links saying which memories came only from these segments go
        # with them (SegmentMemory cascades).
        archived = _archive_orphans(gone) if gone else 0
        TaskSegment.objects.filter(pk__in=gone).delete()
        session.segmented_sha256 = session.sha256
        work_done(session, "segmentation", ["segmented_sha256"])
        raw = session.raw
        if raw is not None and archive_text is not None:
            RawUpload.objects.filter(pk=raw.pk).update(
                content=archive_text.encode("utf-8"), redacted=True, metadata={**raw.metadata, "archive": "redacted"})
        if raw is not None:
            # The original bytes were only waiting for this; the archive keeps what it keeps.
            RawChunk.objects.filter(raw=raw).delete()
        if raw is not None and raw.spool_path:  # a spool file an older hub wrote
            spool = raw.spool_path
            RawUpload.objects.filter(pk=raw.pk).update(spool_path="")
            # Only once the commit stands: a rollback leaves the row pointing at a spool file that still exists.
            transaction.on_commit(lambda: Path(spool).unlink(missing_ok=True))
    logger.info("session %s: %d segments, %d removed, %d memories archived", session_id, len(spans), len(gone), archived)
    return True


def _archive_orphans(segment_ids: list[int]) -> int:
    """Archive memories that came only from these (disappearing) segments."""
    memory_ids = set(SegmentMemory.objects.filter(segment_id__in=segment_ids).values_list("memory_id", flat=True))
    archived = 0
    for memory_id in memory_ids:
        if SegmentMemory.objects.filter(memory_id=memory_id).exclude(segment_id__in=segment_ids).exists():
            continue  # another live segment produced it too
        memory = Memory.objects.defer("embedding").filter(pk=memory_id, status=Status.ACTIVE).first()
        if memory is None:
            continue
        if memory.source != Source.SEGMENT or memory.contributions.exclude(source=Source.SEGMENT).exists():
            continue  # an agent or a curator contributed it directly
        memory_services.memory_archive(memory_id=memory_id)
        archived += 1
    return archived


def sessions_segment(*, limit: int | None = None) -> dict[str, int]:
    ids = claim(SessionRecord.objects.filter(segmentation__in=[WorkState.PENDING, WorkState.FAILED]),
                 limit or settings.ULTRON_PIPELINE_BATCH)
    done = sum(1 for pk in ids if session_segment(session_id=pk))
    return {"claimed": len(ids), "segmented": done, "failed": len(ids) - done}


# --- scoring ----------------------------------------------------------------------------------


def _messages(segment_row: TaskSegment) -> list[Message]:
    return [Message.from_dict(m) for m in segment_row.messages]


def segment_score(*, segment_id: int) -> bool:
    segment_row = TaskSegment.objects.get(pk=segment_id)
    seen: list[str] = []  # what the offline scorer considered and refused
    try:
        metrics = score.score_segment(_messages(segment_row), seen)
    except Exception as exc:
        attempt_failed(TaskSegment, segment_id, "scoring", exc, lease=segment_row.lease_until)
        return False
    segment_row.metrics = metrics.as_dict()
    segment_row.score = metrics.score
    segment_row.task_type = metrics.task_type
    extra = ["metrics", "score", "task_type"]
    minimum = settings.ULTRON_SEGMENT_MIN_SCORE
    eligible = metrics.score >= minimum
    if not eligible:
        segment_row.extraction = WorkState.DONE  # not eligible: nothing to extract
        segment_row.extracted_items = []
        found = "; ".join(metrics.reasons) if metrics.reasons else "no error fixed, no fix or how-to the user " \
            "confirmed, no correction, rule or preference"
        segment_row.notes = [f"not eligible for extraction: score {metrics.score:.2f} is below {minimum:.2f} "
                             f"(found: {found})", *seen]
        extra += ["extraction", "extracted_items", "notes"]
    logger.info("segment %s scored %.2f (%s)%s", segment_id, metrics.score, "; ".join(metrics.reasons) or "no evidence",
                "" if eligible else f", not eligible; refused: {' | '.join(seen) or 'nothing'}")
    return work_done(segment_row, "scoring", extra)


def segments_score(*, limit: int | None = None, session_id: int | None = None) -> dict[str, int]:
    queryset = TaskSegment.objects.filter(scoring__in=[WorkState.PENDING, WorkState.FAILED])
    if session_id is not None:
        queryset = queryset.filter(session_id=session_id)
    ids = claim(queryset, limit or settings.ULTRON_PIPELINE_BATCH)
    done = sum(1 for pk in ids if segment_score(segment_id=pk))
    return {"claimed": len(ids), "scored": done, "failed": len(ids) - done}


# --- extraction -------------------------------------------------------------------------------


def segment_extract(*, segment_id: int) -> bool:
    """Extract memories from an eligible segment and upload each, exactly once.

    The extracted items are stored before any upload; each upload and its provenance link
    commit together, so a crash at any point resumes without losing or doubling a memory.
    """
    segment_row = TaskSegment.objects.select_related("session", "session__agent").get(pk=segment_id)
    try:
        if segment_row.extracted_items is None:
            considered: list[str] = []
            items = extract.extract(_messages(segment_row), topic=segment_row.topic,
                                     task_type=segment_row.task_type or "conversation", notes=considered)
            segment_row.extracted_items = [item.as_dict() for item in items]
            segment_row.notes = considered if items else [
                "nothing extracted" + ("; what was considered:" if considered else ": no candidate lesson found"), *considered]
            segment_row.save(update_fields=["extracted_items", "notes"])
            logger.info("segment %s: %d memories extracted%s", segment_id, len(items),
                        f"; refused: {' | '.join(considered)}" if considered else "")
        session = segment_row.session
        done_items = set(SegmentMemory.objects.filter(segment=segment_row).values_list("item_index", flat=True))
        # Items already linked were uploaded by an earlier attempt; a refused item would be refused again.
        pending = [(index, item) for index, item in enumerate(segment_row.extracted_items)
                   if index not in done_items and not item.get("skipped")]
        uploads = []
        for index, item in pending:
            extracted = extract.Extracted.from_dict(item)
            uploads.append({
                "content": extracted.content, "context": extracted.context, "resolution": extracted.resolution,
                "tags": extracted.tags, "memory_type": extracted.memory_type or None,
                "provenance": {"session": session.pk, "segment": segment_row.pk, "item": index},
            })
        # One batch; each memory and its provenance link commit together (the hook runs inside
        # the transaction that stored the memory).
        results = memory_services.memories_upload(
            items=uploads, agent=session.agent, source=Source.SEGMENT, space=session.space_id,
            on_stored=lambda position, result: SegmentMemory.objects.create(
                space_id=session.space_id, segment=segment_row, memory=result.memory,
                item_index=pending[position][0]),
        )
        refused = [(index, item, result) for (index, item), result in zip(pending, results, strict=True)
                   if isinstance(result, memory_services.MemoryInputError)]
        for index, item, error in refused:
            segment_row.extracted_items[index] = {**item, "skipped": str(error)[:300]}
            segment_row.notes = [*segment_row.notes, f"item {index} refused by the upload: {str(error)[:300]}"]
            logger.info("segment %s: item %s refused by the upload: %s", segment_id, index, error)
        if refused:
            segment_row.save(update_fields=["extracted_items", "notes"])
    except Exception as exc:
        attempt_failed(TaskSegment, segment_id, "extraction", exc, lease=segment_row.lease_until)
        return False
    return work_done(segment_row, "extraction", [])


def segments_extract(*, limit: int | None = None, session_id: int | None = None) -> dict[str, int]:
    queryset = TaskSegment.objects.filter(
        scoring=WorkState.DONE, score__gte=settings.ULTRON_SEGMENT_MIN_SCORE,
        extraction__in=[WorkState.PENDING, WorkState.FAILED],
    )
    if session_id is not None:
        queryset = queryset.filter(session_id=session_id)
    ids = claim(queryset, limit or settings.ULTRON_PIPELINE_BATCH)
    done = sum(1 for pk in ids if segment_extract(segment_id=pk))
    return {"claimed": len(ids), "extracted": done, "failed": len(ids) - done}


def session_process(*, session_id: int) -> dict[str, Any]:
    """Right after ingestion: segment the session, then score and extract its segments."""
    # Claimed like any work item, so that this task and the scheduled pipeline never segment one session
    # at the same time.
    segmented = session_segment(session_id=session_id) if claim(
        SessionRecord.objects.filter(pk=session_id, segmentation__in=[WorkState.PENDING, WorkState.FAILED]), 1
    ) else False
    return {
        "segmented": segmented,
        "scoring": segments_score(session_id=session_id, limit=10_000),
        "extraction": segments_extract(session_id=session_id, limit=10_000),
    }
