"""Every write of the ingestion service: accepting sessions and text, and the pipeline steps
that turn sessions into segments, scores and memories (SPEC §9, §11).

Pipeline items (sessions to segment, segments to label or extract) are claimed with a lease
(``select_for_update(skip_locked=True)``), so several workers never take the same item and a
crashed worker's items come back when the lease runs out. A failure never marks an item done:
it counts an attempt, keeps the error, waits with exponential backoff and is parked after
``ULTRON_PIPELINE_MAX_ATTEMPTS``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from ingestion import analysis
from ingestion.models import (
    IngestJob,
    RawUpload,
    SegmentMemory,
    SessionRecord,
    TaskSegment,
    WorkState,
)
from ingestion.parsing import Message, parse_jsonl
from ingestion.segmentation import fingerprint, segment
from memories import services as memory_services
from memories.models import Memory, Source, Status
from memories.providers.llm import LLMError, get_llm
from memories.redaction import redact, redact_many
from ultron_site.models import Agent

logger = logging.getLogger("ultron.ingestion")

_SEGMENT_MESSAGE_CHARS = 4000  # what of each message is kept (redacted) for the pipeline


class IngestError(ValueError):
    """Bad ingestion input; ``status`` is the HTTP status the API answers with."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field


@dataclass
class FileResult:
    name: str
    status: str  # new | changed | unchanged | skipped
    session_id: int | None = None
    reason: str = ""
    lines: int = 0
    messages: int = 0
    malformed: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "session_id": self.session_id, "status": self.status,
                                "lines": self.lines, "messages": self.messages, "malformed": self.malformed}
        if self.reason:
            data["reason"] = self.reason
        return data


# --- paths -------------------------------------------------------------------------------------


def _hidden(part: str) -> bool:
    return part.startswith(".") and part not in (".", "..")


def paths_collect(paths: Iterable[str], *, roots: list[str] | None) -> list[tuple[str, Path]]:
    """Expand ``paths`` into ``.jsonl`` files: (identity, real path).

    With ``roots`` (the API), every path must resolve, after symlinks, inside one of them;
    without (an admin at the console) any readable path is accepted. Directories expand
    recursively, skipping hidden path segments and symlinks.
    """
    out: list[tuple[str, Path]] = []
    for raw in paths:
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise IngestError("each path must be a non-empty string", field="paths")
        given = Path(raw).expanduser()
        if any(_hidden(part) for part in given.parts):
            raise IngestError(f"{raw}: hidden paths are not ingested", status=403, field="paths")
        real = Path(os.path.realpath(given))
        if roots is not None and not any(_inside(real, Path(root)) for root in roots):
            raise IngestError(f"{raw}: not inside an ingest root", status=403, field="paths")
        if real.is_dir():
            for directory, dirnames, filenames in os.walk(real, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not _hidden(d)
                                     and not os.path.islink(os.path.join(directory, d)))
                for name in sorted(filenames):
                    full = Path(directory) / name
                    if name.endswith(".jsonl") and not _hidden(name) and not full.is_symlink():
                        out.append((str(given / full.relative_to(real)), full))
        elif real.is_file():
            if not real.name.endswith(".jsonl"):
                raise IngestError(f"{raw}: only .jsonl files are ingested", field="paths")
            out.append((str(given), real))
        else:
            raise IngestError(f"{raw}: no such file or directory", status=404, field="paths")
    return out


def _inside(path: Path, root: Path) -> bool:
    try:
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False


# --- accepting sessions ----------------------------------------------------------------------------


def _spool(data: bytes) -> str:
    directory = Path(settings.ULTRON_DATA_DIR) / "spool"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{uuid.uuid4().hex}.jsonl"
    path.write_bytes(data)
    return str(path)


