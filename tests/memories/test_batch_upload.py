"""Batch upload: ``POST /api/memories/upload`` with ``{"memories": [...]}`` and the service
behind it (``memories_upload``)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories import services
from memories.models import Memory, MemoryContribution
from memories.providers.embeddings import get_embedder
from memories.redaction import presidio_engine

pytestmark = pytest.mark.django_db

DOCKER_PIP = {
    "content": "pip install failed inside Docker: Could not find a version that satisfies the requirement",
    "context": "Building a python image on a CI runner without outbound network",
    "resolution": "Configure a proxy for pip or build with --network host",
    "tags": ["Python", "docker"],
}
RUFF = {"content": "Prefer ruff over flake8 for linting Python projects: one fast tool", "tags": ["python"]}
HNSW = {"content": "A filtered pgvector HNSW query can return fewer rows than asked; use a partial index"}


def upload(api, payload):
    return api.post(reverse("memory-upload"), payload, format="json")


def batch(api, items):
    return upload(api, {"memories": items})


def test_a_batch_stores_each_memory_in_order_with_one_result_each(api, agent):
    response = batch(api, [DOCKER_PIP, RUFF, HNSW])
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["created"], body["merged"], body["failed"]) == (3, 0, 0)
    assert [r["index"] for r in body["results"]] == [0, 1, 2]
    assert [r["status"] for r in body["results"]] == [201, 201, 201]
    stored = list(Memory.objects.order_by("created_at"))
    assert [m.content for m in stored] == [DOCKER_PIP["content"], RUFF["content"], HNSW["content"]]
    assert [str(m.pk) for m in stored] == [r["result"]["id"] for r in body["results"]]
    assert stored[0].tags == ["python", "docker"] and stored[0].agent == agent
    assert body["results"][0]["result"]["memory_type"] == "error"


def test_a_batch_item_has_exactly_a_single_uploads_response(api):
    single_new = upload(api, DOCKER_PIP)
    single_merged = upload(api, DOCKER_PIP).json()
    assert single_new.status_code == 201
    body = batch(api, [DOCKER_PIP, RUFF]).json()
    merged, new = body["results"]
    assert merged["status"] == 200 and new["status"] == 201
    assert set(merged) == {"index", "status", "result"} and set(new) == {"index", "status", "result"}
    assert set(merged["result"]) == set(single_merged) == set(new["result"]) == set(single_new.json())
    assert merged["result"]["id"] == single_merged["id"]
    assert merged["result"]["hit_count"] == single_merged["hit_count"]  # its writer's repeats count no use
    assert {k: v for k, v in merged["result"].items() if k != "hit_count"} == \
        {k: v for k, v in single_merged.items() if k != "hit_count"}


def test_duplicates_within_a_batch_merge_into_the_earlier_item(api):
    body = batch(api, [DOCKER_PIP, RUFF, {**DOCKER_PIP, "tags": ["ci"]}]).json()
    first, _, again = body["results"]
    assert (first["status"], again["status"]) == (201, 200)
    assert again["result"]["id"] == first["result"]["id"]
    assert again["result"]["merged"] is True and again["result"]["hit_count"] == 1
    assert (body["created"], body["merged"], body["held"]) == (2, 1, 0)
    assert Memory.objects.count() == 2
    memory = Memory.objects.get(pk=first["result"]["id"])
    assert memory.tags == ["python", "docker", "ci"]
    assert MemoryContribution.objects.filter(memory=memory).count() == 1


def test_a_bad_item_is_refused_alone_and_named_by_its_index(api):
    items = [
        DOCKER_PIP,
        {"content": ""},
        {"content": 5},
        "not an object",
        {"content": "Pin versions", "tags": ["x" * 65]},
        {"content": "Pin dependency versions in requirements files", "tags": [f"t{i}" for i in range(11)]},
        RUFF,
    ]
    response = batch(api, items)
    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["status"] for r in body["results"]] == [201, 400, 400, 400, 400, 400, 201]
    errors = {r["index"]: r["error"] for r in body["results"] if r["status"] == 400}
    assert errors[1]["field"] == "memories[1].content"
    assert errors[2]["field"] == "memories[2].content"
    assert errors[3]["field"] == "memories[3]"
    assert errors[4]["field"] == "memories[4].tags[0]"
    # Refused by the service's own checks (at most ten distinct tags), not the serializer's.
    assert errors[5]["field"] == "memories[5].tags" and "at most 10" in errors[5]["message"]
    for error in errors.values():
        assert error["error"] == "invalid" and error["message"].startswith(error["field"] + ": ")
    assert (body["created"], body["merged"], body["failed"]) == (2, 0, 5)
    assert set(Memory.objects.values_list("content", flat=True)) == {DOCKER_PIP["content"], RUFF["content"]}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"memories": [{"content": f"lesson number {i}"} for i in range(101)]}, "100"),
        ({"memories": []}, "memories"),
        ({"memories": "not a list"}, "memories"),
        ({"memories": [RUFF], "content": "both forms at once"}, "not both"),
    ],
)
def test_a_bad_batch_is_a_400_and_stores_nothing(api, payload, message):
    response = upload(api, payload)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid" and body["field"] == "memories"
    assert message in body["message"]
    assert Memory.objects.count() == 0


def test_a_full_batch_of_100_is_accepted(api):
    items = [{"content": f"Lesson {i}: keep step {i} of the release checklist before tagging"} for i in range(100)]
    body = batch(api, items).json()
    assert len(body["results"]) == 100 and body["failed"] == 0
    assert [r["index"] for r in body["results"]] == list(range(100))


def test_a_batch_makes_one_redaction_pass_and_one_embedding_call(api, monkeypatch):
    embedder = get_embedder()
    calls = {"embed": [], "ner": []}
    real_embed, real_ner = embedder.embed, presidio_engine.analyze_many

    def embed(texts):
        calls["embed"].append(len(texts))
        return real_embed(texts)

    def ner(texts):
        calls["ner"].append(len(texts))
        return real_ner(texts)

    monkeypatch.setattr(embedder, "embed", embed)
    monkeypatch.setattr(presidio_engine, "analyze_many", ner)
    items = [DOCKER_PIP, RUFF, HNSW, {"content": ""}, {"content": "Mail jane.doe@example-corp.com before the COBOL build"}]
    body = batch(api, items).json()
    assert [r["status"] for r in body["results"]] == [201, 201, 201, 400, 201]
    assert calls["embed"] == [4]  # the four valid items, in one call
    assert len(calls["ner"]) == 1  # every field of every valid item, in one spaCy pass
    assert Memory.objects.get(content__startswith="Mail").content == "Mail <EMAIL_ADDRESS> before the COBOL build"


def test_the_service_runs_the_hook_inside_each_items_transaction(agent):
    seen = []
    results = services.memories_upload(
        items=[{**DOCKER_PIP, "memory_type": "pattern", "provenance": {"item": 0}}, {"content": " "}, RUFF],
        agent=agent, on_stored=lambda index, result: seen.append((index, result.memory.pk)),
    )
    assert isinstance(results[1], services.MemoryInputError) and results[1].field == "content"
    assert [index for index, _ in seen] == [0, 2]
    first = Memory.objects.get(pk=seen[0][1])
    assert first.memory_type == "pattern" and first.provenance == {"item": 0}


def test_the_service_takes_more_than_one_batch_in_order(agent):
    items = [{"content": f"Step {i}: run the migration check before deploying service {i}"} for i in range(130)]
    items.append(items[3])  # a duplicate of an item from the first hundred
    results = services.memories_upload(items=items, agent=agent)
    assert len(results) == 131
    assert results[130].merged and results[130].memory.pk == results[3].memory.pk
