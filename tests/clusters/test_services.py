from __future__ import annotations

import json

import numpy as np
import pytest
from django.urls import reverse

from agents.services import space_create
from clusters import selectors, services
from clusters.judgements.skill_draft import slug_base
from clusters.models import ClusterMember, KnowledgeCluster, Skill, SkillStatus, SkillVersion
from clusters.services import crystallize
from memories.models import Memory, Status
from memories.services import memory_archive, memory_delete, memory_restore, tiers_rebalance
from memories.thresholds import model_thresholds

pytestmark = pytest.mark.django_db
DIMS = 384


def unit(*pairs) -> list[float]:
    v = np.zeros(DIMS)
    for index, value in pairs:
        v[index] = value
    return list(v / np.linalg.norm(v))


def angle(similarity: float, axis: int = 1) -> list[float]:
    """A unit vector whose cosine with e0 is ``similarity``."""
    return unit((0, similarity), (axis, float(np.sqrt(1 - similarity**2))))


@pytest.fixture(autouse=True)
def _embedding_space():
    from memories.services import embedding_space_ensure

    embedding_space_ensure()  # rows below are written directly, as the funnel would after this


def make(vector, *, content="m", context="", resolution="", hits=1, assign=True) -> Memory:
    memory = Memory.objects.create(content=content, context=context, resolution=resolution, memory_type="pattern",
                                   embedding=vector, content_hash=str(np.random.rand()), hit_count=hits)
    if assign:
        services.cluster_assign(memory_id=memory.pk)
    return memory


def assert_centroid_exact(cluster: KnowledgeCluster) -> None:
    cluster.refresh_from_db()
    members = Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
    assert cluster.member_count == members.count()
    if not cluster.member_count:
        return
    mean = np.mean([np.asarray(m.embedding) for m in members], axis=0)
    centroid = np.asarray(cluster.centroid)
    cosine = float(mean @ centroid / (np.linalg.norm(mean) * np.linalg.norm(centroid)))
    assert cosine == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(centroid, np.sum([np.asarray(m.embedding) for m in members], axis=0), atol=1e-4)


def test_threshold_edges():
    threshold = model_thresholds().cluster
    first = make(unit((0, 1)))
    inside = make(angle(threshold + 0.01))
    outside = make(angle(threshold - 0.01, axis=2))
    cluster = first.cluster_member.cluster
    assert inside.cluster_member.cluster == cluster
    assert ClusterMember.objects.get(memory=outside).cluster != cluster
    assert KnowledgeCluster.objects.count() == 2
    assert_centroid_exact(cluster)


def test_centroid_stays_exact_through_every_kind_of_member_change(agent, openai_llm):
    a = make(unit((0, 1)))
    b = make(angle(0.9))
    c = make(angle(0.85, axis=3))
    cluster = a.cluster_member.cluster
    assert_centroid_exact(cluster)
    memory_archive(memory_id=b.pk)                       # archived
    assert_centroid_exact(cluster)
    memory_restore(memory_id=b.pk)                       # restored
    assert_centroid_exact(cluster)
    Memory.objects.filter(pk=c.pk).update(embedding=angle(0.95, axis=4))   # edited (re-embedded)
    services.cluster_member_refresh(memory_id=c.pk)
    assert_centroid_exact(cluster)
    memory_delete(memory_id=c.pk)                        # deleted
    assert_centroid_exact(cluster)
    # archived in bulk by the tier rebalance (set-based)
    Memory.objects.filter(pk=b.pk).update(hit_count=0, last_hit_at="2020-01-01T00:00:00Z", tier="cold")
    for _ in range(8):
        make(unit((0, 1), (5, 0.1)), hits=50)
    tiers_rebalance()
    assert Memory.objects.get(pk=b.pk).status == Status.ARCHIVED
    assert_centroid_exact(cluster)


