"""Reads of the ingestion service."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import Count, Q

from ingestion.models import IngestJob, SegmentMemory, SessionRecord, TaskSegment, WorkState


def job_visible(*, job_id: Any, user: Any) -> IngestJob | None:
    """The ingest job, if ``user`` may see it: its own agent's, or any for curators."""
    job = IngestJob.objects.filter(pk=job_id).first()
    agent = getattr(user, "agent", None)
    if job is None or (not user.is_staff and job.agent_id != getattr(agent, "pk", None)):
        return None
    return job


def job_progress(*, job: IngestJob) -> dict[str, Any]:
    """Per-file progress of an ingest job: segmentation, scoring, extraction, errors."""
    ids = [f["session_id"] for f in job.files if f.get("session_id")]
    sessions = (
        SessionRecord.objects.filter(pk__in=ids)
        .annotate(
            n_segments=Count("segments", distinct=True),
            n_scored=Count("segments", filter=Q(segments__scoring=WorkState.DONE), distinct=True),
            n_eligible=Count("segments", filter=Q(segments__scoring=WorkState.DONE,
                                                  segments__extraction__in=[WorkState.PENDING, WorkState.FAILED,
                                                                            WorkState.PARKED])
                             | Q(segments__extracted_items__isnull=False, segments__score__isnull=False), distinct=True),
            n_extracted=Count("segments", filter=Q(segments__extraction=WorkState.DONE), distinct=True),
            n_failed=Count("segments", filter=Q(segments__scoring=WorkState.FAILED)
                           | Q(segments__extraction=WorkState.FAILED), distinct=True),
            n_parked=Count("segments", filter=Q(segments__scoring=WorkState.PARKED)
                           | Q(segments__extraction=WorkState.PARKED), distinct=True),
        )
    )
    by_id = {s.pk: s for s in sessions}
    memories = dict(
        SegmentMemory.objects.filter(segment__session_id__in=ids).values_list("segment__session_id")
        .annotate(n=Count("memory_id", distinct=True))
    )
    # Segments with an error, all sessions in one query (at most 20 shown per file).
    failing: dict[int, list[TaskSegment]] = {}
    for segment in (TaskSegment.objects.filter(session_id__in=ids).exclude(last_error="")
                    .only("session_id", "index", "attempts", "last_error", "scoring", "extraction")
                    .order_by("session_id", "index")):
        failing.setdefault(segment.session_id, []).append(segment)
    # Finished segments that gave no memory, with the first reason the pipeline recorded.
    quiet: dict[int, list[dict[str, Any]]] = {}
    for segment in (TaskSegment.objects.filter(session_id__in=ids, extraction=WorkState.DONE, memory_links__isnull=True)
                    .only("pk", "session_id", "index", "topic", "notes", "score").order_by("session_id", "index")):
        entries = quiet.setdefault(segment.session_id, [])
        if len(entries) < 20:
            entries.append({"segment_id": segment.pk, "index": segment.index, "topic": segment.topic,
                            "score": segment.score, "reason": segment_outcome(segment)})
    files = []
    totals = {"segments": 0, "scored": 0, "extracted": 0, "memories": 0, "errors": 0, "parked": 0}
    for item in job.files:
        entry = {"name": item["name"], "status": item["status"], "session_id": item.get("session_id")}
        session = by_id.get(item.get("session_id"))
        if session is not None:
            errors = []
            if session.last_error:
                errors.append({"stage": "segmentation", "attempts": session.attempts, "error": session.last_error})
            for segment in failing.get(session.pk, [])[:20]:
                errors.append({"stage": f"segment {segment.index}", "attempts": segment.attempts,
                               "error": segment.last_error,
                               "parked": WorkState.PARKED in (segment.scoring, segment.extraction)})
            entry.update(
                segmentation=session.segmentation,
                segments=session.n_segments, scored=session.n_scored, extracted=session.n_extracted,
                memories=memories.get(session.pk, 0), failed=session.n_failed, parked=session.n_parked,
                errors=errors, without_memory=quiet.get(session.pk, []),
            )
            totals["segments"] += session.n_segments
            totals["scored"] += session.n_scored
            totals["extracted"] += session.n_extracted
            totals["memories"] += memories.get(session.pk, 0)
            totals["errors"] += len(errors)
            totals["parked"] += session.n_parked + (session.segmentation == WorkState.PARKED)
        files.append(entry)
    pending = any(
        f.get("segmentation") in (WorkState.PENDING, WorkState.FAILED)
        or (f.get("segments", 0) and f.get("extracted", 0) + f.get("parked", 0) < f.get("segments", 0)
            and f.get("scored", 0) < f.get("segments", 0))
        for f in files
    )
    return {"job_id": str(job.pk), "created_at": job.created_at, "done": not pending, **totals, "files": files}


