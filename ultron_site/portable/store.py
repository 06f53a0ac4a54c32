"""Storing one checked, redacted line of a portable export, keyed so that storing it twice
changes nothing: a memory by its UUID, a contribution by its memory and creation time, a
cluster by the memories it holds, a skill by its slug and a skill version by its number.

Rows keep the times the export gives them (``auto_now`` fields are set on insert, so the times
are written back right after); integer ids are the importing hub's own."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from agents.models import Agent
from agents.services import agent_create
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillVersion
from memories.models import Memory, MemoryContribution, MergeCandidate
from memories.text import content_hash
from memories.vectors import vector_literal
from ultron_site.portable.codec import LineError

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

    def agents_resolve(self, names: set[str]) -> None:
        """Find or create (without a token: it cannot log in) the agents a batch names, each in
        its own savepoint, before the batch's lines are stored: a line refused later must not
        take an agent that other lines rely on with it."""
        for name in sorted(names - set(self.agents) - set(self.agent_errors)):
            try:
                with transaction.atomic():
                    agent = Agent.objects.filter(name=name).first()
                    if agent is None:
                        agent = agent_create(name=name)
                        self.agents_created.append(name)
            except (DatabaseError, ValueError) as exc:
                self.agent_errors[name] = str(exc).strip().splitlines()[0]
                continue
            self.agents[name] = agent

    def agent(self, name: str | None) -> Agent | None:
        if not name:
            return None
        if name in self.agent_errors:
            raise LineError(f"agent: {name!r} could not be created: {self.agent_errors[name]}")
        return self.agents[name]


def _times(model: Any, pk: Any, data: dict, *names: str) -> None:
    model.objects.filter(pk=pk).update(**{name: data[name] for name in names})


def memory_store(line: Line, ctx: Context) -> str:
    d = line.data
    if Memory.objects.filter(pk=d["id"]).exists():
        return PRESENT
    memory = Memory.objects.create(
        id=d["id"], content=d["content"], context=d.get("context", ""), resolution=d.get("resolution", ""),
        tags=d.get("tags", []), memory_type=d["memory_type"], tier=d["tier"], status=d["status"],
        hit_count=d["hit_count"], last_hit_at=d.get("last_hit_at"), summary_l0=d.get("summary_l0", ""),
        overview_l1=d.get("overview_l1", ""), embedding=line.vector,
        content_hash=content_hash(d["content"], d.get("context", ""), d.get("resolution", "")),
        merge_pending=d.get("merge_pending", False), agent=ctx.agent(d.get("agent")),
        source=d.get("source", "api"), provenance=d.get("provenance", {}),
        redaction_counts=d.get("redaction_counts", {}), archived_at=d.get("archived_at"),
    )
    _times(Memory, memory.pk, d, "created_at", "updated_at")
    ctx.new_memories.append(memory.pk)
    if line.reembedded:
        ctx.reembedded_memories.add(str(memory.pk))
    return ADDED


def contribution_store(line: Line, ctx: Context) -> str:
    d = line.data
    if not Memory.objects.filter(pk=d["memory"]).exists():
        raise LineError(f"memory: {d['memory']} is neither in the hub nor earlier in the file")
    if MemoryContribution.objects.filter(memory_id=d["memory"], created_at=d["created_at"]).exists():
        return PRESENT
    row = MemoryContribution.objects.create(
        memory_id=d["memory"], agent=ctx.agent(d.get("agent")), content=d["content"],
        context=d.get("context", ""), resolution=d.get("resolution", ""), tags=d.get("tags", []),
        similarity=d["similarity"], match_reason=d["match_reason"][:16],
        redaction_counts=d.get("redaction_counts", {}), source=d.get("source", "api"),
        provenance=d.get("provenance", {}), merged_at=d.get("merged_at"),
    )
    _times(MemoryContribution, row.pk, d, "created_at")
    return ADDED


def candidate_store(line: Line, ctx: Context) -> str:
    d = line.data
    found = set(Memory.objects.filter(pk__in=[d["memory"], d["duplicate_of"]]).values_list("pk", flat=True))
    for name in ("memory", "duplicate_of"):
        if d[name] not in found:
            raise LineError(f"{name}: {d[name]} is neither in the hub nor earlier in the file")
    if MergeCandidate.objects.filter(memory_id=d["memory"], duplicate_of_id=d["duplicate_of"]).exists():
        return PRESENT
    row = MergeCandidate.objects.create(
        memory_id=d["memory"], duplicate_of_id=d["duplicate_of"], similarity=d["similarity"],
        conflicts=d.get("conflicts", []), status=d["status"], llm_verdict=d.get("llm_verdict"),
        decided_by=d.get("decided_by", "")[:150], decided_at=d.get("decided_at"),
    )
    _times(MergeCandidate, row.pk, d, "created_at")
    return ADDED


def _shift(cluster_id: int, vectors: list[Any]) -> None:
    """Add members' vectors to a cluster's centroid sum (as membership.py keeps it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {KnowledgeCluster._meta.db_table} SET centroid = centroid + %s::vector, "
            "member_count = member_count + %s WHERE id = %s",
            [vector_literal(np.sum(np.asarray(vectors, dtype=np.float64), axis=0)), len(vectors), cluster_id],
        )


def _member_vectors(line: Line, ids: list[str], ctx: Context) -> dict[str, list[float]]:
    """Each joining memory's vector: the export's, unless the memory was re-embedded here (or the
    export carried none for it), then the memory's stored embedding."""
    stored = dict(Memory.objects.filter(pk__in=ids).values_list("pk", "embedding"))
    out = {}
    for memory_id, embedding in stored.items():
        key = str(memory_id)
        given = line.members.get(key)
        out[key] = given if given is not None and key not in ctx.reembedded_memories else list(embedding)
    return out