def test_a_merge_that_rewrites_a_memory_moves_the_centroid(agent, openai_llm, django_capture_on_commit_callbacks):
    from memories.services import memory_upload

    openai_llm.script('{"memory_type": "error"}', '{"summary_l0": "s", "overview_l1": "o"}')
    with django_capture_on_commit_callbacks(execute=True):
        first = memory_upload(content="psycopg OperationalError: connection refused when Django starts before "
                                      "PostgreSQL", resolution="add a db healthcheck", agent=agent)
    cluster = first.memory.cluster_member.cluster
    openai_llm.script(
        '{"memory_type": "error"}',
        json.dumps({"content": "Django must wait for PostgreSQL: OperationalError connection refused at start",
                    "context": "docker compose", "resolution": "healthcheck + depends_on service_healthy", "tags": []}),
        '{"summary_l0": "s", "overview_l1": "o"}',
    )
    with django_capture_on_commit_callbacks(execute=True):
        memory_upload(content="psycopg OperationalError connection refused because Django started before "
                              "PostgreSQL was up", resolution="add a healthcheck to the db", agent=agent)
    member = ClusterMember.objects.get(memory_id=first.memory.pk)
    assert list(member.vector) == list(Memory.objects.get(pk=first.memory.pk).embedding)
    assert_centroid_exact(cluster)
    # the model did rewrite the memory (the merge ran), so the vector did move
    assert openai_llm.asked_kinds() == ["classify", "summarize", "classify", "merge", "summarize"]
    assert Memory.objects.get(pk=first.memory.pk).content.startswith("Django must wait for PostgreSQL")


def test_initial_clustering_is_deterministic():
    for i in range(12):
        make(angle(0.9 if i % 2 else 1.0, axis=1 + (i % 3) * 10), content=f"docker compose healthcheck {i}",
             assign=False)
    for i in range(6):
        make(unit((100, 1.0), (101 + i, 0.3)), content=f"garden roses pruning {i}", assign=False)
    first = services.clusters_rebuild()
    partition = sorted(sorted(str(m) for m in c.members.values_list("memory_id", flat=True))
                       for c in KnowledgeCluster.objects.all())
    topics = sorted(KnowledgeCluster.objects.values_list("topic", flat=True))
    second = services.clusters_rebuild()
    assert first == second and first["clusters"] == 2
    assert partition == sorted(sorted(str(m) for m in c.members.values_list("memory_id", flat=True))
                               for c in KnowledgeCluster.objects.all())
    assert topics == sorted(KnowledgeCluster.objects.values_list("topic", flat=True))
    assert any("garden" in t or "roses" in t for t in topics)
    for cluster in KnowledgeCluster.objects.all():
        assert_centroid_exact(cluster)


def _fill(count: int, *, start: int = 0) -> list[Memory]:
    fixes = ["add a healthcheck to the db service", "use depends_on with condition service_healthy",
             "retry the connection with exponential backoff", "set CONN_MAX_AGE and health checks",
             "start the web container after migrations run", "log the database host on start-up",
             "pin the postgres image version", "check pg_isready in the entrypoint"]
    return [make(angle(0.95 + 0.001 * (i % 7), axis=1 + i), content=f"Django cannot reach PostgreSQL at start-up case {i}",
                 context="docker compose with web and db services", resolution=fixes[i % len(fixes)], hits=10 - i % 5)
            for i in range(start, start + count)]


def test_readiness_counts():
    members = _fill(4)
    cluster = members[0].cluster_member.cluster
    cluster.refresh_from_db()
    assert selectors.readiness(cluster) is None
    _fill(1, start=4)
    cluster.refresh_from_db()
    assert selectors.readiness(cluster) == "ready"
    version = services.cluster_crystallize(cluster_id=cluster.pk)
    assert version.status == SkillStatus.PUBLISHED
    cluster.refresh_from_db()
    assert selectors.readiness(cluster) is None
    _fill(2, start=5)
    cluster.refresh_from_db()
    assert selectors.readiness(cluster) is None
    _fill(1, start=7)
    cluster.refresh_from_db()
    assert selectors.readiness(cluster) == "recrystallize"


