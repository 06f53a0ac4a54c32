"""Storing one checked, redacted line of a portable export, keyed so that storing it twice
changes nothing: a memory by its UUID, a contribution by its memory and creation time, a
cluster by the memories it holds, a skill by its slug and a skill version by its number.

Rows keep the times the export gives them; integer ids are the importing hub's own. This module
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
from clusters.services import (
    MemberImport,
    SkillImportError,
    SkillVersionImport,
    cluster_import,
    cluster_skill_link,
    skill_import,
)
from memories.services import (
    MemoryInputError,
    memory_contribution_import,
    memory_import,
    merge_candidate_import,
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


@dataclass
class Context:
    """What one import run carries from line to line."""

    clusters: dict[int, int] = field(default_factory=dict)  # the export's cluster id -> ours
    skill_links: list[tuple[int, str]] = field(default_factory=list)  # (our cluster id, skill slug)
    new_memories: list[Any] = field(default_factory=list)
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
        hit_count=d["hit_count"], last_hit_at=d.get("last_hit_at"), summary_l0=d.get("summary_l0", ""),
        overview_l1=d.get("overview_l1", ""), embedding=line.vector, merge_pending=d.get("merge_pending", False),
        agent=ctx.agent(d.get("agent")), source=d.get("source", "api"),
        provenance=d.get("provenance", {}), redaction_counts=d.get("redaction_counts", {}),
        archived_at=d.get("archived_at"), created_at=d["created_at"], updated_at=d["updated_at"],
        space=ctx.space_id,
    )
    # A memory the hub holds is there, whatever its agent; a new one whose agent could not be
    # created is refused (the line's savepoint undoes the write), as before anything was written.
    if not added:
        return PRESENT
    ctx.agent_check(d.get("agent"))
    ctx.new_memories.append(d["id"])
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


def skill_links_store(ctx: Context) -> None:
    """Point clusters at their skills (the skills come after the clusters in the file); a
    cluster that already has a skill keeps it."""
    for cluster_id, slug in ctx.skill_links:
        cluster_skill_link(cluster_id=cluster_id, slug=slug)
    ctx.skill_links.clear()


STORE = {"memory": memory_store, "contribution": contribution_store, "candidate": candidate_store,
         "cluster": cluster_store,
         "skill": skill_store}
