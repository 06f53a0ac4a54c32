"""Rebuilding every cluster from the active memories (deterministic), relabelling topics, and
following an embedding-model change."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from clusters.judgements.label import Corpus, cluster_label
from clusters.models import ClusterMember, KnowledgeCluster, Skill
from clusters.services.search import skill_search_text
from memories.models import Memory, Status
from memories.services import embed_texts
from memories.thresholds import model_thresholds


@dataclass
class _Grouping:
    """The outcome of one greedy pass: each row's cluster index and similarity, each cluster's
    vector sum."""

    assignment: list[int]
    similarity: list[float]
    sums: np.ndarray
    count: int


def _group_in_order(vectors: list[Any], *, threshold: float, dims: int) -> _Grouping:
    """Each vector, in order, joins the most similar cluster so far at cosine ≥ ``threshold``
    (against the running unit centroid) or starts a new one."""
    sums: np.ndarray = np.zeros((1024, dims), dtype=np.float32)   # grows by doubling
    units: np.ndarray = np.zeros((1024, dims), dtype=np.float32)
    count = 0
    assignment: list[int] = []
    similarity: list[float] = []
    for embedding in vectors:
        vector = np.asarray(embedding, dtype=np.float32)
        if count:
            sims = units[:count] @ vector
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                sums[best] += vector
                units[best] = sums[best] / (np.linalg.norm(sums[best]) or 1.0)
                assignment.append(best)
                similarity.append(float(sims[best]))
                continue
        if count == len(sums):
            sums = np.vstack([sums, np.zeros_like(sums)])
            units = np.vstack([units, np.zeros_like(units)])
        sums[count] = vector
        units[count] = vector / (np.linalg.norm(vector) or 1.0)
        assignment.append(count)
        similarity.append(1.0)
        count += 1
    return _Grouping(assignment, similarity, sums, count)


def _topics(rows: list[tuple], grouping: _Grouping) -> list[str]:
    """A keyword topic per cluster, terms weighted against their frequency in all memories
    (offline: the rebuild is deterministic, and may name thousands of clusters)."""
    corpus = Corpus([(content, context) for _, _, content, context in rows])
    texts: list[list[str]] = [[] for _ in range(grouping.count)]
    for (_, _, content, context), cluster_index in zip(rows, grouping.assignment, strict=True):
        texts[cluster_index].append(f"{content} {context}")
    return [cluster_label(texts[i], corpus=corpus) for i in range(grouping.count)]


def _skills_follow(clusters: list[KnowledgeCluster], members_of: dict[int, set[str]],
                   old_skills: dict[int, set[str]]) -> None:
    """Each skill follows the new cluster holding most of its memories, the best-overlapping
    skill first; a second skill landing on a taken cluster is recorded as superseded there."""
    placements = []
    for skill_id, memory_ids in old_skills.items():
        if not memory_ids:
            continue
        best = max(members_of, key=lambda c: (len(members_of[c] & memory_ids), -c), default=None)
        if best is not None and members_of[best] & memory_ids:
            placements.append((-len(members_of[best] & memory_ids), skill_id, best))
    slugs = dict(Skill.objects.values_list("pk", "slug"))
    for _, skill_id, best in sorted(placements):
        cluster = clusters[best]
        if cluster.skill_id is None:
            cluster.skill_id = skill_id
            cluster.members_at_last_crystallization = cluster.member_count
            Skill.objects.filter(pk=skill_id).update(source_cluster=cluster)
        else:
            cluster.superseded_skill_slugs = [*cluster.superseded_skill_slugs, slugs[skill_id]]
        cluster.save(update_fields=["skill", "members_at_last_crystallization", "superseded_skill_slugs"])


def clusters_rebuild() -> dict[str, int]:
    """Rebuild every cluster from the active memories, each space on its own (clusters never
    mix spaces), deterministically (same data, same clusters): memories in creation order, each
    joining the most similar cluster so far at cosine ≥ threshold or starting one. Skills
    follow the new cluster holding most of their memories. Also the repair tool after an
    embedding-model change. Covers the spaces the connection's scope reads."""
    spaces = sorted(set(Memory.objects.values_list("space_id", flat=True).distinct())
                    | set(KnowledgeCluster.objects.values_list("space_id", flat=True).distinct()))
    totals = {"memories": 0, "clusters": 0}
    for space_id in spaces:
        for key, value in _rebuild_space(space_id).items():
            totals[key] += value
    return totals