def _archive(*, kind: str, name: str, agent: Agent | None, data: bytes, metadata: dict) -> RawUpload:
    """Keep the original bytes (or, with RAW_ARCHIVE_REDACT, the redacted text). Bytes the
    pipeline still needs but the archive does not hold wait in a spool file."""
    digest = hashlib.sha256(data).hexdigest()
    raw = RawUpload(kind=kind, name=name[:1000], agent=agent, size=len(data), sha256=digest, metadata=metadata)
    keep = len(data) <= settings.ULTRON_RAW_ARCHIVE_MAX_BYTES
    try:
        if settings.RAW_ARCHIVE_REDACT:
            if keep:
                lines = data.decode("utf-8", errors="replace").split("\n")
                raw.content = "\n".join(r.text for r in redact_many(lines)).encode("utf-8")
                raw.redacted = True
        elif keep:
            raw.content = data
        if kind == RawUpload.Kind.FILE and (raw.content is None or raw.redacted):
            raw.spool_path = _spool(data)
    except OSError as exc:  # an archive failure never blocks ingestion...
        logger.error("raw archive failed for %s: %s", name[:200], exc)
        raw.content, raw.redacted = data, False  # ...but the pipeline still needs the bytes
    raw.save()
    return raw


def raw_bytes(raw: RawUpload) -> bytes:
    if raw.content is not None and not raw.redacted:
        return bytes(raw.content)
    if raw.spool_path and Path(raw.spool_path).exists():
        return Path(raw.spool_path).read_bytes()
    raise FileNotFoundError(f"the bytes of raw upload {raw.pk} are no longer available")


def session_ingest(*, agent: Agent, identity: str, data: bytes, job: IngestJob | None) -> FileResult:
    """Archive one session file and queue its segmentation; no LLM call here."""
    identity = identity.strip()[:1000]
    if not identity:
        raise IngestError("a file needs a name", field="files")
    digest = hashlib.sha256(data).hexdigest()
    existing = SessionRecord.objects.filter(agent=agent, identity=identity).first()
    if existing is not None and existing.sha256 == digest:
        return FileResult(identity, "unchanged", existing.pk, lines=existing.line_count,
                          messages=existing.message_count, malformed=existing.malformed)
    parsed = parse_jsonl(data)
    result = FileResult(identity, "changed" if existing else "new", lines=parsed.lines,
                        messages=len(parsed.messages), malformed=dict(parsed.malformed))
    if not data.strip():
        result.status, result.reason = "skipped", "empty file"
        return result
    if not parsed.messages:
        result.status, result.reason = "skipped", "no conversation messages found"
        return result
    with transaction.atomic():
        raw = _archive(kind=RawUpload.Kind.FILE, name=identity, agent=agent, data=data,
                       metadata={"lines": parsed.lines, "malformed": dict(parsed.malformed)})
        try:
            with transaction.atomic():
                session, created = SessionRecord.objects.select_for_update().get_or_create(
                    agent=agent, identity=identity, defaults={"sha256": digest}
                )
        except IntegrityError:  # another request created it a moment ago
            session, created = SessionRecord.objects.select_for_update().get(agent=agent, identity=identity), False
        if not created and session.sha256 == digest:
            result.status, result.session_id = "unchanged", session.pk
            return result
        session.sha256 = digest
        session.size = len(data)
        session.line_count = parsed.lines
        session.message_count = len(parsed.messages)
        session.malformed = dict(parsed.malformed)
        session.raw = raw
        session.job = job
        session.segmentation = WorkState.PENDING
        session.attempts = 0
        session.last_error = ""
        session.next_attempt_at = None
        session.lease_until = None
        session.save()
        result.session_id = session.pk
        session_id = session.pk
        transaction.on_commit(lambda: _enqueue("ingestion.tasks.session_process_task", session_id))
    return result


def _enqueue(func: str, *args: Any) -> None:
    from memories.tasks import enqueue

    enqueue(func, *args)


