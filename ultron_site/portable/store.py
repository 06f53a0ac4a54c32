"""Storing one checked, redacted line of a portable export, keyed so that storing it twice
changes nothing: a memory by its UUID, a contribution by its memory and creation time, a
cluster by the memories it holds, a skill by its slug and a skill version by its number, a
knowledge change by its two memories, a type decision by its memory and time, a cluster change
by its kind, memories and time, a merge suggestion by its two clusters.

Rows keep the times the export gives them; integer ids are the importing hub's own: the file's
cluster numbers are mapped to the clusters stored from it, and a number no cluster line has (a
cluster a merge folded in) to an id drawn for it, which undoing that merge makes the cluster again under. This module
only composes the apps' import services (``memories.services.portable``,
``clusters.services.portable``): they write the rows, keep centroids as the cluster service
keeps them, and raise their own errors, which become a ``LineError`` naming the field here. Each
``*_store`` runs inside its line's savepoint (``load.Importer._store``): a ``LineError`` raised
after a service wrote undoes that write."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, transaction

from agents.selectors import agent_by_name, space_or_shared
from agents.services import agent_create
from clusters.selectors import skill_version_ids
from clusters.services import (
    MemberImport,
    SkillImportError,
    SkillVersionImport,
    cluster_change_import,
    cluster_id_reserve,
    cluster_import,
    cluster_skill_link,
    cluster_suggestion_import,
    skill_import,
)
from memories.services import (
    MemoryInputError,
    knowledge_change_import,
    memories_superseded_link,
    memory_contribution_import,
    memory_import,
    merge_candidate_import,
    type_change_import,
)
from ultron_site.portable.codec import LineError

if TYPE_CHECKING:
    from agents.models import Agent

ADDED, PRESENT, EXTENDED = "added", "present", "extended"


@dataclass
class Line:
    """One line on its way in: its number, kind, fields (redacted), and decoded vectors."""

    number: int
    kind: str
    data: dict
    vector: list[float] | None = None  # memory embedding, cluster centroid, skill embedding
    members: dict[str, list[float]] = field(default_factory=dict)  # cluster: memory id -> vector
    reembedded: bool = False
    # A memory the poisoning screen holds here (its reasons), whatever the other hub decided.
    hold_reasons: list[dict] | None = None


@dataclass
class Context:
    """What one import run carries from line to line."""

    clusters: dict[int, int] = field(default_factory=dict)  # the export's cluster id -> ours
    folded: dict[int, int] = field(default_factory=dict)  # a cluster id no line has (folded in) -> an id drawn
    skill_links: list[tuple[int, str]] = field(default_factory=list)  # (our cluster id, skill slug)
    new_memories: list[Any] = field(default_factory=list)
    superseded: dict[Any, Any] = field(default_factory=dict)  # a new memory -> the memory that superseded it
    reembedded_memories: set[str] = field(default_factory=set)
    agents: dict[str, Agent] = field(default_factory=dict)
    agents_created: list[str] = field(default_factory=list)

    agent_errors: dict[str, str] = field(default_factory=dict)
    space_id: int | None = None  # where the import stores everything (None: the shared space)

    def agents_resolve(self, names: set[str]) -> None:
        """Find or create (without a token: it cannot log in) the agents a batch names, each in
        its own savepoint, before the batch's lines are stored: a line refused later must not
        take an agent that other lines rely on with it."""
        for name in sorted(names - set(self.agents) - set(self.agent_errors)):
            try:
                with transaction.atomic():
                    agent = agent_by_name(name=name)
                    if agent is None:
                        agent = agent_create(name=name)
                        self.agents_created.append(name)
            except (DatabaseError, ValueError) as exc:
                self.agent_errors[name] = str(exc).strip().splitlines()[0]
                continue
            self.agents[name] = agent

    def agent(self, name: str | None) -> Agent | None:
        """The agent a line names (resolved for its batch), or None: no name, or one that could
        not be created (``agent_check`` refuses the line then)."""
        return self.agents.get(name) if name else None

    def agent_check(self, name: str | None) -> None:
        if name and name in self.agent_errors:
            raise LineError(f"agent: {name!r} could not be created: {self.agent_errors[name]}")


def _missing(exc: MemoryInputError, d: dict) -> LineError:
    """A service's "that memory is not in the hub", said of the line."""
    return LineError(f"{exc.field}: {d[exc.field]} is neither in the hub nor earlier in the file")