def _members_create(cluster_id: int, members: list[dict], vectors: dict[str, list[float]]) -> None:
    rows = ClusterMember.objects.bulk_create([
        ClusterMember(cluster_id=cluster_id, memory_id=m["memory"], vector=vectors[str(m["memory"])],
                      similarity=m["similarity"]) for m in members])
    for row, member in zip(rows, members, strict=True):
        row.joined_at = member["joined_at"]  # bulk_create set it to now (auto_now_add)
    ClusterMember.objects.bulk_update(rows, ["joined_at"])


def cluster_store(line: Line, ctx: Context) -> str:
    d = line.data
    members = d.get("members", [])
    ids = [str(m["memory"]) for m in members]
    taken = Counter(ClusterMember.objects.filter(memory_id__in=ids).values_list("cluster_id", flat=True))
    vectors = _member_vectors(line, ids, ctx)
    joining = [m for m in members if str(m["memory"]) in vectors]
    if taken or not members:
        matched = (taken.most_common(1)[0][0] if taken else
                   KnowledgeCluster.objects.filter(topic=d.get("topic", ""), created_at=d["created_at"])
                   .values_list("pk", flat=True).first())
        if matched is not None:
            ctx.clusters[d["id"]] = matched
            free = set(ids) - set(map(str, ClusterMember.objects.filter(memory_id__in=ids)
                                      .values_list("memory_id", flat=True)))
            joining = [m for m in joining if str(m["memory"]) in free]
            if joining:  # members whose memories arrived after the cluster did
                _shift(matched, [vectors[str(m["memory"])] for m in joining])
                _members_create(matched, joining, vectors)
            if d.get("skill"):
                ctx.skill_links.append((matched, d["skill"]))
            return EXTENDED if joining else PRESENT
    exact = (line.vector is not None and len(joining) == len(members)
             and not any(str(m["memory"]) in ctx.reembedded_memories for m in joining))
    if exact:
        centroid = line.vector
    else:  # the sum of the members it really holds, in this hub's space
        summed = np.sum(np.asarray([vectors[str(m["memory"])] for m in joining], dtype=np.float64), axis=0) \
            if joining else np.zeros(settings.ULTRON_EMBEDDING_DIMENSIONS)
        centroid = [float(x) for x in summed]
    cluster = KnowledgeCluster.objects.create(
        topic=d.get("topic", "")[:200], centroid=centroid, member_count=len(joining),
        superseded_skill_slugs=d.get("superseded_skill_slugs", []),
        members_at_last_crystallization=d.get("members_at_last_crystallization", 0),
        last_crystallization_at=d.get("last_crystallization_at"),
        last_crystallization_result=d.get("last_crystallization_result", "")[:20],
        last_crystallization_reason=d.get("last_crystallization_reason", ""),
        labelled_member_count=d.get("labelled_member_count", 0),
    )
    _members_create(cluster.pk, joining, vectors)
    _times(KnowledgeCluster, cluster.pk, d, "created_at", "updated_at")
    ctx.clusters[d["id"]] = cluster.pk
    if d.get("skill"):
        ctx.skill_links.append((cluster.pk, d["skill"]))
    return ADDED


def _version_create(skill: Skill, v: dict, ctx: Context) -> SkillVersion:
    version = SkillVersion.objects.create(
        skill=skill, version=v["version"], name=v["name"][:200], description=v.get("description", ""),
        body=v["body"], memory_ids=v.get("memory_ids", []), cluster_id=ctx.clusters.get(v.get("cluster", -1)),
        quality=v.get("quality", {}), verification=v.get("verification", {}), score=v.get("score", 0.0),
        status=v["status"], reason=v.get("reason", ""), author=v.get("author", "")[:100],
    )
    _times(SkillVersion, version.pk, v, "created_at")
    return version


def skill_store(line: Line, ctx: Context) -> str:
    d = line.data
    skill = Skill.objects.filter(slug=d["slug"]).first()
    created = skill is None
    if skill is None:
        skill = Skill.objects.create(
            slug=d["slug"][:50], name=d["name"][:200], description=d.get("description", ""), status=d["status"],
            source_cluster_id=ctx.clusters.get(d.get("source_cluster", -1)), embedding=line.vector,
        )
    have = set(skill.versions.values_list("version", flat=True))
    added = {v["version"]: _version_create(skill, v, ctx) for v in d.get("versions", []) if v["version"] not in have}
    if created:
        current = d.get("current_version")
        if current is not None:
            if current not in added:
                raise LineError(f"current_version: version {current} is not among the skill's versions")
            Skill.objects.filter(pk=skill.pk).update(current_version=added[current])
        _times(Skill, skill.pk, d, "created_at", "updated_at")
    return ADDED if created else (EXTENDED if added else PRESENT)


def skill_links_store(ctx: Context) -> None:
    """Point clusters at their skills (the skills come after the clusters in the file); a
    cluster that already has a skill keeps it."""
    for cluster_id, slug in ctx.skill_links:
        skill_id = Skill.objects.filter(slug=slug).values_list("pk", flat=True).first()
        if skill_id is not None:
            KnowledgeCluster.objects.filter(pk=cluster_id, skill__isnull=True).update(skill_id=skill_id)
    ctx.skill_links.clear()


STORE = {"memory": memory_store, "contribution": contribution_store, "candidate": candidate_store,
         "cluster": cluster_store,
         "skill": skill_store}