def files_ingest(*, agent: Agent, files: list[tuple[str, bytes]]) -> tuple[IngestJob, list[FileResult]]:
    job = IngestJob.objects.create(agent=agent)
    results = [session_ingest(agent=agent, identity=name, data=data, job=job) for name, data in files]
    job.files = [r.as_dict() for r in results]
    job.save(update_fields=["files"])
    return job, results


def paths_ingest(*, agent: Agent, paths: list[str], roots: list[str] | None) -> tuple[IngestJob, list[FileResult]]:
    collected = paths_collect(paths, roots=roots)
    total = 0
    for _, path in collected:
        size = path.stat().st_size
        if size > settings.ULTRON_INGEST_MAX_FILE_BYTES:
            raise IngestError(f"{path.name}: larger than {settings.ULTRON_INGEST_MAX_FILE_BYTES} bytes", status=413)
        total += size
    if total > settings.ULTRON_INGEST_MAX_REQUEST_BYTES:
        raise IngestError(f"the files add up to more than {settings.ULTRON_INGEST_MAX_REQUEST_BYTES} bytes", status=413)
    return files_ingest(agent=agent, files=[(identity, path.read_bytes()) for identity, path in collected])


# --- plain text ------------------------------------------------------------------------------


@dataclass
class TextIngestResult:
    raw: RawUpload
    uploads: list[memory_services.UploadResult]
    extractor: str


def text_ingest(*, agent: Agent | None, text: Any) -> TextIngestResult:
    """Extract memories from plain text and upload each through the memory funnel."""
    if not isinstance(text, str) or not text.strip():
        raise IngestError("text is required and must not be blank", field="text")
    if len(text) > settings.ULTRON_INGEST_MAX_TEXT_CHARS:
        raise IngestError(f"text is longer than {settings.ULTRON_INGEST_MAX_TEXT_CHARS} characters", status=413,
                          field="text")
    raw = _archive(kind=RawUpload.Kind.TEXT, name="ingest_text", agent=agent, data=text.encode("utf-8"), metadata={})
    clean = redact(text).text
    extractor = get_llm().name
    try:
        items = analysis.extract(None, text=clean)
    except LLMError as exc:
        # The caller is waiting: the rules extract what they can rather than lose the text.
        logger.warning("ingest_text: LLM extraction failed, using the offline extractor: %s", exc)
        items = analysis.extract_text_offline(clean)
        extractor = "offline (LLM failed)"
    uploads = []
    for item in items:
        try:
            uploads.append(memory_services.memory_upload(
                content=item.content, context=item.context, resolution=item.resolution, tags=item.tags,
                agent=agent, source=Source.INGEST_TEXT, provenance={"raw_upload": raw.pk},
            ))
        except memory_services.MemoryInputError as exc:
            logger.info("ingest_text: skipped an extracted item: %s", exc)
    return TextIngestResult(raw, uploads, extractor)


# --- pipeline: claiming and failure bookkeeping ------------------------------------------------