def memory_store(line: Line, ctx: Context) -> str:
    d = line.data
    added = memory_import(
        memory_id=d["id"], content=d["content"], context=d.get("context", ""), resolution=d.get("resolution", ""),
        tags=d.get("tags", []), memory_type=d["memory_type"], tier=d["tier"], status=d["status"],
        hold_reasons=line.hold_reasons, readers=d.get("readers", 0), verified_by=d.get("verified_by", ""),
        verified_at=d.get("verified_at"), screen_flags=d.get("screen_flags", []),
        hit_count=d["hit_count"], last_hit_at=d.get("last_hit_at"), summary_l0=d.get("summary_l0", ""),
        overview_l1=d.get("overview_l1", ""), embedding=line.vector, merge_pending=d.get("merge_pending", False),
        agent=ctx.agent(d.get("agent")), source=d.get("source", "api"),
        provenance=d.get("provenance", {}), redaction_counts=d.get("redaction_counts", {}),
        archived_at=d.get("archived_at"), valid_until=d.get("valid_until"), created_at=d["created_at"],
        updated_at=d["updated_at"], space=ctx.space_id,
    )
    # A memory the hub holds is there, whatever its agent; a new one whose agent could not be
    # created is refused (the line's savepoint undoes the write), as before anything was written.
    if not added:
        return PRESENT
    ctx.agent_check(d.get("agent"))
    ctx.new_memories.append(d["id"])
    if d.get("superseded_by"):  # the newer memory may come later in the file: linked at the end
        ctx.superseded[d["id"]] = d["superseded_by"]
    if line.reembedded:
        ctx.reembedded_memories.add(str(d["id"]))
    return ADDED


def contribution_store(line: Line, ctx: Context) -> str:
    d = line.data
    try:
        added = memory_contribution_import(
            memory_id=d["memory"], agent=ctx.agent(d.get("agent")), content=d["content"],
            context=d.get("context", ""), resolution=d.get("resolution", ""), tags=d.get("tags", []),
            similarity=d["similarity"], match_reason=d["match_reason"], redaction_counts=d.get("redaction_counts", {}),
            source=d.get("source", "api"), provenance=d.get("provenance", {}), created_at=d["created_at"],
            merged_at=d.get("merged_at"),
        )
    except MemoryInputError as exc:
        raise _missing(exc, d) from None
    # As for a memory: one already there is present, a new one is refused without its agent.
    if not added:
        return PRESENT
    ctx.agent_check(d.get("agent"))
    return ADDED


def candidate_store(line: Line, ctx: Context) -> str:
    d = line.data
    try:
        added = merge_candidate_import(
            memory_id=d["memory"], duplicate_of_id=d["duplicate_of"], similarity=d["similarity"],
            conflicts=d.get("conflicts", []), status=d["status"], llm_verdict=d.get("llm_verdict"),
            decided_by=d.get("decided_by", ""), decided_at=d.get("decided_at"), created_at=d["created_at"],
        )
    except MemoryInputError as exc:
        raise _missing(exc, d) from None
    return ADDED if added else PRESENT


def cluster_store(line: Line, ctx: Context) -> str:
    d = line.data
    members = d.get("members", [])
    # The file's vectors (centroid, a member's) stand only while no member was embedded anew here.
    embedded_here = {str(m["memory"]) for m in members} & ctx.reembedded_memories
    result = cluster_import(
        topic=d.get("topic", ""), centroid=None if embedded_here else line.vector,
        members=[MemberImport(memory_id=m["memory"], similarity=m["similarity"], joined_at=m["joined_at"],
                              vector=None if str(m["memory"]) in embedded_here else line.members.get(str(m["memory"])))
                 for m in members],
        superseded_skill_slugs=d.get("superseded_skill_slugs", []),
        members_at_last_crystallization=d.get("members_at_last_crystallization", 0),
        last_crystallization_at=d.get("last_crystallization_at"),
        last_crystallization_result=d.get("last_crystallization_result", ""),
        last_crystallization_reason=d.get("last_crystallization_reason", ""),
        labelled_member_count=d.get("labelled_member_count", 0),
        created_at=d["created_at"], updated_at=d["updated_at"], space_id=space_or_shared(ctx.space_id),
    )
    ctx.clusters[d["id"]] = result.cluster_id
    if d.get("skill"):
        ctx.skill_links.append((result.cluster_id, d["skill"]))
    # Not new: "extended" when members arrived for it, else it was all here.
    if result.created:
        return ADDED
    return EXTENDED if result.joined else PRESENT


def skill_store(line: Line, ctx: Context) -> str:
    d = line.data
    versions = [
        SkillVersionImport(
            version=v["version"], name=v["name"], description=v.get("description", ""), body=v["body"],
            memory_ids=v.get("memory_ids", []), cluster_id=ctx.clusters.get(v.get("cluster", -1)),
            quality=v.get("quality", {}), verification=v.get("verification", {}), score=v.get("score", 0.0),
            status=v["status"], reason=v.get("reason", ""), author=v.get("author", ""), created_at=v["created_at"],
        )
        for v in d.get("versions", [])
    ]
    try:
        result = skill_import(
            slug=d["slug"], name=d["name"], description=d.get("description", ""), status=d["status"],
            source_cluster_id=ctx.clusters.get(d.get("source_cluster", -1)), embedding=line.vector,
            current_version=d.get("current_version"), versions=versions, provenance=d.get("provenance", {}),
            created_at=d["created_at"], updated_at=d["updated_at"], space_id=space_or_shared(ctx.space_id),
        )
    except SkillImportError as exc:  # the current version is none of the line's versions
        raise LineError(str(exc)) from None
    # Not new: "extended" when it gained versions, else it was all here.
    if result.created:
        return ADDED
    return EXTENDED if result.versions_added else PRESENT


