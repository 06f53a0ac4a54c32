"""Reads of the ingestion service."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from ingestion.models import IngestJob, SegmentMemory, SessionRecord, WorkState


def job_progress(*, job: IngestJob) -> dict[str, Any]:
    """Per-file progress of an ingest job: segmentation, labelling, extraction, errors."""
    ids = [f["session_id"] for f in job.files if f.get("session_id")]
    sessions = (
        SessionRecord.objects.filter(pk__in=ids)
        .annotate(
            n_segments=Count("segments", distinct=True),
            n_labelled=Count("segments", filter=Q(segments__labeling=WorkState.DONE), distinct=True),
            n_eligible=Count("segments", filter=Q(segments__labeling=WorkState.DONE,
                                                  segments__extraction__in=[WorkState.PENDING, WorkState.FAILED,
                                                                            WorkState.PARKED])
                             | Q(segments__extracted_items__isnull=False, segments__score__isnull=False), distinct=True),
            n_extracted=Count("segments", filter=Q(segments__extraction=WorkState.DONE), distinct=True),
            n_failed=Count("segments", filter=Q(segments__labeling=WorkState.FAILED)
                           | Q(segments__extraction=WorkState.FAILED), distinct=True),
            n_parked=Count("segments", filter=Q(segments__labeling=WorkState.PARKED)
                           | Q(segments__extraction=WorkState.PARKED), distinct=True),
        )
    )
    by_id = {s.pk: s for s in sessions}
    memories = dict(
        SegmentMemory.objects.filter(segment__session_id__in=ids).values_list("segment__session_id")
        .annotate(n=Count("memory_id", distinct=True))
    )
    files = []
    totals = {"segments": 0, "labelled": 0, "extracted": 0, "memories": 0, "errors": 0, "parked": 0}
    for item in job.files:
        entry = {"name": item["name"], "status": item["status"], "session_id": item.get("session_id")}
        session = by_id.get(item.get("session_id"))
        if session is not None:
            errors = []
            if session.last_error:
                errors.append({"stage": "segmentation", "attempts": session.attempts, "error": session.last_error})
            for segment in session.segments.exclude(last_error="").only("index", "attempts", "last_error", "labeling",
                                                                          "extraction")[:20]:
                errors.append({"stage": f"segment {segment.index}", "attempts": segment.attempts,
                               "error": segment.last_error,
                               "parked": WorkState.PARKED in (segment.labeling, segment.extraction)})
            entry.update(
                segmentation=session.segmentation,
                segments=session.n_segments, labelled=session.n_labelled, extracted=session.n_extracted,
                memories=memories.get(session.pk, 0), failed=session.n_failed, parked=session.n_parked,
                errors=errors,
            )
            totals["segments"] += session.n_segments
            totals["labelled"] += session.n_labelled
            totals["extracted"] += session.n_extracted
            totals["memories"] += memories.get(session.pk, 0)
            totals["errors"] += len(errors)
            totals["parked"] += session.n_parked + (session.segmentation == WorkState.PARKED)
        files.append(entry)
    pending = any(
        f.get("segmentation") in (WorkState.PENDING, WorkState.FAILED)
        or (f.get("segments", 0) and f.get("extracted", 0) + f.get("parked", 0) < f.get("segments", 0)
            and f.get("labelled", 0) < f.get("segments", 0))
        for f in files
    )
    return {"job_id": str(job.pk), "created_at": job.created_at, "done": not pending, **totals, "files": files}
