from __future__ import annotations

import json

import pytest
from django.urls import reverse

from memories.models import Memory, MemoryContribution

pytestmark = pytest.mark.django_db

DOCKER_PIP = {
    "content": "pip install failed inside Docker: Could not find a version that satisfies the requirement",
    "context": "Building a python image on a CI runner without outbound network",
    "resolution": "Configure a proxy for pip or build with --network host",
    "tags": ["Python", "docker", " docker "],
}


def upload(api, payload):
    return api.post(reverse("memory-upload"), payload, format="json")


def test_upload_without_token_is_401(outsider_api):
    response = upload(outsider_api, DOCKER_PIP)
    assert response.status_code == 401
    assert response.json()["error"] == "not_authenticated"


def test_upload_with_a_wrong_token_is_401(outsider_api):
    outsider_api.credentials(HTTP_AUTHORIZATION="Bearer ult_000000000000_notarealtokennotarealtoken")
    assert upload(outsider_api, DOCKER_PIP).status_code == 401
    outsider_api.credentials(HTTP_AUTHORIZATION="Bearer garbage")
    assert upload(outsider_api, DOCKER_PIP).status_code == 401


def test_upload_creates_a_warm_memory_with_normalised_tags(api, agent):
    response = upload(api, DOCKER_PIP)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["merged"] is False
    assert body["memory_type"] == "error"
    assert body["tier"] == "warm" and body["status"] == "active" and body["hit_count"] == 1
    memory = Memory.objects.get(pk=body["id"])
    assert memory.tags == ["python", "docker"]
    assert memory.agent == agent
    assert memory.summary_l0.startswith("pip install failed inside Docker")
    assert "Resolution:" in memory.overview_l1