_WORD_RE = re.compile(r"[^\W\d_]{3,}|[\u3400-\u9fff]{2}")
SOURCE_SHARE = 0.25  # of a memory's distinct words a message must hold to be named its source
SOURCE_LIMIT = 3


def _words(text: str) -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # loaded already where the hub redacts

    return {w for w in (m.lower() for m in _WORD_RE.findall(text)) if w not in STOP_WORDS}


def source_messages(messages: list[dict[str, Any]], texts: list[str]) -> list[int]:
    """The positions of the messages a memory came from, best first: those holding the largest
    share of its words (at least ``SOURCE_SHARE``, and half the best message's), at most
    ``SOURCE_LIMIT``. Extraction keeps the words of the error, the fix and the correction it
    read, so the messages that hold most of them are where the lesson was lived."""
    wanted = _words(" ".join(texts))
    if not wanted:
        return []
    shares = [(len(wanted & _words(str(m.get("text") or ""))) / len(wanted), i) for i, m in enumerate(messages)]
    best = max((share for share, _ in shares), default=0.0)
    chosen = sorted(((s, i) for s, i in shares if s >= SOURCE_SHARE and s >= best / 2), reverse=True)
    return [i for _, i in chosen[:SOURCE_LIMIT]]


def memory_source_messages(*, segment: TaskSegment, memory_id: Any, space_ids: list[int] | None) -> list[int]:
    """``source_messages`` for a memory the segment gave (and the caller's spaces hold); none else."""
    from django.core.exceptions import ValidationError

    from memories.models import Memory

    try:
        memory = (_in_spaces(Memory.objects.filter(pk=memory_id, segment_links__segment=segment), space_ids)
                  .values("content", "context", "resolution").first())
    except (ValueError, ValidationError):  # not a memory's id
        return []
    if memory is None:
        return []
    return source_messages(segment.messages, [memory["content"], memory["context"], memory["resolution"]])


def segment_outcome(segment: TaskSegment) -> str:
    """Why a finished segment gave no memory, in one line: the first note the pipeline kept (the
    later ones are on the segment's page)."""
    if segment.notes:
        return str(segment.notes[0]) + (f" (+{len(segment.notes) - 1} more)" if len(segment.notes) > 1 else "")
    return "no reason recorded (processed before reasons were kept)"


def segments_for_training(
    *, min_score: float, task_type: str | None = None, since: datetime | None = None,
    space_ids: list[int] | None = None,
) -> Iterator[TaskSegment]:
    """Scored segments at or above ``min_score`` (of ``task_type``, created at or after
    ``since``, of ``space_ids``: None for every space the connection's scope reads), oldest
    first, read from the database in chunks (an export can be large)."""
    queryset = TaskSegment.objects.filter(score__gte=min_score)
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    if task_type:
        queryset = queryset.filter(task_type=task_type)
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    return queryset.only("pk", "messages").order_by("created_at", "pk").iterator(chunk_size=100)


def _in_spaces(queryset: Any, space_ids: list[int] | None) -> Any:
    """``queryset`` narrowed to ``space_ids`` (None: every space the connection's scope reads)."""
    return queryset if space_ids is None else queryset.filter(space_id__in=space_ids)


def work_state_counts(*, space_ids: list[int] | None = None) -> dict[str, dict[str, int]]:
    """How many sessions wait for (or failed) segmentation, and segments for scoring and
    extraction, by work state: ``{"sessions": {state: n}, "scoring": ..., "extraction": ...}``."""
    def by_state(queryset: Any, field: str) -> dict[str, int]:
        return dict(_in_spaces(queryset, space_ids).values_list(field).annotate(n=Count("pk")).order_by())

    return {
        "sessions": by_state(SessionRecord.objects.all(), "segmentation"),
        "scoring": by_state(TaskSegment.objects.all(), "scoring"),
        "extraction": by_state(TaskSegment.objects.all(), "extraction"),
    }


def jobs_recent(*, limit: int, space_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """The newest ingest jobs of ``space_ids`` with their progress (``job_progress``)."""
    jobs = _in_spaces(IngestJob.objects.select_related("agent"), space_ids).order_by("-created_at")[:limit]
    return [{"job": job, "progress": job_progress(job=job)} for job in jobs]


def segments_parked_count(*, space_ids: list[int] | None = None) -> int:
    """Segments a pipeline step gave up on after its retries: they wait for a person."""
    return _in_spaces(TaskSegment.objects.filter(Q(scoring=WorkState.PARKED) | Q(extraction=WorkState.PARKED)),
                      space_ids).count()
