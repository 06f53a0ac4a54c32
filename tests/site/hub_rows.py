"""A small populated hub and every row of its knowledge tables, for the backup and export tests.

The hub is filled through the real services: uploads (new memories, exact and near duplicates
that become contributions, a planted secret the upload redacts, two that conflict), an archived memory, the
clusters the uploads join, and a skill crystallized from one of them."""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.services import agent_create
from clusters.models import (
    ClusterChange,
    ClusterMember,
    ClusterSuggestion,
    KnowledgeCluster,
    Skill,
    SkillVersion,
)
from clusters.services import cluster_crystallize
from memories.models import KnowledgeChange, Memory, MemoryContribution, MergeCandidate, TypeChange
from memories.services import memory_archive, memory_upload

STARTUP = [
    ("Django cannot reach PostgreSQL when the web container starts", "add a healthcheck to the db service"),
    ("Django fails to connect to PostgreSQL during docker compose up", "use depends_on with condition service_healthy"),
    ("web service starts before postgres is ready in docker compose", "retry the connection with exponential backoff"),
    ("psycopg OperationalError: connection refused at container start-up", "wait for pg_isready in the entrypoint"),
]


def populate(settings: Any) -> dict:
    """Fill the hub; returns the agents and the skill made."""
    settings.ULTRON_CRYSTALLIZATION_THRESHOLD = 3
    alice, bob = agent_create(name="alice-bot"), agent_create(name="bob-bot")
    for index, (content, fix) in enumerate(STARTUP):
        memory_upload(content=content, context="docker compose with web and db services", resolution=fix,
                      tags=["docker", "postgres"], agent=alice if index % 2 else bob)
    pip = memory_upload(content="pip install fails inside Docker: could not find a version that satisfies",
                        context="CI runner without outbound network", resolution="build with --network host",
                        tags=["python", "docker"], agent=alice).memory
    memory_upload(content="pip install fails inside Docker: could not find a version that satisfies",
                  context="CI runner without outbound network", resolution="build with --network host",
                  tags=["pip"], agent=bob)  # exact duplicate: a contribution and a hit
    memory_upload(content="pip install fails in a Docker build: no version satisfies the requirement",
                  context="CI runner without outbound network", resolution="build with --network host",
                  agent=bob)  # a near duplicate
    memory_upload(content="Calling the API with token sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr fails with 429",
                  resolution="back off and retry after the Retry-After header", agent=alice)
    # Two memories that disagree with nothing saying which is current: a conflict (a knowledge change).
    memory_upload(content="Run the integration tests against Redis 7 with the cluster mode disabled.",
                  context="billing-api CI", agent=alice)
    memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.",
                  context="billing-api CI", agent=bob)
    old = memory_upload(content="Use Python 3.8 for the build image", resolution="pin python:3.8-slim",
                        agent=bob).memory
    memory_archive(memory_id=old.pk)
    cluster = KnowledgeCluster.objects.order_by("-member_count", "pk").first()
    version = cluster_crystallize(cluster_id=cluster.pk)
    assert version is not None, "the test hub needs a skill"
    assert MemoryContribution.objects.count() >= 2 and Memory.objects.filter(status="archived").exists()
    assert KnowledgeChange.objects.exists()
    assert pip.pk and Skill.objects.exists() and ClusterMember.objects.count() >= 5
    return {"agents": (alice, bob), "skill": version.skill}


def populate_decisions() -> dict:
    """On a populated hub, the decisions a review queue and a history hold, each through its
    service: a supersession, a type decision, a curator's cluster split, then a merge folding the
    skill's cluster into the one the split made (it is gone; its skill versions name the
    survivor), and an open merge suggestion. Returns the merge (a ClusterChange)."""
    from clusters.services import cluster_split, clusters_merge
    from clusters.services.suggestions import cluster_suggestions_record
    from memories.services import memory_supersede
    from memories.services.types import memory_types_set

    pip = Memory.objects.filter(content__startswith="pip install fails inside", status="active").get()
    newer = memory_upload(content="pip install inside Docker works again since the runner has a proxy",
                          resolution="set HTTPS_PROXY in the build args").memory
    memory_supersede(old_id=pip.pk, new_id=newer.pk, decided_by="quinn", evidence="now works with a proxy")
    memory_types_set(memory_ids=[newer.pk], memory_type="pattern", user="quinn")
    big = KnowledgeCluster.objects.order_by("-member_count", "pk").first()
    assert SkillVersion.objects.filter(cluster=big).exists()  # the skill was crystallized from it
    members = list(ClusterMember.objects.filter(cluster=big).order_by("memory_id").values_list("memory_id", flat=True))
    split = cluster_split(cluster_id=big.pk, memory_ids=[str(members[0])], user="quinn")
    # The skill's cluster folds into the one the split made: it is gone, its versions name the survivor.
    merge = clusters_merge(into=split.to_cluster_id, other=big.pk, user="quinn")
    assert merge.skill_version_ids
    other = KnowledgeCluster.objects.exclude(pk=split.to_cluster_id).order_by("pk").first()
    cluster_suggestions_record(pairs=[(0.7, split.to_cluster_id, other.pk)], scanned=[],
                               space_of={split.to_cluster_id: other.space_id})
    assert ClusterSuggestion.objects.count() == 1 and ClusterChange.objects.count() == 2
    assert KnowledgeChange.objects.filter(old=pip, new=newer, state="done").exists() and TypeChange.objects.exists()
    return {"merge": merge}


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _rows(model: Any, *, drop: tuple[str, ...] = ()) -> list[dict]:
    fields = [f.attname for f in model._meta.concrete_fields if f.attname not in drop]
    return [{k: _plain(v) for k, v in row.items()} for row in model.objects.values(*fields)]


