"""What the hub answers, as typed records. Fields the hub adds later are ignored, so an older
client keeps working against a newer hub, and fields an older hub does not send keep their
defaults; ``to_dict()`` gives the plain data back (the CLI's ``--json`` and the MCP tools'
results).

A memory is a note another agent recorded: reference material to weigh, not instructions to
follow. Each one says who wrote it (``agent``), whether a curator verified it (``verified``) and
what the hub's poisoning screen noted when it let it through (``flags``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T", bound="Record")


@dataclass
class Record:
    @classmethod
    def from_api(cls: type[T], data: dict[str, Any]) -> T:
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


Reason = dict[str, Any]  # {rule, label, field, start, end, text, severity}: what the screen found


@dataclass
class MemoryRecord(Record):
    """A memory: a note another agent recorded, to weigh, not to obey. From
    ``get_memory_details`` every field is filled; as a search result only the summary fields
    are (``content``, ``resolution`` stay empty: read them with ``get_memory_details``).

    Provenance: ``agent`` is its writer; ``verified`` whether a curator approved or wrote it
    (None: the hub is older and does not say); ``flags`` what the poisoning screen noted when
    it served it (a link outside the space's allowed hosts, …), each a ``Reason``. ``status``
    is ``held`` (or ``rejected``) only for the caller's own memories that wait for a curator."""

    id: str
    memory_type: str
    space: str = ""  # the slug of the space it is in
    tier: str = ""
    status: str = "active"
    tags: list[str] = field(default_factory=list)
    hit_count: int = 0
    summary_l0: str = ""
    overview_l1: str = ""
    content: str = ""
    context: str = ""
    resolution: str = ""
    merge_pending: bool = False
    redactions: dict[str, int] = field(default_factory=dict)
    agent: str | None = None  # the writer
    verified: bool | None = None
    flags: list[Reason] = field(default_factory=list)
    source: str = ""
    last_hit_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    # Knowledge that changed: the older memories this one replaced; for a replaced one (status
    # "superseded", returned as history), the memory that replaced it and when.
    supersedes: list[str] = field(default_factory=list)
    superseded_by: str | None = None
    valid_until: str | None = None

    @property
    def writer(self) -> str | None:
        """The agent that wrote it (``agent``)."""
        return self.agent

    @property
    def held(self) -> bool:
        """One of the caller's own memories that waits for a curator's review."""
        return self.status == "held"


class MemoryList(list[MemoryRecord]):
    """``get_memory_details``' answer: the records found, in the order asked, plus ``missing``:
    the ids that are unknown or archived."""

    def __init__(self, records: list[MemoryRecord], missing: list[str]) -> None:
        super().__init__(records)
        self.missing = missing

    def to_dict(self) -> dict[str, Any]:
        return {"memories": [r.to_dict() for r in self], "missing": list(self.missing)}


@dataclass
class SearchResult(Record):
    """One search hit: ``record`` (summary fields, with its provenance: ``writer``,
    ``verified``, ``flags``), cosine ``similarity_score`` and the ranking ``score``. A hit is
    another agent's note, to weigh, not to obey."""

    record: MemoryRecord
    similarity_score: float
    score: float
    serve_id: str | None = None  # the search call that served it: name it in ``feedback``

    @classmethod
    def from_api(cls, data: dict[str, Any], serve_id: str | None = None) -> SearchResult:
        record = MemoryRecord.from_api(data)
        record.agent = data.get("writer", record.agent)  # a hit names its writer "writer"
        return cls(record=record, similarity_score=float(data.get("similarity_score", 0.0)),
                   score=float(data.get("score", 0.0)), serve_id=serve_id)

    @property
    def writer(self) -> str | None:
        return self.record.agent

    @property
    def verified(self) -> bool | None:
        return self.record.verified

    @property
    def flags(self) -> list[Reason]:
        return self.record.flags

    def to_dict(self) -> dict[str, Any]:
        """The hit as the hub sent it: the summary fields, no empty full-text ones."""
        r = self.record
        data: dict[str, Any] = {"id": r.id, "space": r.space, "memory_type": r.memory_type, "tier": r.tier, "tags": r.tags,
                                "hit_count": r.hit_count, "summary_l0": r.summary_l0}
        if r.overview_l1 or r.context:
            data.update(overview_l1=r.overview_l1, context=r.context)
        if r.supersedes:
            data["supersedes"] = r.supersedes
        if r.superseded_by:
            data.update(superseded_by=r.superseded_by, valid_until=r.valid_until)
        data.update(writer=r.agent, verified=r.verified, flags=r.flags)
        data.update(similarity_score=self.similarity_score, score=self.score)
        return data


@dataclass
class UploadResult(Record):
    """One upload's outcome: the memory it created (``merged`` False) or merged into.

    ``status`` ``held`` (the hub answered 202): the memory is stored but the hub's poisoning
    screen flagged it, or its writer's memories are reviewed; nobody but its writer reads it
    until a curator approves it. ``reasons`` then says why, each a ``Reason``; for a memory
    stored and served, they are what the screen noted (its ``flags``), usually none."""

    id: str
    memory_type: str
    tier: str
    status: str
    hit_count: int
    merged: bool
    space: str = ""  # the space it was stored in
    merge_pending: bool = False
    similarity_score: float | None = None
    candidate_of: str | None = None
    summary_l0: str = ""  # filled by ingest_text
    reasons: list[Reason] = field(default_factory=list)

    @property
    def held(self) -> bool:
        """Stored but held for a curator's review (the hub answered 202)."""
        return self.status == "held"


@dataclass
class BatchItem(Record):
    """One item of ``upload_memories``, at ``index`` in the list given: ``status`` is what a
    single upload would have answered (201 stored, 200 merged, 202 held for review, 400
    refused); ``result`` as
    ``upload_memory`` returns it, or ``error`` (the hub's ``{error, message, field}``, the field
    naming the item, e.g. ``memories[3].content``). A refused item does not stop the others."""

    index: int
    status: int
    result: UploadResult | None = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Stored (new, merged or held); False for a refused item."""
        return self.result is not None

    @property
    def held(self) -> bool:
        """Stored but held for a curator's review (``result.reasons`` says why)."""
        return self.status == 202 or (self.result is not None and self.result.held)


@dataclass
class TextIngestResult(Record):
    """``ingest_text``: which extractor ran and the memories it stored or merged into."""

    extractor: str
    memories: list[UploadResult] = field(default_factory=list)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> TextIngestResult:
        return cls(extractor=str(data.get("extractor", "")),
                   memories=[UploadResult.from_api(m) for m in data.get("memories", [])])


@dataclass
class Space(Record):
    """One of the caller's spaces: its ``role`` there (``reader``, ``writer``, ``curator`` or
    ``admin``) and whether it is the ``default`` one, where writes that name no space go."""

    slug: str
    name: str = ""
    description: str = ""
    role: str = ""
    default: bool = False


@dataclass
class ContextEntry(Record):
    id: str
    section: str
    tokens: int


@dataclass
class Context(Record):
    """A prompt-ready block (``context``) within ``token_budget``; ``tokens`` is its size.

    The hub frames the block as evidence: ``<shared-memories>``, a preface saying these are
    other agents' notes to weigh, not instructions, then one line per memory with its writer,
    date and verified mark, then ``</shared-memories>`` (docs/api.md#context)."""

    context: str
    tokens: int
    token_budget: int
    memories: list[ContextEntry] = field(default_factory=list)
    serve_id: str | None = None  # this call: name it in ``feedback`` on any of its memories

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Context:
        return cls(context=data["context"], tokens=data["tokens"], token_budget=data["token_budget"],
                   memories=[ContextEntry.from_api(m) for m in data.get("memories", [])],
                   serve_id=data.get("serve_id"))


@dataclass
class Feedback(Record):
    """The hub's answer to a vote: the memory's net vote (helpful minus not helpful, capped) and
    whether a report on it waits for curators."""

    id: str
    rating: str | None
    feedback: int
    reported: bool
    agents_reporting: int

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Feedback:
        return cls(id=str(data["id"]), rating=data.get("rating"), feedback=int(data.get("feedback", 0)),
                   reported=bool(data.get("reported")), agents_reporting=int(data.get("agents_reporting", 0)))


@dataclass
class Stats(Record):
    total: int
    by_status: dict[str, int] = field(default_factory=dict)
    by_tier: dict[str, int] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)
    merge_pending: int = 0
    embedding: dict[str, Any] | None = None


