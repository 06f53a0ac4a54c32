"""Every call the client makes, as an operation (see _protocol): what it sends, how the answer
maps onto the records of ``ultron.models``, and the calls that take several requests
(details by the hundred, uploads in batches, files under the request limit, waiting for a job)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ultron import sessions
from ultron._protocol import Operation, Request, Sleep
from ultron.errors import RequestTooLargeError, UsageError, WaitTimeout
from ultron.models import (
    BatchItem,
    Context,
    Feedback,
    Health,
    IngestFile,
    IngestResult,
    JobProgress,
    MemoryList,
    MemoryRecord,
    SearchResult,
    Skill,
    Space,
    Stats,
    TextIngestResult,
    UploadResult,
)

MAX_IDS = 100  # per details request
MAX_BATCH = 100  # memories per batch upload
TEXT_TIMEOUT = 300.0  # ingest_text runs the extraction (an LLM, when configured) in the request
UPLOAD_TIMEOUT = 300.0  # uploads may wait for an LLM's merge, and files for their archive

IngestProgress = Callable[[int, int, int, int], None]  # files sent, files in all, bytes sent, bytes
JobCallback = Callable[[JobProgress], None]


def _key() -> str:
    """A new Idempotency-Key: one per logical request, the same on its retries."""
    return uuid.uuid4().hex


def _clean(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _tags(tags: Iterable[str] | None) -> list[str] | None:
    if tags is None:
        return None
    if isinstance(tags, str):
        return [tags]
    return list(tags)


def _spaces(spaces: Iterable[str] | str | None) -> list[str] | None:
    """A read's spaces: None (every space the caller may read) or the slugs named."""
    if spaces is None:
        return None
    found = [spaces] if isinstance(spaces, str) else list(spaces)
    if not found or not all(isinstance(s, str) and s.strip() for s in found):
        raise UsageError(f"spaces is a list of space slugs, not {spaces!r}")
    return [s.strip() for s in found]


def _space(space: str | None) -> str | None:
    """A write's space: a slug, or None for the agent's default space."""
    if space is None:
        return None
    if not isinstance(space, str) or not space.strip():
        raise UsageError(f"space is a space's slug, not {space!r}")
    return space.strip()


def spaces() -> Operation[list[Space]]:
    data = yield Request("GET", "/api/spaces")
    return [Space.from_api(s) for s in data["results"]]


def upload_memory(*, content: str, context: str | None = None, resolution: str | None = None,
                  tags: Iterable[str] | None = None, space: str | None = None) -> Operation[UploadResult]:
    body = _clean({"content": content, "context": context, "resolution": resolution, "tags": _tags(tags),
                   "space": _space(space)})
    data = yield Request("POST", "/api/memories/upload", json=body, timeout=UPLOAD_TIMEOUT, idempotency_key=_key())
    return UploadResult.from_api(data)


def _batch_item(memory: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(memory, str):
        return {"content": memory}
    if not isinstance(memory, Mapping):
        raise UsageError(f"each memory is a dict with content (and context, resolution, tags), not {memory!r}")
    item = _clean({key: memory.get(key) for key in ("content", "context", "resolution", "tags")})
    if "tags" in item:
        item["tags"] = _tags(item["tags"])
    return item


def upload_memories(memories: Sequence[Mapping[str, Any] | str], *,
                    space: str | None = None) -> Operation[list[BatchItem]]:
    """Batch upload, 100 items a request (the hub's limit), all to one space: one result per
    item, in order; an item the hub refused carries its error while the others are stored."""
    items = [_batch_item(m) for m in memories]
    if not items:
        raise UsageError("give at least one memory")
    target = _space(space)
    out: list[BatchItem] = []
    for start in range(0, len(items), MAX_BATCH):
        chunk = items[start:start + MAX_BATCH]
        data = yield Request("POST", "/api/memories/upload", json=_clean({"memories": chunk, "space": target}),
                             timeout=UPLOAD_TIMEOUT, idempotency_key=_key())
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list) or len(results) != len(chunk):
            raise UsageError("the hub did not answer with one result per memory: does it take batch uploads "
                             "({\"memories\": [...]})? Upgrade it, or call upload_memory for each memory")
        for offset, item in enumerate(results):
            result = item.get("result")
            out.append(BatchItem(index=start + offset, status=int(item.get("status", 0)),
                                 result=UploadResult.from_api(result) if result else None, error=item.get("error")))
    return out