def test_offline_skill_is_built_from_the_members_and_traceable():
    members = _fill(6)
    cluster = members[0].cluster_member.cluster
    version = services.cluster_crystallize(cluster_id=cluster.pk)
    assert version.status == SkillStatus.PUBLISHED and version.author == "offline"
    body = version.body
    assert body.startswith("---\nname: ") and "## When to use" in body and "## Steps" in body and "## Edge cases" in body
    short_ids = {str(m.pk)[:8] for m in members}
    step_lines = [line for line in body.splitlines() if line[:2].rstrip(".").isdigit()]
    assert len(step_lines) >= 3
    for line in step_lines:
        assert any(f"[m:{s}]" in line for s in short_ids), line
    # six different fixes: six steps, none said twice; the name is a phrase, the slug comes from it
    assert len(step_lines) == 6 and version.quality["redundant_steps"] == []
    assert version.name.startswith("Fix Django unable to reach PostgreSQL")
    assert version.verification["passed"] and version.quality["passed"]
    skill = Skill.objects.get()
    assert skill.slug == slug_base(version.name) and f"\nname: {skill.slug}\n" in body
    assert skill.current_version == version and skill.embedding is not None


def test_too_few_resolutions_is_recorded_as_insufficient_and_not_retried():
    members = [make(angle(0.97, axis=1 + i), content=f"observation {i} about cache sizing", context="redis")
               for i in range(5)]
    cluster = members[0].cluster_member.cluster
    assert services.cluster_crystallize(cluster_id=cluster.pk) is None
    cluster.refresh_from_db()
    assert cluster.last_crystallization_result == "insufficient" and "steps" in cluster.last_crystallization_reason
    assert selectors.readiness(cluster) is None
    assert Skill.objects.count() == 0


DRAFT = {"name": "Start Django after PostgreSQL", "description": "Make the web container wait for the database.",
         "when_to_use": ["docker compose starts web and db together"],
         "steps": ["add a healthcheck to the db service", "use depends_on with condition service_healthy",
                   "retry the connection with exponential backoff"],
         "edge_cases": ["pin the postgres image version"]}


def test_verification_fails_closed_on_an_unsupported_claim(openai_llm):
    cluster = _fill(5)[0].cluster_member.cluster
    openai_llm.script(json.dumps(DRAFT), json.dumps({
        "claims": [{"index": 0, "supported": True}, {"index": 1, "supported": True},
                   {"index": 2, "supported": False}, {"index": 3, "supported": True}], "contradiction": False}))
    version = services.cluster_crystallize(cluster_id=cluster.pk)
    assert version.status == SkillStatus.REJECTED and "not supported" in version.reason
    assert Skill.objects.get().status == SkillStatus.DRAFT
    assert openai_llm.asked_kinds() == ["skill_draft", "skill_verify"]


def test_verification_fails_closed_when_the_llm_fails(openai_llm):
    cluster = _fill(5)[0].cluster_member.cluster
    openai_llm.script(json.dumps(DRAFT), "garbage", (500, {}), "{}")
    version = services.cluster_crystallize(cluster_id=cluster.pk)
    assert version.status == SkillStatus.REJECTED and "verification failed" in version.reason
    assert openai_llm.asked_kinds() == ["skill_draft", "skill_verify", "skill_verify", "skill_verify"]


def test_a_failed_draft_is_recorded_and_waits_for_new_members(openai_llm):
    cluster = _fill(5)[0].cluster_member.cluster
    openai_llm.script("no", "no", "no")
    assert services.cluster_crystallize(cluster_id=cluster.pk) is None
    cluster.refresh_from_db()
    assert cluster.last_crystallization_result == "failed" and selectors.readiness(cluster) is None
    assert openai_llm.asked_kinds() == ["skill_draft"] * 3


def _verdict(n: int) -> str:
    return json.dumps({"claims": [{"index": i, "supported": True} for i in range(n)], "contradiction": False})


