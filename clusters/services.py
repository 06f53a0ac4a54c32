"""Every write of the cluster service: membership kept exact as memories come and go,
topic labels, crystallization into skills, publishing and rolling back (SPEC §10)."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max
from django.utils import timezone

from clusters import labels, skills
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillStatus, SkillVersion
from memories.models import Memory, Status
from memories.providers.llm import LLMError

logger = logging.getLogger("ultron.clusters")

_ASSIGN_LOCK = int.from_bytes(hashlib.sha256(b"ultron:cluster-assign").digest()[:8], "big", signed=True)


def _literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def _offline_topic(texts: list[str]) -> str:
    return labels.keyword_topic(texts, Counter(), 1) or "untitled"


# --- membership --------------------------------------------------------------------------------


def cluster_assign(*, memory_id: Any) -> KnowledgeCluster | None:
    """Put an active memory into the nearest cluster (cosine ≥ threshold) or a new one."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ASSIGN_LOCK])
        memory = Memory.objects.filter(pk=memory_id, status=Status.ACTIVE).only(
            "pk", "embedding", "content", "context", "summary_l0").first()
        if memory is None or ClusterMember.objects.filter(memory_id=memory_id).exists():
            return None
        vector = _literal(memory.embedding)
        table = KnowledgeCluster._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, 1 - (centroid <=> %s::vector) FROM {table} WHERE member_count > 0 "
                f"ORDER BY centroid <=> %s::vector LIMIT 1",
                [vector, vector],
            )
            row = cursor.fetchone()
        if row is not None and row[1] is not None and row[1] >= settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD:
            cluster_id, similarity = row
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET centroid = centroid + %s::vector, member_count = member_count + 1, "
                    f"updated_at = now() WHERE id = %s",
                    [vector, cluster_id],
                )
            ClusterMember.objects.create(cluster_id=cluster_id, memory=memory, vector=memory.embedding,
                                         similarity=float(similarity))
            return KnowledgeCluster.objects.get(pk=cluster_id)
        cluster = KnowledgeCluster.objects.create(
            topic=_offline_topic([memory.content, memory.context])[:200], centroid=memory.embedding, member_count=1,
        )
        ClusterMember.objects.create(cluster=cluster, memory=memory, vector=memory.embedding, similarity=1.0)
        return cluster


def cluster_member_remove(*, memory_id: Any) -> None:
    """Take a memory out of its cluster (merged away, archived, deleted)."""
    table = KnowledgeCluster._meta.db_table
    with transaction.atomic():
        member = ClusterMember.objects.select_for_update().filter(memory_id=memory_id).first()
        if member is None:
            return
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET centroid = centroid - %s::vector, member_count = member_count - 1, "
                f"updated_at = now() WHERE id = %s",
                [_literal(member.vector), member.cluster_id],
            )
        member.delete()


def cluster_member_refresh(*, memory_id: Any) -> None:
    """After a memory's embedding changed (edit, merge) or it was restored: keep the centroid
    exact — subtract the old vector, add the new — or (re)assign it."""
    memory = Memory.objects.filter(pk=memory_id).only("pk", "status", "embedding").first()
    if memory is None or memory.status != Status.ACTIVE:
        cluster_member_remove(memory_id=memory_id)
        return
    table = KnowledgeCluster._meta.db_table
    with transaction.atomic():
        member = ClusterMember.objects.select_for_update().filter(memory_id=memory_id).first()
        if member is None:
            transaction.on_commit(lambda: cluster_assign(memory_id=memory_id))
            return
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET centroid = centroid - %s::vector + %s::vector, updated_at = now() WHERE id = %s",
                [_literal(member.vector), _literal(memory.embedding), member.cluster_id],
            )
        member.vector = memory.embedding
        member.save(update_fields=["vector"])