def search_memories(*, query: str, detail_level: str = "l1", limit: int = 10, memory_type: str | None = None,
                    tier: str | None = None, tags: Iterable[str] | None = None, mode: str | None = None,
                    min_score: float | None = None, spaces: Iterable[str] | str | None = None,
                    include_superseded: bool = False) -> Operation[list[SearchResult]]:
    body = _clean({"query": query, "detail_level": detail_level, "limit": limit, "memory_type": memory_type,
                   "tier": tier, "tags": _tags(tags), "mode": mode, "min_score": min_score,
                   "spaces": _spaces(spaces), "include_superseded": include_superseded or None})
    data = yield Request("POST", "/api/memories/search", json=body)
    return [SearchResult.from_api(hit, data.get("serve_id")) for hit in data["results"]]


RATINGS = ("helpful", "not_helpful", "wrong", "outdated")


def feedback(memory_id: str, rating: str | None, *, serve_id: str, reason: str = "") -> Operation[Feedback]:
    if rating is not None and rating not in RATINGS:
        raise UsageError(f"rating must be one of {', '.join(RATINGS)} (or None to clear a vote)")
    if not serve_id:
        raise UsageError("give the serve_id of the search or context call that served this memory")
    data = yield Request("POST", f"/api/memories/{_memory_id(memory_id)}/feedback",
                         json={"rating": rating, "serve_id": serve_id, "reason": reason or ""})
    return Feedback.from_api(data)


def _memory_id(memory_id: str) -> str:
    import uuid

    try:
        return str(uuid.UUID(str(memory_id)))
    except ValueError as exc:
        raise UsageError(f"not a memory id: {memory_id!r}") from exc


def get_memory_details(ids: Sequence[str]) -> Operation[MemoryList]:
    if isinstance(ids, str):
        ids = [ids]
    ids = [str(i) for i in ids]
    if not ids:
        raise UsageError("give at least one memory id")
    records: list[MemoryRecord] = []
    missing: list[str] = []
    for start in range(0, len(ids), MAX_IDS):
        data = yield Request("POST", "/api/memories/details", json={"ids": ids[start:start + MAX_IDS]})
        records.extend(MemoryRecord.from_api(m) for m in data["memories"])
        missing.extend(data.get("missing", []))
    return MemoryList(records, missing)


def get_context(*, query: str = "", token_budget: int = 2000, memory_type: str | None = None,
                tags: Iterable[str] | None = None, spaces: Iterable[str] | str | None = None) -> Operation[Context]:
    body = _clean({"query": query, "token_budget": token_budget, "memory_type": memory_type, "tags": _tags(tags),
                   "spaces": _spaces(spaces)})
    data = yield Request("POST", "/api/context", json=body)
    return Context.from_api(data)


def stats(*, spaces: Iterable[str] | str | None = None) -> Operation[Stats]:
    data = yield Request("GET", "/api/memories/stats", params=_space_params(spaces))
    return Stats.from_api(data)


def health() -> Operation[Health]:
    data = yield Request("GET", "/api/health", ok_statuses=(503,))
    return Health.from_api(data)


def _slug(slug: str) -> str:
    if not isinstance(slug, str) or not slug.strip() or "/" in slug or slug.strip() in (".", ".."):
        raise UsageError(f"not a skill slug: {slug!r}")
    return quote(slug.strip(), safe="")


def _space_params(spaces: Iterable[str] | str | None) -> dict[str, Any] | None:
    """A GET names the spaces it covers as ``?spaces=`` (repeated)."""
    slugs = _spaces(spaces)
    return {"spaces": slugs} if slugs else None


def list_skills(*, spaces: Iterable[str] | str | None = None) -> Operation[list[Skill]]:
    data = yield Request("GET", "/api/skills", params=_space_params(spaces))
    return [Skill.from_api(s) for s in data["results"]]


