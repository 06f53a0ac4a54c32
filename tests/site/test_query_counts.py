"""The REST API's list endpoints make a fixed number of queries, whatever the number of rows.

Each test calls its endpoint with 10 rows behind it, then with 500 (the details endpoint: 10
and 100 ids, its maximum), under the same bound: what the endpoint does at 10 rows. An N+1
would add hundreds of queries at 500 rows. The bounds include authentication (one query for the
token, and on a token's first request one more that records ``last_used_at``) and the rate
limit's counter (one upsert).

Rows are made with ``bulk_create``, with fixed pseudo-random unit vectors (seeded numpy).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
from django.conf import settings
from django.utils import timezone

from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillStatus, SkillVersion
from ingestion.models import IngestJob, SegmentMemory, SessionRecord, TaskSegment, WorkState
from memories.models import Memory, MemoryType, Status, Tier

SIZES = (10, 500)
DIMS = settings.ULTRON_EMBEDDING_DIMENSIONS
TYPES = MemoryType.values
TIERS = (Tier.HOT, Tier.WARM, Tier.COLD)
QUERY = "pip install fails with an ssl certificate error behind the proxy"


def _unit_vectors(n: int, *, seed: int, around: np.ndarray | None = None) -> np.ndarray:
    """``n`` fixed random unit vectors; near ``around`` (cosine about 0.9) when given."""
    vectors = np.random.default_rng(seed).normal(size=(n, DIMS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    if around is not None:
        vectors = around / np.linalg.norm(around) + 0.5 * vectors
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _memories(start: int, stop: int, *, agent=None, status: str = Status.ACTIVE,
              around: np.ndarray | None = None) -> list[Memory]:
    """Memories number ``start`` to ``stop - 1``, of every type and tier, from ``agent``."""
    now = timezone.now()
    vectors = _unit_vectors(stop - start, seed=start, around=around)
    rows = [
        Memory(
            content=f"memory {i}: pip install fails with an ssl certificate error, fix {i}",
            context=f"context {i}", resolution=f"resolution {i}",
            summary_l0=f"summary {i}", overview_l1=f"overview of memory {i}",
            tags=["pip", f"tag{i % 7}"], memory_type=TYPES[i % len(TYPES)], tier=TIERS[i % len(TIERS)],
            status=status, hit_count=1 + i % 13, last_hit_at=now,
            archived_at=now if status == Status.ARCHIVED else None,
            embedding=vector.tolist(), content_hash=hashlib.sha256(f"memory {i}".encode()).hexdigest(),
            agent=agent,
        )
        for i, vector in zip(range(start, stop), vectors, strict=True)
    ]
    return Memory.objects.bulk_create(rows)


# What every API request costs for its spaces, whatever it does: the caller's memberships, the
# statement that opens its spaces in the database and the one that closes them (core/spaces.py).
SPACE_SCOPE = 3


def _assert_flat(django_assert_max_num_queries, bound: int, grow: Callable[[int, int], object],
                 call: Callable[[int], object], sizes: tuple[int, ...] = SIZES) -> None:
    """Grow the data to each size in turn (``grow(old, new)``) and call the endpoint
    (``call(size)``, which checks the response) under the same bound every time (plus the
    request's ``SPACE_SCOPE``)."""
    done = 0
    for size in sizes:
        grow(done, size)
        done = size
        with django_assert_max_num_queries(bound + SPACE_SCOPE):
            call(size)


def _ok(response):
    assert response.status_code == 200, response.content
    return response


def _query_vector() -> np.ndarray:
    """The embedding of QUERY, as the API computes it; also settles the embedding space, which
    must be done before any memory is stored."""
    from memories.services import embed_texts

    return np.array(embed_texts([QUERY])[0])


# --- memories ------------------------------------------------------------------------------


def test_memory_list_queries_do_not_grow_with_rows(api, agent, django_assert_max_num_queries):
    def call(n):
        response = _ok(api.get("/api/memories/", {"limit": 200}))
        assert response.json()["count"] == n
        assert len(response.json()["results"]) == min(n, 200)
        return response

    # auth (1-2), the rate limit, the count, the page
    _assert_flat(django_assert_max_num_queries, 5, lambda a, b: _memories(a, b, agent=agent), call)


def test_archived_memory_list_for_a_curator_queries_do_not_grow_with_rows(
    curator_api, agent, django_assert_max_num_queries
):
    _memories(10_000, 10_005, agent=agent)  # active ones, not listed

    def call(n):
        response = _ok(curator_api.get("/api/memories/", {"status": "archived", "limit": 200}))
        assert response.json()["count"] == n
        assert len(response.json()["results"]) == min(n, 200)
        assert {r["status"] for r in response.json()["results"]} == {"archived"}
        return response

    # auth (1-2), the rate limit, the count, the page
    _assert_flat(django_assert_max_num_queries, 5,
                 lambda a, b: _memories(a, b, agent=agent, status=Status.ARCHIVED), call)


def test_memory_details_queries_do_not_grow_with_ids(api, agent, django_assert_max_num_queries):
    ids: list[str] = []

    def grow(a, b):
        ids.extend(str(m.pk) for m in _memories(a, b, agent=agent))

    def call(n):
        response = _ok(api.post("/api/memories/details", {"ids": ids}, format="json"))
        body = response.json()
        assert len(body["memories"]) == n and body["missing"] == []
        assert {m["agent"] for m in body["memories"]} == {agent.name}
        return response

    # auth (1-2), the rate limit, the memories with their agents, the memories they replaced,
    # the hit counts' UPDATE
    _assert_flat(django_assert_max_num_queries, 6, grow, call, sizes=(10, 100))


def test_memory_search_queries_do_not_grow_with_rows(api, agent, django_assert_max_num_queries):
    query = _query_vector()

    def call(n):
        response = _ok(api.post("/api/memories/search", {"query": QUERY, "limit": 100}, format="json"))
        assert response.json()["count"] == min(n, 100)
        return response

    # auth (1-2), the rate limit, the query's lexemes with their counts, the fold of a word's
    # count pieces (only when one is spread over many), SAVEPOINT, SET LOCAL hnsw.ef_search, the
    # hybrid search, RELEASE, the hit counts' UPDATE, the memories the results replaced; once a
    # minute per process the embedding space's stored calibration (its relevance floor) in a
    # SAVEPOINT of its own (+2)
    _assert_flat(django_assert_max_num_queries, 13,
                 lambda a, b: _memories(a, b, agent=agent, around=query), call)


def test_context_queries_do_not_grow_with_rows(api, agent, django_assert_max_num_queries):
    query = _query_vector()

    def call(n):
        response = _ok(api.post("/api/context", {"query": QUERY, "token_budget": 32000}, format="json"))
        sections = [m["section"] for m in response.json()["memories"]]
        assert sections.count("hot") == min(-(-n // 3), 20)  # every third memory is HOT
        assert "relevant" in sections
        return response

    # the search's 12 (see above) and the HOT memories
    _assert_flat(django_assert_max_num_queries, 13,
                 lambda a, b: _memories(a, b, agent=agent, around=query), call)


# --- clusters and skills ---------------------------------------------------------------------


def _skills(start: int, stop: int, *, cluster: KnowledgeCluster | None = None) -> list[Skill]:
    """Skills ``start`` to ``stop - 1``, each with a current version and a source cluster; the
    even ones published, the odd ones drafts."""
    skills = Skill.objects.bulk_create([
        Skill(slug=f"skill-{i}", name=f"Skill {i}", description=f"does {i}",
              status=SkillStatus.PUBLISHED if i % 2 == 0 else SkillStatus.DRAFT, source_cluster=cluster)
        for i in range(start, stop)
    ])
    versions = SkillVersion.objects.bulk_create([
        SkillVersion(skill=skill, version=1, name=skill.name, body=f"# {skill.name}", status=skill.status,
                     cluster=cluster, score=0.8)
        for skill in skills
    ])
    for skill, version in zip(skills, versions, strict=True):
        skill.current_version = version
    Skill.objects.bulk_update(skills, ["current_version"])
    return skills


def _clusters(start: int, stop: int, *, skill: Skill | None = None) -> list[KnowledgeCluster]:
    """Clusters ``start`` to ``stop - 1``: every other one with a skill, every third one
    crystallized before."""
    now = timezone.now()
    vectors = _unit_vectors(stop - start, seed=start)
    return KnowledgeCluster.objects.bulk_create([
        KnowledgeCluster(
            topic=f"topic {i}", centroid=vector.tolist(), member_count=1 + i % 20,
            skill=skill if i % 2 == 0 else None, superseded_skill_slugs=[f"old-{i}"],
            last_crystallization_at=now if i % 3 == 0 else None, last_crystallization_result="published",
        )
        for i, vector in zip(range(start, stop), vectors, strict=True)
    ])


def test_cluster_list_queries_do_not_grow_with_rows(api, django_assert_max_num_queries):
    skill = _skills(0, 1)[0]

    def call(n):
        response = _ok(api.get("/api/clusters"))
        results = response.json()["results"]
        assert len(results) == n
        assert {r["skill"] for r in results} == {skill.slug, None}
        return response

    # auth (1-2), the rate limit, the clusters with their skills
    _assert_flat(django_assert_max_num_queries, 4, lambda a, b: _clusters(a, b, skill=skill), call)


def test_cluster_detail_queries_do_not_grow_with_members(api, agent, django_assert_max_num_queries):
    skill = _skills(0, 1)[0]
    cluster = _clusters(0, 1, skill=skill)[0]

    def grow(a, b):
        members = _memories(a, b, agent=agent)
        ClusterMember.objects.bulk_create([
            ClusterMember(cluster=cluster, memory=m, vector=m.embedding, similarity=0.9) for m in members
        ])
        KnowledgeCluster.objects.filter(pk=cluster.pk).update(member_count=b)

    def call(n):
        response = _ok(api.get(f"/api/clusters/{cluster.pk}"))
        body = response.json()
        assert body["size"] == n and body["skill"] == skill.slug
        assert len(body["members"]) == min(n, 200)
        return response

    # auth (1-2), the rate limit, the cluster with its skill, the members
    _assert_flat(django_assert_max_num_queries, 5, grow, call)


def test_published_skill_list_for_an_agent_queries_do_not_grow_with_rows(api, django_assert_max_num_queries):
    cluster = _clusters(0, 1)[0]

    def call(n):
        response = _ok(api.get("/api/skills"))
        results = response.json()["results"]
        assert len(results) == n // 2
        assert {(r["status"], r["version"], r["source_cluster"]) for r in results} == {
            ("published", 1, cluster.pk)
        }
        return response

    # auth (1-2), the rate limit, the skills with their current versions and source clusters
    _assert_flat(django_assert_max_num_queries, 4, lambda a, b: _skills(a, b, cluster=cluster), call)


def test_skill_list_for_a_curator_queries_do_not_grow_with_rows(curator_api, django_assert_max_num_queries):
    cluster = _clusters(0, 1)[0]

    def call(n):
        response = _ok(curator_api.get("/api/skills"))
        results = response.json()["results"]
        assert len(results) == n
        assert {r["status"] for r in results} == {"published", "draft"}
        assert {r["version"] for r in results} == {1}
        return response

    # auth (1-2), the rate limit, the skills with their current versions and source clusters
    _assert_flat(django_assert_max_num_queries, 4, lambda a, b: _skills(a, b, cluster=cluster), call)


def test_skill_versions_queries_do_not_grow_with_versions(api, django_assert_max_num_queries):
    cluster = _clusters(0, 1)[0]
    skill = _skills(0, 1, cluster=cluster)[0]  # skill-0: published, version 1

    def grow(a, b):
        SkillVersion.objects.bulk_create([
            SkillVersion(skill=skill, version=v, name=f"v{v}", body=f"# v{v}", cluster=cluster,
                         status=SkillStatus.SUPERSEDED, memory_ids=[f"00000000-0000-0000-0000-{v:012d}"],
                         quality={"score": 0.5}, verification={"ok": True}, author="offline")
            for v in range(max(a, 1) + 1, b + 1)
        ])

    def call(n):
        response = _ok(api.get(f"/api/skills/{skill.slug}/versions"))
        versions = response.json()["versions"]
        assert [v["version"] for v in versions] == list(range(n, 0, -1))
        return response

    # auth (1-2), the rate limit, the skill with its current version and source cluster, its versions
    _assert_flat(django_assert_max_num_queries, 5, grow, call)


# --- ingestion -------------------------------------------------------------------------------

SEGMENTS_PER_FILE = 3


def test_ingest_job_queries_do_not_grow_with_files(api, agent, django_assert_max_num_queries):
    job = IngestJob.objects.create(agent=agent, files=[])

    def grow(a, b):
        sessions = SessionRecord.objects.bulk_create([
            SessionRecord(agent=agent, identity=f"/sessions/{i}.jsonl", sha256=f"{i:064d}", size=1000,
                          line_count=10, message_count=10, job=job, segmentation=WorkState.DONE)
            for i in range(a, b)
        ])
        segments = TaskSegment.objects.bulk_create([
            TaskSegment(session=s, index=k, start_message=3 * k, end_message=3 * k + 3, topic=f"task {k}",
                        fingerprint=f"fp{k}",
                        extraction=WorkState.DONE if k < 2 else WorkState.FAILED,
                        last_error="" if k < 2 else "extraction timed out", attempts=0 if k < 2 else 1)
            for s in sessions for k in range(SEGMENTS_PER_FILE)
        ])
        memories = _memories(a, b, agent=agent)
        SegmentMemory.objects.bulk_create([
            SegmentMemory(segment=seg, memory=m, item_index=0)
            for seg, m in zip(segments[::SEGMENTS_PER_FILE], memories, strict=True)
        ])
        job.files += [{"name": s.identity, "status": "accepted", "session_id": s.pk} for s in sessions]
        job.save(update_fields=["files"])

    def call(n):
        response = _ok(api.get(f"/api/ingest/{job.pk}"))
        body = response.json()
        assert len(body["files"]) == n
        assert body["segments"] == SEGMENTS_PER_FILE * n and body["memories"] == n
        assert body["errors"] == n  # one failed segment per file
        return response

    # Auth (2), the rate limit, the job, its sessions with their segment counts, their memory counts, the
    # failing segments of all of them, the segments of all of them that gave no memory.
    _assert_flat(django_assert_max_num_queries, 8, grow, call)