def _rebuild_space(space_id: int) -> dict[str, int]:
    rows = list(Memory.objects.filter(status=Status.ACTIVE, space_id=space_id).order_by("created_at", "pk")
                .values_list("pk", "embedding", "content", "context"))
    grouping = _group_in_order([row[1] for row in rows], threshold=model_thresholds().cluster,
                               dims=settings.ULTRON_EMBEDDING_DIMENSIONS)
    sizes = Counter(grouping.assignment)
    topics = _topics(rows, grouping)
    with transaction.atomic():
        old_skills = {s.pk: set(map(str, s.current_version.memory_ids if s.current_version else []))
                      for s in Skill.objects.filter(space_id=space_id).select_related("current_version")}
        ClusterMember.objects.filter(space_id=space_id).delete()
        KnowledgeCluster.objects.filter(space_id=space_id).delete()
        clusters = KnowledgeCluster.objects.bulk_create([
            KnowledgeCluster(space_id=space_id, topic=topics[i], centroid=list(map(float, grouping.sums[i])), member_count=sizes[i],
                             labelled_member_count=sizes[i])
            for i in range(grouping.count)
        ], batch_size=500)
        ClusterMember.objects.bulk_create([
            ClusterMember(space_id=space_id, cluster=clusters[c], memory_id=pk, vector=embedding, similarity=s)
            for (pk, embedding, _, _), c, s in zip(rows, grouping.assignment, grouping.similarity, strict=True)
        ], batch_size=1000)
        members_of: dict[int, set[str]] = {}
        for (pk, _, _, _), c in zip(rows, grouping.assignment, strict=True):
            members_of.setdefault(c, set()).add(str(pk))
        _skills_follow(clusters, members_of, old_skills)
    return {"memories": len(rows), "clusters": len(clusters)}


def cluster_relabel(*, cluster_id: int, offline: bool = False) -> str:
    """Name a cluster from its members (the LLM when one is configured, unless ``offline``: a
    curator's change names its clusters at once, from their keywords, and the pipeline's
    relabelling may name them again)."""
    cluster = KnowledgeCluster.objects.get(pk=cluster_id)
    members = list(Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
                   .order_by("-hit_count").values_list("summary_l0", "content", "context")[:50])
    # The newest 2,000 active memories stand for the hub: read only if the LLM gives no topic.
    sample = (Memory.objects.filter(status=Status.ACTIVE, space_id=cluster.space_id).order_by("-created_at")  # type: ignore[misc]  # never null (stubs read a default as optional)
              .values_list("content", "context")[:2000])
    topic = cluster_label([f"{m[1]} {m[2]}" for m in members],
                          summaries=None if offline else [m[0] or m[1][:200] for m in members],
                          corpus=Corpus(sample), fallback=cluster.topic)
    KnowledgeCluster.objects.filter(pk=cluster_id).update(topic=topic[:200], labelled_member_count=cluster.member_count)
    return topic


# --- embedding-model changes ---------------------------------------------------------------------


def vector_columns_resize(dims: int) -> None:
    """Give the cluster and skill vector columns a new dimension. Cluster rows are derived data
    and are dropped (``clusters_rebuild`` makes them again); skills keep everything but their
    search embedding, which ``skills_reembed`` restores."""
    ClusterMember.objects.all().delete()
    KnowledgeCluster.objects.all().delete()
    Skill.objects.update(embedding=None, source_cluster=None)
    with connection.cursor() as cursor:
        # The deletes above leave deferred foreign-key checks pending; ALTER TABLE refuses to
        # run until they have fired.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with connection.schema_editor() as editor:
        for model, column in ((KnowledgeCluster, "centroid"), (KnowledgeCluster, "direction"), (ClusterMember, "vector"),
                              (Skill, "embedding")):
            indexes = [i for i in model._meta.indexes if column in i.fields]
            for index in indexes:
                editor.remove_index(model, index)
            editor.execute(
                f"ALTER TABLE {model._meta.db_table} ALTER COLUMN {column} TYPE vector({int(dims)}) USING NULL"
            )
            for index in indexes:
                editor.add_index(model, index)


def skills_reembed() -> int:
    """Re-embed every published skill's search vector (after the memories were re-embedded)."""
    count = 0
    for skill in Skill.objects.filter(current_version__isnull=False).select_related("current_version"):
        version = skill.current_version
        skill.embedding = embed_texts([skill_search_text(version)])[0]
        skill.save(update_fields=["embedding"])
        count += 1
    return count