def change_store(line: Line, ctx: Context) -> str:
    d = line.data
    try:
        added = knowledge_change_import(
            old_id=d["old"], new_id=d["new"], kind=d["change_kind"], state=d["state"], order=d.get("order", ""),
            evidence=d.get("evidence", ""), similarity=d["similarity"], decided_by=d.get("decided_by", ""),
            decided_at=d.get("decided_at"), undone_by=d.get("undone_by", ""), undone_at=d.get("undone_at"),
            reviewed_by=d.get("reviewed_by", ""), reviewed_at=d.get("reviewed_at"), created_at=d["created_at"],
        )
    except MemoryInputError as exc:
        if exc.message != "is not in the hub":
            raise LineError(f"{exc.field}: {exc.message}") from None
        raise _missing(exc, d) from None
    return ADDED if added else PRESENT


def type_change_store(line: Line, ctx: Context) -> str:
    d = line.data
    try:
        added = type_change_import(
            memory_id=d["memory"], state=d["state"], chosen=d["chosen"], runner_up=d.get("runner_up") or "",
            margin=d.get("margin"), memory_type=d.get("memory_type") or "", decided_by=d.get("decided_by", ""),
            decided_at=d.get("decided_at"), undone_by=d.get("undone_by", ""), undone_at=d.get("undone_at"),
            created_at=d["created_at"],
        )
    except MemoryInputError as exc:
        raise _missing(exc, d) from None
    return ADDED if added else PRESENT


def _cluster_id(ctx: Context, number: int, *, folded_ok: bool, name: str) -> int:
    """Our id of the file's cluster ``number``: the cluster stored from its line; else (a change's
    cluster that a merge folded in, with ``folded_ok``) an id drawn once per number and import."""
    if number in ctx.clusters:
        return ctx.clusters[number]
    if not folded_ok:
        raise LineError(f"{name}: cluster {number} is not earlier in the file")
    if number not in ctx.folded:
        ctx.folded[number] = cluster_id_reserve()
    return ctx.folded[number]


def cluster_change_store(line: Line, ctx: Context) -> str:
    d = line.data
    refs = [(v["skill"], v["version"]) for v in d.get("skill_versions", [])]
    added = cluster_change_import(
        kind=d["change_kind"], from_cluster_id=_cluster_id(ctx, d["from_cluster"], folded_ok=True, name="from_cluster"),
        to_cluster_id=_cluster_id(ctx, d["to_cluster"], folded_ok=True, name="to_cluster"),
        from_topic=d.get("from_topic", ""), to_topic=d.get("to_topic", ""), memory_ids=d["memory_ids"],
        similarity=d.get("similarity"), decided_by=d["decided_by"], skill_version_ids=skill_version_ids(refs),
        undone_by=d.get("undone_by", ""), undone_at=d.get("undone_at"), created_at=d["created_at"],
        space_id=space_or_shared(ctx.space_id),
    )
    return ADDED if added else PRESENT


def cluster_suggestion_store(line: Line, ctx: Context) -> str:
    d = line.data
    try:
        added = cluster_suggestion_import(
            first_id=_cluster_id(ctx, d["first"], folded_ok=False, name="first"),
            second_id=_cluster_id(ctx, d["second"], folded_ok=False, name="second"), similarity=d["similarity"],
            shared_words=d.get("shared_words", []), pairs=d.get("pairs", []), status=d["status"],
            decided_by=d.get("decided_by", ""), decided_at=d.get("decided_at"), created_at=d["created_at"],
            updated_at=d["updated_at"],
        )
    except ValueError as exc:  # the two clusters are one, or of two spaces
        raise LineError(f"second: {exc}") from None
    return ADDED if added else PRESENT


def skill_links_store(ctx: Context) -> None:
    """Point clusters at their skills (the skills come after the clusters in the file); a
    cluster that already has a skill keeps it. Superseded memories point at the memory that
    replaced them (it may come after them in the file)."""
    for cluster_id, slug in ctx.skill_links:
        cluster_skill_link(cluster_id=cluster_id, slug=slug)
    ctx.skill_links.clear()
    memories_superseded_link(links=ctx.superseded)
    ctx.superseded.clear()


STORE = {"memory": memory_store, "contribution": contribution_store, "candidate": candidate_store,
         "change": change_store, "type_change": type_change_store, "cluster": cluster_store, "skill": skill_store,
         "cluster_change": cluster_change_store, "cluster_suggestion": cluster_suggestion_store}
