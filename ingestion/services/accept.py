"""Accepting sessions: server paths checked against the ingest roots, the raw archive, and one
session record per (agent, file identity). No LLM call here: the pipeline does the work."""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from agents.models import Agent, Space
from agents.selectors import agent_by_name, space_or_shared
from core import errors
from core.errors import ApplicationError
from core.queue import enqueue_on_commit
from ingestion.formats import ACCEPTED, AIDER_HISTORY, accepted_name, walk_includes
from ingestion.models import IngestJob, RawChunk, RawUpload, SessionRecord, WorkState
from ingestion.parsing import parse_session
from memories.redaction.archive import archive_redact

logger = logging.getLogger("ultron.ingestion")


class IngestError(ApplicationError):
    """Bad ingestion input: a refused file, path, size or account (``code`` says which kind)."""


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


def _hidden(part: str) -> bool:
    return part.startswith(".") and part not in (".", "..")


def paths_collect(paths: Iterable[str], *, roots: list[str] | None) -> list[tuple[str, Path]]:
    """Expand ``paths`` into session files: (identity, real path).

    With ``roots`` (the API), every path must resolve, after symlinks, inside one of them;
    without (an admin at the console) any readable path is accepted. A named file may end in
    ``.jsonl``, ``.json``, ``.traj`` or ``.md``. Directories expand recursively, skipping hidden
    path segments and symlinks, to ``.jsonl``, ``.traj`` and ``*.aider.chat.history.md`` files and
    the ``.json`` files that look like sessions (``ingestion.formats.walk_includes``). Aider's own
    ``.aider.chat.history.md`` is the one hidden name taken.
    """
    out: list[tuple[str, Path]] = []
    for raw in paths:
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise IngestError("each path must be a non-empty string", field="paths")
        given = Path(raw).expanduser()
        if any(_hidden(part) for part in given.parts if part != AIDER_HISTORY):
            raise IngestError(f"{raw}: hidden paths are not ingested", code=errors.FORBIDDEN, field="paths")
        # Resolved before the root check: a symlink inside a root must not lead outside it.
        real = Path(os.path.realpath(given))
        if roots is not None and not any(_inside(real, Path(root)) for root in roots):
            raise IngestError(f"{raw}: not inside an ingest root", code=errors.FORBIDDEN, field="paths")
        if real.is_dir():
            # Nor does a walk follow links: the root check was made on the directory, not on where a link leads.
            for directory, dirnames, filenames in os.walk(real, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not _hidden(d)
                                     and not os.path.islink(os.path.join(directory, d)))
                for name in sorted(filenames):
                    full = Path(directory) / name
                    if ((not _hidden(name) or name == AIDER_HISTORY) and not full.is_symlink()
                            and walk_includes(full)):
                        out.append((str(given / full.relative_to(real)), full))
        elif real.is_file():
            if not accepted_name(real.name):
                # The hub reads session files only: any other file on the server is not the caller's to read.
                raise IngestError(f"{raw}: only {ACCEPTED} session files are ingested", code=errors.FORBIDDEN,
                                  field="paths")
            out.append((str(given), real))
        else:
            raise IngestError(f"{raw}: no such file or directory", code=errors.NOT_FOUND, field="paths")
    return out


def _inside(path: Path, root: Path) -> bool:
    try:
        # commonpath, not a string prefix: /srv/sessions-old is not inside /srv/sessions.
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False


def _chunks_store(raw: RawUpload, data: bytes) -> None:
    """The original bytes of ``raw`` into the database in pieces, a few at a time (no second copy
    of a large file at once), where whichever worker segments the session reads them."""
    view, size = memoryview(data), RawChunk.CHUNK_BYTES
    pieces = (RawChunk(space_id=raw.space_id, raw=raw, seq=seq, data=bytes(view[start : start + size]))
              for seq, start in enumerate(range(0, len(data), size)))
    while batch := list(itertools.islice(pieces, 4)):
        RawChunk.objects.bulk_create(batch)


ARCHIVE_PENDING = "pending"  # metadata["archive"]: the segmentation step writes the redacted text