def clusters_prune_inactive() -> int:
    """Set-based: drop members whose memory is no longer active, subtracting their vectors
    from each cluster's sum (used after the tier rebalance archives memories in bulk)."""
    clusters = KnowledgeCluster._meta.db_table
    members = ClusterMember._meta.db_table
    memories = Memory._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH gone AS (
                DELETE FROM {members} c USING {memories} m
                WHERE c.memory_id = m.id AND m.status <> 'active'
                RETURNING c.cluster_id, c.vector
            ), totals AS (
                SELECT cluster_id, sum(vector) AS total, count(*) AS n FROM gone GROUP BY cluster_id
            )
            UPDATE {clusters} k SET centroid = k.centroid - totals.total, member_count = k.member_count - totals.n,
                   updated_at = now()
            FROM totals WHERE k.id = totals.cluster_id
            """
        )
        return cursor.rowcount


def clusters_assign_missing(*, limit: int = 500) -> int:
    """Active memories that have no cluster yet (e.g. an assignment that failed) get one."""
    ids = list(Memory.objects.filter(status=Status.ACTIVE, cluster_member__isnull=True)
               .order_by("created_at", "pk").values_list("pk", flat=True)[:limit])
    for memory_id in ids:
        cluster_assign(memory_id=memory_id)
    return len(ids)


def clusters_rebuild() -> dict[str, int]:
    """Rebuild every cluster from the active memories, deterministically (same data, same
    clusters): memories in creation order, each joining the most similar cluster so far at
    cosine ≥ threshold or starting one. Skills follow the new cluster holding most of their
    memories. Also the repair tool after an embedding-model change."""
    threshold = settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD
    rows = list(Memory.objects.filter(status=Status.ACTIVE).order_by("created_at", "pk")
                .values_list("pk", "embedding", "content", "context"))
    dims = settings.ULTRON_EMBEDDING_DIMENSIONS
    sums = np.zeros((1024, dims), dtype=np.float32)   # grows by doubling
    units = np.zeros((1024, dims), dtype=np.float32)
    count = 0
    assignment: list[int] = []
    similarity: list[float] = []
    for _, embedding, _, _ in rows:
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
    sizes = Counter(assignment)
    documents = len(rows)
    df: Counter = Counter()
    texts: list[list[str]] = [[] for _ in range(count)]
    for (_, _, content, context), cluster_index in zip(rows, assignment, strict=True):
        df.update(set(labels.terms(f"{content} {context}")))
        texts[cluster_index].append(f"{content} {context}")
    with transaction.atomic():
        old_skills = {s.pk: set(map(str, s.current_version.memory_ids if s.current_version else []))
                      for s in Skill.objects.select_related("current_version")}
        ClusterMember.objects.all().delete()
        KnowledgeCluster.objects.all().delete()
        clusters = KnowledgeCluster.objects.bulk_create([
            KnowledgeCluster(topic=labels.keyword_topic(texts[i], df, documents) or "untitled",
                             centroid=list(map(float, sums[i])), member_count=sizes[i],
                             labelled_member_count=sizes[i])
            for i in range(count)
        ], batch_size=500)
        ClusterMember.objects.bulk_create([
            ClusterMember(cluster=clusters[c], memory_id=pk, vector=embedding, similarity=s)
            for (pk, embedding, _, _), c, s in zip(rows, assignment, similarity, strict=True)
        ], batch_size=1000)
        members_of: dict[int, set[str]] = {}
        for (pk, _, _, _), c in zip(rows, assignment, strict=True):
            members_of.setdefault(c, set()).add(str(pk))
        # Each skill follows the new cluster holding most of its memories, the best-overlapping
        # skill first; a second skill landing on a taken cluster is recorded as superseded there.
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
    return {"memories": len(rows), "clusters": len(clusters)}


def cluster_relabel(*, cluster_id: int) -> str:
    cluster = KnowledgeCluster.objects.get(pk=cluster_id)
    members = list(Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
                   .order_by("-hit_count").values_list("summary_l0", "content", "context")[:50])
    topic = labels.llm_topic([m[0] or m[1][:200] for m in members])
    if topic is None:
        df: Counter = Counter()
        sample = Memory.objects.filter(status=Status.ACTIVE).order_by("-created_at").values_list("content", "context")[:2000]
        for content, context in sample:
            df.update(set(labels.terms(f"{content} {context}")))
        topic = labels.keyword_topic([f"{m[1]} {m[2]}" for m in members], df, len(sample)) or cluster.topic
    KnowledgeCluster.objects.filter(pk=cluster_id).update(topic=topic[:200], labelled_member_count=cluster.member_count)
    return topic


# --- crystallization ---------------------------------------------------------------------------------


def readiness(cluster: KnowledgeCluster) -> str | None:
    """``ready`` (no skill yet), ``recrystallize`` (enough new members), or None."""
    count = cluster.member_count
    if cluster.skill_id is None:
        if count < settings.ULTRON_CRYSTALLIZATION_THRESHOLD:
            return None
        if cluster.last_crystallization_at and count <= cluster.members_at_last_crystallization:
            return None  # a failed or insufficient attempt waits for new members
        return "ready"
    if count - cluster.members_at_last_crystallization >= settings.ULTRON_RECRYSTALLIZATION_DELTA:
        return "recrystallize"
    return None


def _facts(cluster: KnowledgeCluster) -> list[skills.MemoryFacts]:
    return [
        skills.MemoryFacts(str(m.pk), m.content, m.context, m.resolution, m.hit_count, m.memory_type,
                           m.summary_l0 or m.content[:120])
        for m in Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
        .order_by("-hit_count", "pk").defer("embedding")[:40]
    ]


def _unique_slug(base: str) -> str:
    slug, n = base, 2
    while Skill.objects.filter(slug=slug).exists():
        suffix = f"-{n}"
        slug = base[: 50 - len(suffix)].rstrip("-") + suffix
        n += 1
    return slug


def _record(cluster: KnowledgeCluster, result: str, reason: str) -> None:
    KnowledgeCluster.objects.filter(pk=cluster.pk).update(
        last_crystallization_at=timezone.now(), last_crystallization_result=result,
        last_crystallization_reason=reason[:2000], members_at_last_crystallization=cluster.member_count,
    )


def cluster_crystallize(*, cluster_id: int) -> SkillVersion | None:
    """Write (or rewrite) the cluster's skill. Publishes only a draft that passes the quality
    bar and verification and, for a rewrite, scores better than the published version; any
    other outcome is kept (rejected) or recorded on the cluster, with its reason."""
    cluster = KnowledgeCluster.objects.get(pk=cluster_id)
    members = _facts(cluster)
    if len(members) < settings.ULTRON_CRYSTALLIZATION_THRESHOLD:
        _record(cluster, "insufficient", f"{len(members)} active members; {settings.ULTRON_CRYSTALLIZATION_THRESHOLD} needed")
        return None
    by_id = {m.id: m for m in members}
    try:
        draft = skills.draft(cluster.topic, members)
    except LLMError as exc:
        _record(cluster, "failed", f"the LLM could not write the skill: {exc}")
        return None
    if draft.insufficient:
        _record(cluster, "insufficient", draft.insufficient)
        return None
    body = skills.render(draft, by_id)
    quality = skills.quality(draft, body)
    verification = skills.verify(draft, members) if quality.passed else skills.Check(False, 0.0, {}, "not verified: quality bar not met")
    coverage = len(set(draft.cited) & set(by_id)) / len(members)
    score = round(quality.score * verification.score * (0.8 + 0.2 * coverage), 4)
    passed = quality.passed and verification.passed
    reason = quality.reason or verification.reason
    with transaction.atomic():
        cluster = KnowledgeCluster.objects.select_for_update().get(pk=cluster_id)
        skill = cluster.skill
        if skill is None:
            skill = Skill.objects.create(slug=_unique_slug(skills.slug_base(draft.name)), name=draft.name,
                                         description=draft.description, source_cluster=cluster)
            cluster.skill = skill
        current = skill.current_version if skill.status == SkillStatus.PUBLISHED else None
        if passed and current is not None and score <= current.score:
            passed = False
            reason = f"scored {score} and did not beat the published version {current.version} ({current.score})"
        version = SkillVersion.objects.create(
            skill=skill, version=(skill.versions.aggregate(n=Max("version"))["n"] or 0) + 1,
            name=draft.name, description=draft.description, body=body, memory_ids=[m.id for m in members],
            cluster=cluster, quality={"passed": quality.passed, "score": quality.score, **quality.details},
            verification={"passed": verification.passed, "score": verification.score, **verification.details},
            score=score, status=SkillStatus.DRAFT if passed else SkillStatus.REJECTED, reason=reason,
            author=draft.author,
        )
        cluster.last_crystallization_at = timezone.now()
        cluster.last_crystallization_result = "published" if passed else "rejected"
        cluster.last_crystallization_reason = reason
        cluster.members_at_last_crystallization = cluster.member_count
        cluster.save()
        if passed:
            version = skill_version_publish(version_id=version.pk)
    logger.info("cluster %s crystallized: %s v%s %s (%s)", cluster_id, skill.slug, version.version,
                "published" if passed else "rejected", reason)
    return version


def skill_version_publish(*, version_id: int) -> SkillVersion:
    """Make a version the skill's published one (also a curator's rollback)."""
    from memories.services import embed_texts

    with transaction.atomic():
        version = SkillVersion.objects.select_for_update().select_related("skill").get(pk=version_id)
        skill = Skill.objects.select_for_update().get(pk=version.skill_id)
        SkillVersion.objects.filter(skill=skill, status=SkillStatus.PUBLISHED).exclude(pk=version.pk).update(
            status=SkillStatus.SUPERSEDED)
        version.status = SkillStatus.PUBLISHED
        version.save(update_fields=["status"])
        skill.current_version = version
        skill.status = SkillStatus.PUBLISHED
        skill.name = version.name
        skill.description = version.description
        skill.embedding = embed_texts([f"{version.name}\n{version.description}\n{version.body[:2000]}"])[0]
        skill.save()
    return version


def crystallization_step(*, limit: int = 10) -> dict[str, int]:
    """Pipeline step: assign stragglers, relabel grown clusters, crystallize ready ones."""
    assigned = clusters_assign_missing()
    relabelled = 0
    for cluster in KnowledgeCluster.objects.filter(member_count__gt=F("labelled_member_count") * 2)[:limit]:
        cluster_relabel(cluster_id=cluster.pk)
        relabelled += 1
    done = published = 0
    candidates = KnowledgeCluster.objects.filter(member_count__gte=settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
    for cluster in candidates.order_by("-member_count", "pk"):
        if done >= limit:
            break
        if readiness(cluster) is None:
            continue
        version = cluster_crystallize(cluster_id=cluster.pk)
        done += 1
        published += bool(version and version.status == SkillStatus.PUBLISHED)
    return {"assigned": assigned, "relabelled": relabelled, "crystallized": done, "published": published}


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
        for model, column in ((KnowledgeCluster, "centroid"), (ClusterMember, "vector"), (Skill, "embedding")):
            indexes = [i for i in model._meta.indexes if column in i.fields]
            for index in indexes:
                editor.remove_index(model, index)
            editor.execute(
                f"ALTER TABLE {model._meta.db_table} ALTER COLUMN {column} TYPE vector({int(dims)}) USING NULL"
            )
            for index in indexes:
                editor.add_index(model, index)


def skills_reembed() -> int:
    from memories.services import embed_texts

    count = 0
    for skill in Skill.objects.filter(current_version__isnull=False).select_related("current_version"):
        version = skill.current_version
        skill.embedding = embed_texts([f"{version.name}\n{version.description}\n{version.body[:2000]}"])[0]
        skill.save(update_fields=["embedding"])
        count += 1
    return count