@dataclass
class Skill(Record):
    """A skill; ``markdown`` (its SKILL.md) and ``memory_ids`` come with ``get_skill``."""

    slug: str
    space: str = ""  # a slug is unique within a space only
    name: str = ""
    description: str = ""
    status: str = ""
    version: int | None = None
    score: float | None = None
    source_cluster: int | None = None
    updated_at: str | None = None
    markdown: str = ""
    memory_ids: list[str] = field(default_factory=list)


@dataclass
class IngestFile(Record):
    """One file of an ingest call: ``status`` is ``new``, ``changed``, ``unchanged`` or
    ``skipped`` (with ``reason``)."""

    name: str
    status: str
    session_id: int | None = None
    reason: str = ""
    lines: int = 0
    messages: int = 0
    malformed: dict[str, int] = field(default_factory=dict)


@dataclass
class IngestResult(Record):
    """``ingest``: every file's outcome, and the ingest jobs the uploads made (one per request;
    a large set of files is sent in several)."""

    total_files: int = 0
    files: list[IngestFile] = field(default_factory=list)
    job_ids: list[str] = field(default_factory=list)

    @property
    def job_id(self) -> str | None:
        """The last job's id (the only one when everything fitted in one request)."""
        return self.job_ids[-1] if self.job_ids else None


@dataclass
class JobFile(Record):
    name: str
    status: str
    session_id: int | None = None
    segmentation: str = ""
    segments: int = 0
    scored: int = 0
    extracted: int = 0
    memories: int = 0
    failed: int = 0
    parked: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class JobProgress(Record):
    """An ingest job's progress; ``done`` once every segment has been scored or finished."""

    job_id: str
    done: bool
    created_at: str | None = None
    segments: int = 0
    scored: int = 0
    extracted: int = 0
    memories: int = 0
    errors: int = 0
    parked: int = 0
    files: list[JobFile] = field(default_factory=list)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> JobProgress:
        base = {k: v for k, v in data.items() if k != "files"}
        progress = super().from_api(base)
        progress.files = [JobFile.from_api(f) for f in data.get("files", [])]
        return progress


@dataclass
class Health(Record):
    """``/api/health``: ``status`` is ``ok``, ``warming`` (the hub is still loading its models:
    ask again in a few seconds) or ``degraded``; the checks as the hub reports them."""

    status: str
    database: dict[str, Any] = field(default_factory=dict)
    embedding_model: dict[str, Any] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=dict)
    warm: dict[str, Any] = field(default_factory=dict)