def knowledge_rows() -> dict[str, Any]:
    """Every row of memories, contributions, merge candidates, clusters, members, skills and
    versions, with integer ids replaced by what identifies the row in any hub (a cluster by its
    members, a skill by its slug, a contribution by its memory and time), so that two hubs holding
    the same knowledge compare equal."""
    members: dict[int, list[str]] = {}
    for cluster_id, memory_id in ClusterMember.objects.values_list("cluster_id", "memory_id"):
        members.setdefault(cluster_id, []).append(str(memory_id))

    def cluster_key(cluster_id: int | None) -> Any:
        if cluster_id is None:
            return None
        row = KnowledgeCluster.objects.values("topic", "created_at").get(pk=cluster_id)
        return tuple(sorted(members.get(cluster_id, []))) or (row["topic"], row["created_at"])

    slugs = dict(Skill.objects.values_list("pk", "slug"))
    versions = dict(SkillVersion.objects.values_list("pk", "version"))
    version_keys = {pk: (slug, number) for pk, slug, number in SkillVersion.objects.values_list("pk", "skill__slug", "version")}
    existing = set(KnowledgeCluster.objects.values_list("pk", flat=True))

    def existing_key(cluster_id: int) -> Any:
        return cluster_key(cluster_id) if cluster_id in existing else "gone"  # a cluster a merge folded in
    clusters = {}
    for row in _rows(KnowledgeCluster):
        row["skill_id"] = slugs.get(row["skill_id"])
        clusters[cluster_key(row.pop("id"))] = row
    out: dict[str, Any] = {
        "memories": {row["id"]: row for row in _rows(Memory)},
        "contributions": sorted(_rows(MemoryContribution, drop=("id",)),
                                key=lambda r: (str(r["memory_id"]), r["created_at"])),
        "candidates": sorted(_rows(MergeCandidate, drop=("id",)),
                             key=lambda r: (str(r["memory_id"]), str(r["duplicate_of_id"]))),
        "clusters": clusters,
        "members": {row.pop("memory_id"): {**row, "cluster_id": cluster_key(row["cluster_id"])}
                    for row in _rows(ClusterMember, drop=("id",))},
        "skills": {row.pop("slug"): {**row, "current_version_id": versions.get(row["current_version_id"]),
                                      "source_cluster_id": cluster_key(row["source_cluster_id"])}
                   for row in _rows(Skill, drop=("id",))},
        "versions": {(slugs[row.pop("skill_id")], row["version"]): {**row, "cluster_id": cluster_key(row["cluster_id"])}
                     for row in _rows(SkillVersion, drop=("id",))},
        "changes": {(str(row["old_id"]), str(row["new_id"])): row for row in _rows(KnowledgeChange, drop=("id",))},
        "type_changes": sorted(_rows(TypeChange, drop=("id",)), key=lambda r: (str(r["memory_id"]), r["created_at"])),
        "cluster_changes": [{**row, "from_cluster_id": existing_key(row["from_cluster_id"]),
                             "to_cluster_id": existing_key(row["to_cluster_id"]),
                             "skill_version_ids": sorted(version_keys[pk] for pk in row["skill_version_ids"])}
                            for row in _rows(ClusterChange, drop=("id",))],
        "suggestions": {(cluster_key(row.pop("first_id")), cluster_key(row.pop("second_id"))): row
                        for row in _rows(ClusterSuggestion, drop=("id",))},
    }
    return out


def knowledge_wipe() -> None:
    """Empty the knowledge tables (agents stay), as a hub before an import."""
    ClusterChange.objects.all().delete()  # names clusters by number, not by key: nothing cascades to it
    Skill.objects.update(current_version=None)
    SkillVersion.objects.all().delete()
    Skill.objects.all().delete()
    ClusterMember.objects.all().delete()
    KnowledgeCluster.objects.all().delete()
    Memory.objects.all().delete()  # contributions, candidates and edits go with them