def raw_archive(*, kind: str, name: str, agent: Agent | None, data: bytes, metadata: dict,
                space_id: int, redacted_text: str | None = None) -> RawUpload:
    """Keep the redacted text (ULTRON_RAW_ARCHIVE_REDACT, the default) or the original bytes.
    A session file's redaction takes seconds per megabyte, so it is not done in the request:
    the original bytes wait in the database (``RawChunk``) and the pipeline's segmentation step,
    which reads them anyway, writes the redacted archive and deletes them. ``redacted_text``: the
    caller has redacted the text already (a plain-text ingest), and it is kept as it is."""
    digest = hashlib.sha256(data).hexdigest()
    raw = RawUpload(space_id=space_id, kind=kind, name=name[:1000], agent=agent, size=len(data), sha256=digest,
                    metadata=metadata)
    keep = len(data) <= settings.ULTRON_RAW_ARCHIVE_MAX_BYTES
    if settings.ULTRON_RAW_ARCHIVE_REDACT:
        if keep and kind == RawUpload.Kind.FILE:
            raw.metadata = {**metadata, "archive": ARCHIVE_PENDING}
        elif keep:  # a plain text (at most ULTRON_INGEST_MAX_TEXT_CHARS): redacted here
            text = redacted_text if redacted_text is not None else archive_redact(data)
            raw.content = text.encode("utf-8")
            raw.redacted = True
    elif keep:
        raw.content = data
    with transaction.atomic():
        raw.save()
        # The pipeline parses the original bytes: when the row will not hold them (redacted, or too
        # large) they wait in the database until segmentation. Nothing is written on this host's disk.
        if kind == RawUpload.Kind.FILE and raw.content is None:
            _chunks_store(raw, data)
    return raw


def raw_bytes(raw: RawUpload) -> bytes:
    """The original bytes of ``raw``: its content when that is the original, else the pieces
    waiting for segmentation (read one row at a time), else a spool file an older hub wrote."""
    if raw.content is not None and not raw.redacted:
        return bytes(raw.content)
    pieces = RawChunk.objects.filter(raw=raw).order_by("seq").values_list("data", flat=True)
    data = b"".join(bytes(piece) for piece in pieces.iterator(chunk_size=1))
    if data or raw.size == 0:
        return data
    if raw.spool_path and Path(raw.spool_path).exists():
        return Path(raw.spool_path).read_bytes()
    raise FileNotFoundError(f"the bytes of raw upload {raw.pk} are no longer available")


def session_ingest(*, agent: Agent, identity: str, data: bytes, job: IngestJob | None,
                   space: Space | int | None = None) -> FileResult:
    """Archive one session file in ``space`` (default: the shared space) and queue its
    segmentation; no LLM call here."""
    space_id = space_or_shared(space)
    identity = identity.strip()[:1000]
    if not identity:
        raise IngestError("a file needs a name", field="files")
    digest = hashlib.sha256(data).hexdigest()
    # The same bytes as last time cost a hash, not a parse (flow.md#session-files, step 1).
    existing = SessionRecord.objects.filter(space_id=space_id, agent=agent, identity=identity).first()
    if existing is not None and existing.sha256 == digest:
        return FileResult(identity, "unchanged", existing.pk, lines=existing.line_count,
                          messages=existing.message_count, malformed=existing.malformed)
    parsed = parse_session(data, identity)
    result = FileResult(identity, "changed" if existing else "new", lines=parsed.lines,
                        messages=len(parsed.messages), malformed=dict(parsed.malformed))
    if not data.strip():
        result.status, result.reason = "skipped", "empty file"
        return result
    if not parsed.messages:
        result.status, result.reason = "skipped", parsed.reason or "no conversation messages found"
        return result
    with transaction.atomic():
        raw = raw_archive(kind=RawUpload.Kind.FILE, name=identity, agent=agent, data=data, space_id=space_id,
                          metadata={"lines": parsed.lines, "malformed": dict(parsed.malformed)})
        try:
            with transaction.atomic():
                session, created = SessionRecord.objects.select_for_update().get_or_create(
                    space_id=space_id, agent=agent, identity=identity, defaults={"sha256": digest}
                )
        except IntegrityError:  # another request created it a moment ago
            session, created = SessionRecord.objects.select_for_update().get(
                space_id=space_id, agent=agent, identity=identity), False
        # Checked again under the row lock: a concurrent request may have stored these very bytes meanwhile.
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
        # A changed file starts over, a parked session included (flow.md#retries-and-parking).
        session.segmentation = WorkState.PENDING
        session.attempts = 0
        session.last_error = ""
        session.next_attempt_at = None
        session.lease_until = None
        session.save()
        result.session_id = session.pk
        from ingestion.tasks import session_process_task  # the tasks import the services

        enqueue_on_commit(session_process_task, session.pk)
    return result