def test_a_better_version_replaces_the_published_one_and_a_worse_one_is_kept_rejected(openai_llm):
    members = _fill(5)
    cluster = members[0].cluster_member.cluster
    shorts = [str(m.pk)[:8] for m in members]
    weak = {**DRAFT, "steps": [f"{s} [m:{shorts[0]}]" for s in DRAFT["steps"]]}      # cites one member
    openai_llm.script(json.dumps(weak), _verdict(4))
    v1 = services.cluster_crystallize(cluster_id=cluster.pk)
    assert v1.status == SkillStatus.PUBLISHED
    _fill(3, start=5)
    strong = {**DRAFT, "steps": [f"{s} [m:{' m:'.join(shorts)}]" for s in DRAFT["steps"]]}
    strong["steps"] = [f"{s} " + " ".join(f"[m:{x}]" for x in shorts) for s in DRAFT["steps"]]
    openai_llm.script(json.dumps(strong), _verdict(4))
    v2 = services.cluster_crystallize(cluster_id=cluster.pk)
    assert v2.status == SkillStatus.PUBLISHED and v2.score > v1.score
    v1.refresh_from_db()
    assert v1.status == SkillStatus.SUPERSEDED
    _fill(3, start=8)
    openai_llm.script(json.dumps(weak), _verdict(4))
    v3 = services.cluster_crystallize(cluster_id=cluster.pk)
    assert v3.status == SkillStatus.REJECTED and "did not beat" in v3.reason
    skill = Skill.objects.get()
    assert skill.current_version == v2
    assert list(skill.versions.order_by("version").values_list("status", flat=True)) == [
        "superseded", "published", "rejected"]


@pytest.mark.parametrize(("name", "slug"), [
    ("Start Django after PostgreSQL!", "start-django-after-postgresql"),
    ("  Docker --  networking  ", "docker-networking"),
    ("部署 Django 的最佳实践", "部署-django-的最佳实践"),
    ("x" * 80, "x" * 50),
    ("!!!", "skill"),
    ("Fix can't compare offset-naive and offset-aware datetimes", "fix-cant-compare-offset-naive-and-offset-aware"),
    ("Fix pytest failing at collection with ModuleNotFoundError", "fix-pytest-failing-at-collection"),

])
def test_slug_rules(name, slug):
    assert slug_base(name) == slug


def test_slug_collisions_are_suffixed():
    first = Skill.objects.create(slug="docker-networking", name="a")
    Skill.objects.create(slug="docker-networking-2", name="b")
    assert crystallize._unique_slug("docker-networking", first.space_id) == "docker-networking-3"
    assert len(crystallize._unique_slug("y" * 50, first.space_id)) <= 50
    # Another space's slugs neither count nor show.
    other = space_create(slug="other-team")
    assert crystallize._unique_slug("docker-networking", other.pk) == "docker-networking"


def test_relabelling_takes_the_llms_topic_without_reading_the_hub(openai_llm, django_assert_num_queries):
    cluster = _fill(3)[0].cluster_member.cluster
    openai_llm.script(json.dumps({"topic": "Django waiting for PostgreSQL in Docker"}))
    # the cluster, its members, the update: the keyword sample of the hub is not read
    with django_assert_num_queries(3):
        topic = services.cluster_relabel(cluster_id=cluster.pk)
    cluster.refresh_from_db()
    assert topic == cluster.topic == "Django waiting for PostgreSQL in Docker"
    assert cluster.labelled_member_count == cluster.member_count == 3
    assert openai_llm.asked_kinds() == ["cluster_topic"]


def test_relabelling_falls_back_to_a_members_sentence_when_the_llm_fails(openai_llm):
    cluster = _fill(3)[0].cluster_member.cluster
    make(unit((5, 1.0)), content="Redis connection reset by peer when the pool is exhausted")
    openai_llm.script("garbage", (500, {}), "{}")
    topic = services.cluster_relabel(cluster_id=cluster.pk)
    assert openai_llm.asked_kinds() == ["cluster_topic"] * 3
    # the members' own first sentence, cut to a heading's length; never the outsider's
    assert topic.startswith("Django cannot reach PostgreSQL at start-up") and len(topic) <= 61, topic
    assert "Redis" not in topic and " · " not in topic