def get_skill(slug: str, *, spaces: Iterable[str] | str | None = None) -> Operation[Skill]:
    data = yield Request("GET", f"/api/skills/{_slug(slug)}", params=_space_params(spaces))
    return Skill.from_api(data)


def search_skills(*, query: str, limit: int = 5, spaces: Iterable[str] | str | None = None) -> Operation[list[Skill]]:
    data = yield Request("POST", "/api/skills/search", json=_clean({"query": query, "limit": limit,
                                                                    "spaces": _spaces(spaces) or None}))
    return [Skill.from_api(s) for s in data["results"]]


def ingest_text(text: str, *, space: str | None = None) -> Operation[TextIngestResult]:
    data = yield Request("POST", "/api/ingest/text", json=_clean({"text": text, "space": _space(space)}),
                         timeout=TEXT_TIMEOUT, idempotency_key=_key())
    return TextIngestResult.from_api(data)


def job(job_id: str) -> Operation[JobProgress]:
    data = yield Request("GET", f"/api/ingest/{quote(str(job_id), safe='')}")
    return JobProgress.from_api(data)


def wait(job_id: str, *, timeout: float | None = None, interval: float = 1.0,
         on_progress: JobCallback | None = None) -> Operation[JobProgress]:
    """Poll the job until it is done; ``WaitTimeout`` after ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        progress = yield from job(job_id)
        if on_progress is not None:
            on_progress(progress)
        if progress.done:
            return progress
        if deadline is not None and time.monotonic() + interval > deadline:
            raise WaitTimeout(f"ingest job {job_id} is not done after {timeout:g} s "
                              f"({progress.extracted}/{progress.segments} segments extracted)")
        yield Sleep(interval)


def _multipart(batch: list[sessions.LocalFile], agent: str | None, space: str | None) -> Request:
    files = [("files", (item.path.name, item.path.read_bytes(), "application/octet-stream")) for item in batch]
    data: dict[str, Any] = {"names": [item.name for item in batch]}
    if agent:
        data["agent"] = agent
    if space:
        data["space"] = space
    return Request("POST", "/api/ingest", files=files, data=data, timeout=UPLOAD_TIMEOUT, idempotency_key=_key())


def ingest(paths: Iterable[str] | str, *, agent_id: str | None = None, on_progress: IngestProgress | None = None,
           batch_bytes: int = sessions.DEFAULT_BATCH_BYTES, batch_files: int = sessions.DEFAULT_BATCH_FILES,
           space: str | None = None) -> Operation[IngestResult]:
    """Upload the session files under ``paths`` (see ultron.sessions), as few multipart requests
    as fit the limits. A batch the hub finds too large (413) is halved and sent again; a single
    file it refuses as too large is reported ``skipped`` with the hub's reason."""
    target = _space(space)
    files = sessions.collect([paths] if isinstance(paths, str) else paths)
    result = IngestResult()
    total_bytes = sum(item.size for item in files)
    sent_files = sent_bytes = 0
    pending = sessions.batches(files, max_bytes=batch_bytes, max_files=batch_files)
    if on_progress is not None:
        on_progress(0, len(files), 0, total_bytes)
    while pending:
        batch = pending.pop(0)
        try:
            data = yield _multipart(batch, agent_id, target)
        except RequestTooLargeError as exc:
            if len(batch) > 1:
                half = len(batch) // 2
                pending[:0] = [batch[:half], batch[half:]]
                continue
            data = {"files": [{"name": batch[0].name, "status": "skipped", "reason": exc.message}]}
        result.files.extend(IngestFile.from_api(f) for f in data["files"])
        if data.get("job_id"):
            result.job_ids.append(str(data["job_id"]))
        sent_files += len(batch)
        sent_bytes += sum(item.size for item in batch)
        if on_progress is not None:
            on_progress(sent_files, len(files), sent_bytes, total_bytes)
    result.total_files = len(result.files)
    return result


def memory_file(*, spaces: Iterable[str] | str | None = None) -> Operation[str]:
    """MEMORY.md: the current knowledge of the spaces read, as Markdown."""
    text = yield Request("GET", "/api/memories/export.md", params=_space_params(spaces), text=True)
    return str(text)
