"""Reading a portable export into the hub (docs/operations.md#export-and-import).

Lines are checked one by one; a bad line is reported by its number and skipped, the others are
stored. Lines go in batches: one redaction pass and one embedding call per batch, one
transaction per batch, and a savepoint per line so that a line the database refuses is
reported without undoing its neighbours. Every text is redacted on the way in, as an upload's
is: an export from elsewhere may hold what this hub never stores."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, transaction

from agents.models import Space
from agents.selectors import space_or_shared
from clusters.models import ClusterMember
from clusters.services import cluster_assign, skill_search_text
from core.spaces import maintenance
from memories.models import EmbeddingSpace, Memory, MemoryContribution, Status
from memories.redaction import Redacted
from memories.redaction.policy import Occasion, redact_for
from memories.screening import memories_screen
from memories.services import (
    CleanMemory,
    EmbeddingSpaceMismatch,
    embed_texts,
    embedding_space_ensure,
    memory_inputs_clean,
)
from memories.text import embedding_text
from ultron_site.portable.codec import LineError, header_check, record_check, vector_decode
from ultron_site.portable.store import STORE, Context, Line, skill_links_store

BATCH = 200

# Texts redacted besides a memory's or contribution's body (which memory_inputs_clean takes):
# paths into a line's fields; a JSON object's string leaves are redacted one by one.
_EXTRA_TEXTS = {
    "memory": (("summary_l0",), ("overview_l1",), ("provenance",)),
    "contribution": (("provenance",),),
    "candidate": (("conflicts",),),
    "cluster": (("topic",), ("last_crystallization_reason",)),
    "skill": (("name",), ("description",), ("provenance",)),
    "change": (("evidence",),),
    "type_change": (),
    "cluster_change": (("from_topic",), ("to_topic",)),
    "cluster_suggestion": (("shared_words",), ("pairs",)),
}
_VERSION_TEXTS = ("name", "description", "body", "reason", "quality", "verification")
# Text the hub writes itself (cluster topics, skills) from memories already redacted: names are
# not looked for again there, since the name detector takes a skill's slug for a person's name.
_WRITTEN_BY_THE_HUB = ("cluster", "skill", "cluster_change")


class ImportFailed(RuntimeError):
    """The file cannot be imported at all (not an export, another embedding space ...)."""


@dataclass
class ImportReport:
    added: Counter = field(default_factory=Counter)
    present: Counter = field(default_factory=Counter)  # already in the hub: left as they are
    extended: Counter = field(default_factory=Counter)  # already there, completed by the file
    bad: list[tuple[int, str]] = field(default_factory=list)
    reembedded: int = 0
    redacted: Counter = field(default_factory=Counter)  # what redaction took out now, by tag
    agents_created: list[str] = field(default_factory=list)
    clustered: int = 0  # imported memories given a cluster here (the file had none for them)
    complete: bool = False  # the file's end line was read


def _is_uuid(text: str) -> bool:
    try:
        return len(text) == 36 and bool(uuid.UUID(text))
    except ValueError:
        return False


def _leaves(value: Any, path: tuple) -> Iterable[tuple[tuple, str]]:
    """The strings in a value, with their paths; the hub's own ids (UUIDs) are no secret and
    stay as they are (redaction would turn them into ``<UUID>``)."""
    if isinstance(value, str):
        if not _is_uuid(value):
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))


def _assign(root: Any, path: tuple, value: str) -> None:
    for key in path[:-1]:
        root = root[key]
    root[path[-1]] = value


def _text_slots(line: Line) -> list[tuple[tuple, str]]:
    d = line.data
    slots = [leaf for path in _EXTRA_TEXTS[line.kind] if path[0] in d for leaf in _leaves(d[path[0]], path)]
    for index, version in enumerate(d.get("versions", [])):
        slots += [leaf for name in _VERSION_TEXTS if name in version
                  for leaf in _leaves(version[name], ("versions", index, name))]
    return slots


def _redact_slots(slots: list[tuple[Line, tuple[tuple, str]]]) -> list[Redacted]:
    """Each slot's text redacted: another hub's memories as any text arriving here, the text its
    own writers produced (cluster topics, skills) under the hub-text policy."""
    texts = [slot[1] for _, slot in slots]
    hub = [i for i, (line, _) in enumerate(slots) if line.kind in _WRITTEN_BY_THE_HUB]
    skip = set(hub)
    out = redact_for(Occasion.IMPORT, [t if i not in skip else "" for i, t in enumerate(texts)])
    for i, result in zip(hub, redact_for(Occasion.HUB_TEXT, [texts[i] for i in hub]), strict=True):
        out[i] = result
    return out


class Importer:
    def __init__(self, space_id: int | None = None) -> None:
        self.report = ImportReport()
        self.ctx = Context(space_id=space_id)
        self.same_space = False
        self.dims = 0
        self.allowed_hosts = list(Space.objects.filter(pk=space_or_shared(space_id)).values_list(
            "allowed_hosts", flat=True).first() or [])

    def header(self, data: Any) -> None:
        header = header_check(data)
        try:
            embedding_space_ensure()  # adopts the configured model while the hub is empty
        except EmbeddingSpaceMismatch as exc:
            raise ImportFailed(str(exc)) from None
        mine = EmbeddingSpace.objects.get()
        theirs = header.get("embedding_space") or {}
        self.dims = int(theirs.get("dimensions") or mine.dimensions)
        self.same_space = (theirs.get("provider"), theirs.get("model"), theirs.get("dimensions"),
                           theirs.get("text_format")) == (mine.provider, mine.model, mine.dimensions, mine.text_format)

    def bad(self, number: int, message: str) -> None:
        self.report.bad.append((number, message))

    # --- one batch --------------------------------------------------------------------------

    def _redact(self, lines: list[Line]) -> list[Line]:
        bodies = [line for line in lines if line.kind in ("memory", "contribution")]
        cleaned = memory_inputs_clean([{k: line.data.get(k) for k in ("content", "context", "resolution", "tags")}
                                       for line in bodies])
        refused: set[int] = set()
        changed: set[int] = set()
        # Another hub's memories are screened like uploads (docs/flow.md#screening): what the screen holds
        # arrives held, whatever the exporting hub decided.
        screened = [(line, clean) for line, clean in zip(bodies, cleaned, strict=True)
                    if line.kind == "memory" and isinstance(clean, CleanMemory)]
        verdicts = memories_screen([{"content": c.content, "context": c.context, "resolution": c.resolution,
                                     "tags": c.tags, "hidden": c.hidden} for _, c in screened],
                                   allowed_hosts=self.allowed_hosts) if screened else []
        for (line, _), verdict in zip(screened, verdicts, strict=True):
            if verdict.held:
                line.hold_reasons = verdict.reasons()
        for line, clean in zip(bodies, cleaned, strict=True):
            if not isinstance(clean, CleanMemory):
                self.bad(line.number, f"{line.kind}: {clean}")
                refused.add(line.number)
                continue
            given = (line.data["content"], line.data.get("context", ""), line.data.get("resolution", ""))
            if (clean.content, clean.context, clean.resolution) != given:
                changed.add(line.number)
            line.data.update(content=clean.content, context=clean.context, resolution=clean.resolution,
                             tags=clean.tags)
            self._count(line, clean.redactions)
        lines = [line for line in lines if line.number not in refused]
        slots = [(line, slot) for line in lines for slot in _text_slots(line)]
        for (line, (path, before)), result in zip(slots, _redact_slots(slots), strict=True):
            if result.text != before:
                _assign(line.data, path, result.text)
                self._count(line, result.counts)
                if line.kind == "skill":
                    changed.add(line.number)
        for line in lines:
            line.reembedded = not self.same_space or line.number in changed
        return lines

    def _count(self, line: Line, counts: Counter) -> None:
        if not counts:
            return
        self.report.redacted.update(counts)
        if line.kind in ("memory", "contribution"):
            total = Counter(line.data.get("redaction_counts") or {})
            total.update(counts)
            line.data["redaction_counts"] = dict(total)

    def _vectors(self, lines: list[Line]) -> list[Line]:
        """Decode the export's vectors, or embed anew what needs it (another embedding space, or
        a text that redaction changed here)."""
        kept: list[Line] = []
        to_embed: list[tuple[Line, str]] = []
        for line in lines:
            d = line.data
            try:
                if line.kind == "memory":
                    if line.reembedded:
                        to_embed.append((line, embedding_text(d["content"], d["context"], d["resolution"])))
                    else:
                        line.vector = vector_decode(d["embedding"], self.dims)
                elif line.kind == "cluster" and self.same_space:
                    line.vector = vector_decode(d["centroid"], self.dims)
                    line.members = {str(m["memory"]): vector_decode(m["vector"], self.dims)
                                    for m in d.get("members", []) if m.get("vector")}
                elif line.kind == "skill":
                    current = next((v for v in d.get("versions", []) if v["version"] == d.get("current_version")),
                                   None)
                    if line.reembedded and current is not None:
                        to_embed.append((line, skill_search_text(_Version(current))))
                    elif not line.reembedded and d.get("embedding"):
                        line.vector = vector_decode(d["embedding"], self.dims)
            except LineError as exc:
                self.bad(line.number, f"{line.kind}: {_VECTOR_FIELD[line.kind]}: {exc}")
                continue
            kept.append(line)
        if to_embed:
            for (line, _), vector in zip(to_embed, embed_texts([t for _, t in to_embed]), strict=True):
                line.vector = vector
            self.report.reembedded += sum(1 for line, _ in to_embed if line.kind == "memory")
        return kept

    def _store(self, lines: list[Line]) -> None:
        with transaction.atomic():
            self.ctx.agents_resolve({line.data["agent"] for line in lines if line.data.get("agent")})
            for line in lines:
                try:
                    with transaction.atomic():
                        outcome = STORE[line.kind](line, self.ctx)
                except LineError as exc:
                    self.bad(line.number, f"{line.kind}: {exc}")
                    continue
                except DatabaseError as exc:
                    self.bad(line.number, f"{line.kind}: the database refused it: {str(exc).strip()}")
                    continue
                getattr(self.report, outcome)[line.kind] += 1  # added, present or extended

    def _new(self, lines: list[Line]) -> list[Line]:
        """The lines whose memory or contribution the hub does not hold yet; the others are
        counted as there without being redacted or embedded again (a repeated import is quick)."""
        ids = [line.data["id"] for line in lines if line.kind == "memory"]
        target = space_or_shared(self.ctx.space_id)
        held, elsewhere = set(), {}
        # Read past the target space's scope: which space holds an id the file brings (the
        # operator's console knows every space; the import itself reads and writes the target only).
        with maintenance():
            holders = list(Memory.objects.filter(pk__in=ids).values_list("pk", "space_id", "space__slug"))
        for pk, space_id, slug in holders:
            if space_id == target:
                held.add(pk)
            else:
                elsewhere[pk] = slug
        keys = [(line.data["memory"], line.data["created_at"]) for line in lines if line.kind == "contribution"]
        held_keys = set(MemoryContribution.objects.filter(memory_id__in=[k[0] for k in keys])
                        .values_list("memory_id", "created_at"))
        out = []
        for line in lines:
            if line.kind == "memory" and line.data["id"] in elsewhere:
                # Ids are kept on import: a memory another space holds cannot be restored into this one.
                self.bad(line.number, f"memory: id: memory {line.data['id']} is in space {elsewhere[line.data['id']]!r}; "
                                      "an import keeps ids, so it cannot go to another space too "
                                      "(promote copies a memory across spaces)")
                continue
            if (line.kind == "memory" and line.data["id"] in held) or (
                    line.kind == "contribution" and (line.data["memory"], line.data["created_at"]) in held_keys):
                self.report.present[line.kind] += 1
                continue
            out.append(line)
        return out

    def flush(self, lines: list[Line]) -> None:
        lines = self._new(lines)
        if lines:
            self._store(self._vectors(self._redact(lines)))

    def finish(self) -> None:
        with transaction.atomic():
            skill_links_store(self.ctx)
        # Active memories the file put in no cluster join one, as an upload's would.
        clustered = set(ClusterMember.objects.filter(memory_id__in=self.ctx.new_memories)
                        .values_list("memory_id", flat=True))
        active = Memory.objects.filter(pk__in=self.ctx.new_memories, status=Status.ACTIVE).values_list("pk", flat=True)
        for memory_id in [pk for pk in active if pk not in clustered]:
            if cluster_assign(memory_id=memory_id) is not None:
                self.report.clustered += 1
        self.report.agents_created = self.ctx.agents_created


@dataclass
class _Version:
    """A version's fields as ``skill_search_text`` reads them."""

    data: dict

    def __getattr__(self, name: str) -> Any:
        return self.data.get(name, "")


_VECTOR_FIELD = {"memory": "embedding", "cluster": "centroid or a member's vector", "skill": "embedding"}


def import_lines(stream: Iterable[str | bytes], *, batch: int = BATCH, space_id: int | None = None) -> ImportReport:
    """Import an export read line by line from ``stream``."""
    importer = Importer(space_id)
    pending: list[Line] = []
    for number, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if not text.strip() and number > 1:
                continue
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if number == 1:
                raise ImportFailed(f"line 1: not JSON ({exc}); this is not an Ultron Hub export") from None
            importer.bad(number, f"not JSON in UTF-8: {exc}")
            continue
        if number == 1:
            try:
                importer.header(data)
            except LineError as exc:
                raise ImportFailed(f"line 1: {exc}") from None
            continue
        if isinstance(data, dict) and data.get("kind") == "end":
            importer.report.complete = True
            continue
        try:
            kind, fields = record_check(data)
        except LineError as exc:
            importer.bad(number, str(exc))
            continue
        pending.append(Line(number, kind, fields))
        if len(pending) >= batch:
            importer.flush(pending)
            pending = []
    if importer.dims == 0:
        raise ImportFailed("the file is empty: it is not an Ultron Hub export")
    importer.flush(pending)
    importer.finish()
    return importer.report