def test_a_new_cluster_is_named_offline_by_its_first_memory(openai_llm):
    cluster = make(unit((0, 1.0)), content="kubectl apply fails: field is immutable", context="Deployment selector") \
        .cluster_member.cluster
    assert cluster.topic == "kubectl apply fails: field is immutable"
    assert openai_llm.asked_kinds() == []


def test_an_offline_label_is_the_sentence_holding_the_clusters_keywords():
    from clusters.judgements.label import cluster_label

    texts = ["Thanks, that helped a lot with everything today.",
             "pip install fails inside docker build: could not find a version. Pass --network host.",
             "docker build cannot reach PyPI behind the proxy; set HTTP_PROXY as a build arg."]
    label = cluster_label(texts)
    assert label.startswith(("pip install fails inside docker build", "docker build cannot reach PyPI")), label
    long = cluster_label(["word " * 40])
    assert len(long) <= 61 and long.endswith("…")


def test_api_permissions_and_reads(api, curator_api):
    members = _fill(5)
    cluster = members[0].cluster_member.cluster
    assert api.post(reverse("cluster-crystallize", args=[cluster.pk])).status_code == 403
    response = curator_api.post(reverse("cluster-crystallize", args=[cluster.pk]))
    assert response.status_code == 200, response.content
    slug = response.json()["skill"]
    listing = api.get(reverse("cluster-list")).json()["results"]
    assert listing[0]["size"] == 5 and listing[0]["skill"] == slug
    detail = api.get(reverse("cluster-detail", args=[cluster.pk])).json()
    assert len(detail["members"]) == 5 and "summary_l0" in detail["members"][0]
    skill = api.get(reverse("skill-detail", args=[slug])).json()
    assert skill["markdown"].startswith("---") and skill["version"] == 1
    assert api.get(reverse("skill-versions", args=[slug])).json()["versions"][0]["status"] == "published"
    assert api.post(reverse("skill-publish", args=[slug, 1])).status_code == 403
    found = api.post(reverse("skill-search"), {"query": "postgres healthcheck docker"}, format="json").json()
    assert found["results"][0]["slug"] == slug
    assert api.post(reverse("skill-search"), {"query": ""}, format="json").status_code == 400


def test_agents_do_not_see_unpublished_skills(api, curator_api, openai_llm):
    cluster = _fill(5)[0].cluster_member.cluster
    openai_llm.script(json.dumps(DRAFT), "garbage", "garbage", "garbage")
    services.cluster_crystallize(cluster_id=cluster.pk)
    slug = Skill.objects.get().slug
    assert api.get(reverse("skill-detail", args=[slug])).status_code == 404
    assert api.get(reverse("skill-list")).json()["results"] == []
    assert curator_api.get(reverse("skill-detail", args=[slug])).status_code == 200
    # a curator can still publish it by hand
    assert curator_api.post(reverse("skill-publish", args=[slug, 1])).status_code == 200
    assert api.get(reverse("skill-detail", args=[slug])).status_code == 200
    assert SkillVersion.objects.get().status == SkillStatus.PUBLISHED


def test_rebuild_keeps_skills_with_their_memories_and_records_superseded_slugs():
    members = _fill(6)
    ids = [str(m.pk) for m in members]
    first = Skill.objects.create(slug="first", name="first")
    second = Skill.objects.create(slug="second", name="second")
    first.current_version = SkillVersion.objects.create(skill=first, version=1, name="a", body="x", memory_ids=ids)
    second.current_version = SkillVersion.objects.create(skill=second, version=1, name="b", body="x", memory_ids=ids[:2])
    first.save()
    second.save()
    services.clusters_rebuild()
    cluster = KnowledgeCluster.objects.get()
    assert cluster.skill == first and cluster.superseded_skill_slugs == ["second"]
    assert Skill.objects.get(pk=first.pk).source_cluster == cluster