def _claim(queryset: models.QuerySet, limit: int) -> list[int]:
    now = timezone.now()
    lease = timedelta(seconds=settings.ULTRON_PIPELINE_LEASE_SECONDS)
    with transaction.atomic():
        ids = list(
            queryset.filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .order_by("pk")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        queryset.model.objects.filter(pk__in=ids).update(lease_until=now + lease)
    return ids


def _failed(model: type[models.Model], pk: int, state_field: str, exc: BaseException) -> None:
    """Count a failed attempt: retry later with backoff, or park after too many."""
    item = model.objects.get(pk=pk)
    item.attempts += 1
    item.last_error = f"{type(exc).__name__}: {exc}"[:2000]
    item.lease_until = None
    if item.attempts >= settings.ULTRON_PIPELINE_MAX_ATTEMPTS:
        setattr(item, state_field, WorkState.PARKED)
        item.next_attempt_at = None
        logger.error("%s %s parked after %d attempts: %s", model.__name__, pk, item.attempts, item.last_error)
    else:
        setattr(item, state_field, WorkState.FAILED)
        delay = settings.ULTRON_PIPELINE_RETRY_SECONDS * (2 ** (item.attempts - 1))
        item.next_attempt_at = timezone.now() + timedelta(seconds=delay)
        logger.warning("%s %s failed (attempt %d), retry in %ss: %s", model.__name__, pk, item.attempts, delay,
                       item.last_error)
    item.save(update_fields=[state_field, "attempts", "last_error", "next_attempt_at", "lease_until"])


def _done(item: models.Model, state_field: str, extra: list[str]) -> None:
    setattr(item, state_field, WorkState.DONE)
    item.attempts = 0
    item.last_error = ""
    item.next_attempt_at = None
    item.lease_until = None
    item.save(update_fields=[state_field, "attempts", "last_error", "next_attempt_at", "lease_until", *extra])


# --- pipeline: segmentation ------------------------------------------------------------------------


def _redacted_messages(messages: list[Message]) -> list[Message]:
    texts = [m.text[:_SEGMENT_MESSAGE_CHARS] for m in messages]
    for message, result in zip(messages, redact_many(texts), strict=True):
        message.text = result.text
    return messages


def session_segment(*, session_id: int) -> bool:
    """Segment one session; keep segments whose fingerprint survives, add new ones, drop the
    rest and archive the memories that came only from them. False if it failed (recorded)."""
    session = SessionRecord.objects.select_related("raw").get(pk=session_id)
    try:
        if session.raw is None:
            raise FileNotFoundError("the session has no raw upload to segment")
        parsed = parse_jsonl(raw_bytes(session.raw))
        messages = _redacted_messages(parsed.messages)
        spans = segment(messages)
    except Exception as exc:  # LLM failures, missing bytes, anything: recorded, retried, never lost
        _failed(SessionRecord, session_id, "segmentation", exc)
        return False
    with transaction.atomic():
        session = SessionRecord.objects.select_for_update().get(pk=session_id)
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
                TaskSegment.objects.filter(pk=segment_row.pk).update(
                    index=index, start_message=span.start, end_message=span.end)
            else:
                created = TaskSegment.objects.create(
                    session=session, index=index, start_message=span.start, end_message=span.end,
                    topic=span.topic[:200], fingerprint=digest, messages=[m.as_dict() for m in part],
                )
                existing[digest] = created
                keep.add(created.pk)
        gone = [s.pk for s in existing.values() if s.pk not in keep]
        archived = _archive_orphans(gone) if gone else 0
        TaskSegment.objects.filter(pk__in=gone).delete()
        session.segmented_sha256 = session.sha256
        _done(session, "segmentation", ["segmented_sha256"])
        raw = session.raw
        if raw is not None and raw.spool_path:
            # The spooled bytes were only waiting for this; the archive keeps what it keeps.
            spool = raw.spool_path
            RawUpload.objects.filter(pk=raw.pk).update(spool_path="")
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
    ids = _claim(SessionRecord.objects.filter(segmentation__in=[WorkState.PENDING, WorkState.FAILED]),
                 limit or settings.ULTRON_PIPELINE_BATCH)
    done = sum(1 for pk in ids if session_segment(session_id=pk))
    return {"claimed": len(ids), "segmented": done, "failed": len(ids) - done}


# --- pipeline: metrics -------------------------------------------------------------------------


def _messages(segment_row: TaskSegment) -> list[Message]:
    return [Message.from_dict(m) for m in segment_row.messages]


def segment_label(*, segment_id: int) -> bool:
    segment_row = TaskSegment.objects.get(pk=segment_id)
    try:
        metrics = analysis.score_segment(_messages(segment_row))
    except Exception as exc:
        _failed(TaskSegment, segment_id, "labeling", exc)
        return False
    segment_row.metrics = metrics.as_dict()
    segment_row.score = metrics.score
    segment_row.task_type = metrics.task_type
    extra = ["metrics", "score", "task_type"]
    if metrics.score < settings.ULTRON_SEGMENT_MIN_SCORE:
        segment_row.extraction = WorkState.DONE  # not eligible: nothing to extract
        segment_row.extracted_items = []
        extra += ["extraction", "extracted_items"]
    _done(segment_row, "labeling", extra)
    return True


def segments_label(*, limit: int | None = None, session_id: int | None = None) -> dict[str, int]:
    queryset = TaskSegment.objects.filter(labeling__in=[WorkState.PENDING, WorkState.FAILED])
    if session_id is not None:
        queryset = queryset.filter(session_id=session_id)
    ids = _claim(queryset, limit or settings.ULTRON_PIPELINE_BATCH)
    done = sum(1 for pk in ids if segment_label(segment_id=pk))
    return {"claimed": len(ids), "labelled": done, "failed": len(ids) - done}


# --- pipeline: extraction ----------------------------------------------------------------------


def segment_extract(*, segment_id: int) -> bool:
    """Extract memories from an eligible segment and upload each, exactly once.

    The extracted items are stored before any upload; each upload and its provenance link
    commit together, so a crash at any point resumes without losing or doubling a memory.
    """
    segment_row = TaskSegment.objects.select_related("session", "session__agent").get(pk=segment_id)
    try:
        if segment_row.extracted_items is None:
            items = analysis.extract(_messages(segment_row), topic=segment_row.topic,
                                     task_type=segment_row.task_type or "conversation")
            segment_row.extracted_items = [item.as_dict() for item in items]
            segment_row.save(update_fields=["extracted_items"])
        session = segment_row.session
        done_items = set(SegmentMemory.objects.filter(segment=segment_row).values_list("item_index", flat=True))
        for index, item in enumerate(segment_row.extracted_items):
            if index in done_items or item.get("skipped"):
                continue
            extracted = analysis.Extracted.from_dict(item)
            try:
                with transaction.atomic():
                    result = memory_services.memory_upload(
                        content=extracted.content, context=extracted.context, resolution=extracted.resolution,
                        tags=extracted.tags, agent=session.agent, source=Source.SEGMENT,
                        provenance={"session": session.pk, "segment": segment_row.pk, "item": index},
                    )
                    SegmentMemory.objects.create(segment=segment_row, memory=result.memory, item_index=index)
            except memory_services.MemoryInputError as exc:
                segment_row.extracted_items[index] = {**item, "skipped": str(exc)[:300]}
                segment_row.save(update_fields=["extracted_items"])
    except Exception as exc:
        _failed(TaskSegment, segment_id, "extraction", exc)
        return False
    _done(segment_row, "extraction", [])
    return True


def segments_extract(*, limit: int | None = None, session_id: int | None = None) -> dict[str, int]:
    queryset = TaskSegment.objects.filter(
        labeling=WorkState.DONE, score__gte=settings.ULTRON_SEGMENT_MIN_SCORE,
        extraction__in=[WorkState.PENDING, WorkState.FAILED],
    )
    if session_id is not None:
        queryset = queryset.filter(session_id=session_id)
    ids = _claim(queryset, limit or settings.ULTRON_PIPELINE_BATCH)
    done = sum(1 for pk in ids if segment_extract(segment_id=pk))
    return {"claimed": len(ids), "extracted": done, "failed": len(ids) - done}


def session_process(*, session_id: int) -> dict[str, Any]:
    """Right after ingestion: segment the session, then label and extract its segments."""
    segmented = session_segment(session_id=session_id) if _claim(
        SessionRecord.objects.filter(pk=session_id, segmentation__in=[WorkState.PENDING, WorkState.FAILED]), 1
    ) else False
    return {
        "segmented": segmented,
        "labels": segments_label(session_id=session_id, limit=10_000),
        "extraction": segments_extract(session_id=session_id, limit=10_000),
    }