def test_duplicate_upload_merges_and_counts_a_hit_from_another_agent_only(api, reader_api):
    first = upload(api, DOCKER_PIP).json()
    again = upload(api, {**DOCKER_PIP, "tags": ["ci"]})
    assert again.status_code == 200
    body = again.json()
    assert body["merged"] is True and body["id"] == first["id"]
    assert body["hit_count"] == 1  # its writer's own repeat counts no use
    memory = Memory.objects.get(pk=first["id"])
    assert memory.tags == ["python", "docker", "ci"]
    assert MemoryContribution.objects.filter(memory=memory).count() == 1
    assert upload(reader_api, DOCKER_PIP).json()["hit_count"] == 2
    assert Memory.objects.count() == 1


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 42}, "content"),
        ({"content": ["a"]}, "content"),
        ({"content": "ok", "context": {"a": 1}}, "context"),
        ({"content": "ok", "tags": "python"}, "tags"),
        ({"content": "ok", "tags": [1, 2]}, "tags"),
        ({"content": "ok", "tags": [f"t{i}" for i in range(11)]}, "tags"),
        ({"content": "ok", "tags": ["x" * 65]}, "tags"),
        ({"content": "x" * 20001}, "content"),
        ({"content": "nul \x00 byte"}, "content"),
    ],
)
def test_bad_upload_is_a_400_naming_the_field(api, payload, field):
    response = upload(api, payload)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"].split("[")[0].split(".")[0] == field
    assert field in body["message"]
    assert Memory.objects.count() == 0


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b"[]", b'"a string"', b"null", b"\xff\xfe\x00garbage", b'{"content": "a"' * 3],
)
def test_malformed_bodies_never_500(api, raw):
    response = api.generic("POST", reverse("memory-upload"), raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "message" in response.json()


def test_oversized_body_is_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"content": "x" * 20_000})
    response = api.generic("POST", reverse("memory-upload"), body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"


def test_search_returns_both_scores_at_l1_and_counts_hits(api, reader_api):
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    upload(api, {"content": "Prefer ruff over flake8 for linting Python projects", "tags": ["python"]})
    response = reader_api.post(reverse("memory-search"), {"query": "pip cannot download packages in docker build"},
                               format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == len(body["results"]) >= 1
    top = body["results"][0]
    assert top["id"] == memory_id
    assert set(top) >= {"id", "memory_type", "tier", "tags", "hit_count", "summary_l0", "overview_l1",
                        "context", "similarity_score", "score"}
    assert 0 < top["similarity_score"] <= 1
    assert top["hit_count"] == 2 and top["writer"] == "agent-smith" and top["verified"] is False
    assert Memory.objects.get(pk=memory_id).hit_count == 2


def test_search_at_l0_leaves_out_the_overview(api):
    upload(api, DOCKER_PIP)
    body = api.post(reverse("memory-search"), {"query": "docker pip", "detail_level": "l0"}, format="json").json()
    assert "overview_l1" not in body["results"][0] and "context" not in body["results"][0]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "limit": "ten"}, "limit"),
        ({"query": "x", "detail_level": "l3"}, "detail_level"),
        ({"query": "x", "memory_type": "gossip"}, "memory_type"),
        ({"query": "x", "tier": "lukewarm"}, "tier"),
        ({"query": 5}, "query"),
    ],
)
def test_bad_search_is_a_400_naming_the_field(api, payload, field):
    response = api.post(reverse("memory-search"), payload, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_details_returns_full_records_without_embeddings_and_counts_a_use_like_a_search(api, reader_api):
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    missing = "00000000-0000-0000-0000-000000000000"
    response = reader_api.post(reverse("memory-details"), {"ids": [memory_id, missing]}, format="json")
    assert response.status_code == 200
    body = response.json()
    record = body["memories"][0]
    assert record["content"] == DOCKER_PIP["content"]
    assert record["resolution"] == DOCKER_PIP["resolution"]
    assert "embedding" not in record
    assert record["hit_count"] == 2 and record["agent"] == "agent-smith"
    assert body["missing"] == [missing]
    assert Memory.objects.get(pk=memory_id).hit_count == 2


def test_details_rejects_bad_ids(api):
    response = api.post(reverse("memory-details"), {"ids": ["not-a-uuid"]}, format="json")
    assert response.status_code == 400 and response.json()["field"].startswith("ids")


def test_stats_counts_by_tier_type_and_status(api):
    upload(api, DOCKER_PIP)
    body = api.get(reverse("memory-stats")).json()
    assert body["total"] == 1
    assert body["by_status"]["active"] == 1
    assert body["by_tier"]["warm"] == 1
    assert body["by_type"]["error"] == 1
    assert body["embedding"] == {"provider": "local", "model": "all-MiniLM-L6-v2", "dimensions": 384}


def test_list_needs_staff_for_archived(api, curator_api):
    assert api.get(reverse("memory-list"), {"status": "archived"}).status_code == 400
    assert curator_api.get(reverse("memory-list"), {"status": "archived"}).status_code == 200


def test_health_needs_no_token(outsider_api):
    from ultron_site.warmup import warm_up

    warm_up()
    response = outsider_api.get(reverse("health"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["pgvector"]


def test_openapi_schema_is_published_to_agents(api, outsider_api):
    assert outsider_api.get(reverse("schema")).status_code == 401
    response = api.get(reverse("schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert b"/api/memories/upload" in response.content


def test_context_puts_hot_first_and_never_exceeds_the_budget(api):
    from memories.models import Tier
    from memories.text import estimate_tokens

    hot_id = upload(api, {"content": "Always run migrations before deploying the web containers"}).json()["id"]
    Memory.objects.filter(pk=hot_id).update(tier=Tier.HOT)
    topics = ["pip inside Docker cannot reach PyPI without the proxy", "npm install behind a corporate proxy times out",
              "git clone over https fails through the proxy", "apt-get update hangs in the container",
              "conda cannot resolve channels offline", "cargo fetch needs the registry mirror",
              "maven downloads fail on the CI runner", "Go modules need GOPROXY set"]
    ids = [upload(api, {"content": f"{topic}. " + "Longer explanation of the failure and its fix. " * 8}).json()["id"]
           for topic in topics]
    for budget in (50, 120, 400, 2000):
        body = api.post(reverse("context"), {"query": "pip proxy docker", "token_budget": budget}, format="json").json()
        assert body["tokens"] <= budget
        assert estimate_tokens(body["context"]) <= budget
        if budget >= 120:  # 50 tokens hold the evidence frame and little else
            assert body["memories"][0] == {**body["memories"][0], "id": hot_id, "section": "hot"}
    body = api.post(reverse("context"), {"query": "pip proxy docker", "token_budget": 2000}, format="json").json()
    assert body["context"].startswith("<shared-memories>\nNotes recorded by other agents")
    assert "\n## Shared knowledge (HOT)\n" in body["context"]
    assert "## Relevant memories" in body["context"]
    relevant = [m["id"] for m in body["memories"] if m["section"] == "relevant"]
    # The pip-in-Docker memory first; those about other tools' downloads are below the relevance floor.
    assert relevant[0] == ids[0] and 1 <= len(relevant) < len(topics), body
    # The HOT memory is not counted as a hit for being included.
    assert Memory.objects.get(pk=hot_id).hit_count == 1