def files_ingest(*, agent: Agent, files: list[tuple[str, bytes]],
                 space: Space | int | None = None) -> tuple[IngestJob, list[FileResult]]:
    space_id = space_or_shared(space)
    job = IngestJob.objects.create(space_id=space_id, agent=agent)
    results = [session_ingest(agent=agent, identity=name, data=data, job=job, space=space_id) for name, data in files]
    job.files = [r.as_dict() for r in results]
    job.save(update_fields=["files"])
    return job, results


def uploads_check(files: Sequence[tuple[str, int]]) -> None:
    """The one rule for which files an ingest request takes, as (name, size in bytes): accepted
    session names, each within ``ULTRON_INGEST_MAX_FILE_BYTES``, together within
    ``ULTRON_INGEST_MAX_REQUEST_BYTES``. The API, the admin's upload form and server paths all
    ask it; the client's copy is held to it by a test."""
    for name, size in files:
        if not accepted_name(name):
            raise IngestError(f"{name}: only {ACCEPTED} session files are ingested", field="files")
        if size > settings.ULTRON_INGEST_MAX_FILE_BYTES:
            raise IngestError(f"{name}: larger than {settings.ULTRON_INGEST_MAX_FILE_BYTES} bytes",
                              code=errors.TOO_LARGE, field="files")
    if sum(size for _, size in files) > settings.ULTRON_INGEST_MAX_REQUEST_BYTES:
        raise IngestError(f"The files add up to more than {settings.ULTRON_INGEST_MAX_REQUEST_BYTES} bytes",
                          code=errors.TOO_LARGE, field="files")


def uploads_ingest(*, user: Any, agent_name: str | None, uploads: Sequence[tuple[str, Any]],
                   space: Space | int | None = None) -> tuple[IngestJob, list[FileResult]]:
    """Uploaded files (name, file object with ``size`` and ``read()``) for the caller's agent, or
    for the agent a curator names."""
    agent = acting_agent(user=user, name=agent_name)
    # Sizes are checked before a byte is read: a refused request costs no memory.
    uploads_check([(name, upload.size) for name, upload in uploads])
    return files_ingest(agent=agent, files=[(name, upload.read()) for name, upload in uploads], space=space)


def text_uploads(texts: list[str]) -> list[Any]:
    """``files`` parts sent as form fields rather than files (``curl -F "files=<run.jsonl"``): the
    same bytes as uploads, each named by its digest so that sending it again is the same session
    (``.jsonl`` when the text starts as JSON, else ``.md``)."""
    uploads = []
    for text in texts:
        if not text:
            continue
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        suffix = ".jsonl" if text.lstrip()[:1] in ("{", "[") else ".md"
        uploads.append(ContentFile(text.encode("utf-8"), name=f"upload-{digest[:12]}{suffix}"))
    return uploads


def paths_ingest(*, user: Any, agent_name: str | None, paths: list[str],
                 space: Space | int | None = None) -> tuple[IngestJob, list[FileResult]]:
    """Files and folders on the server, inside ``ULTRON_INGEST_ROOTS``, for the caller's agent."""
    roots = settings.ULTRON_INGEST_ROOTS
    # Reading the server's disk is off until an operator names the folders agents may read.
    if not roots:
        raise IngestError("reading server paths is disabled: ULTRON_INGEST_ROOTS is not set; upload the files "
                          "instead", code=errors.FORBIDDEN, field="paths")
    agent = acting_agent(user=user, name=agent_name)
    collected = paths_collect(paths, roots=roots)
    uploads_check([(path.name, path.stat().st_size) for _, path in collected])
    return files_ingest(agent=agent, files=[(identity, path.read_bytes()) for identity, path in collected],
                        space=space)


def acting_agent(*, user: Any, name: str | None) -> Agent:
    """The agent an ingest request acts for: the caller's own, or — for curators only — the
    agent named ``name``."""
    agent = getattr(user, "agent", None)
    if name and (agent is None or name != agent.name):
        if not user.is_staff:
            raise IngestError("only curators may ingest on behalf of another agent", code=errors.FORBIDDEN, field="agent")
        other = agent_by_name(name=name)
        if other is None:
            raise IngestError(f"no agent named {name!r}", code=errors.NOT_FOUND, field="agent")
        return other
    if agent is None:
        raise IngestError("this account is not an agent", code=errors.FORBIDDEN)
    return agent
