"""Feedback on served memories: only for what a call served the voter, one vote per agent,
helpful votes capped in the rank, wrong / outdated reports in the review queue."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.urls import reverse
from rest_framework.test import APIClient

from agents.services import agent_create, token_issue
from memories.models import ChangeState, Memory, MemoryFeedback, MemoryReport, Status
from memories.services.feedback import serve_id_issue

LESSON = "Retry the flaky billing export with exponential backoff after a 503 from the ledger service."


def _client(agent) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(agent=agent).token}")
    return client


@pytest.fixture
def writer(db):
    return agent_create(name="writer-wes")


@pytest.fixture
def memory_id(writer):
    response = _client(writer).post("/api/memories/upload", {"content": LESSON, "memory_type": "pattern"},
                                    format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["id"]


def _served(client, query="billing export 503 backoff"):
    body = client.post("/api/memories/search", {"query": query, "limit": 5}, format="json").json()
    return [hit["id"] for hit in body["results"]], body["serve_id"]


def _vote(client, memory_id, rating, serve_id, reason=""):
    return client.post(f"/api/memories/{memory_id}/feedback",
                       {"rating": rating, "serve_id": serve_id, "reason": reason}, format="json")


@pytest.mark.parametrize("rating", ["helpful", "not_helpful", "wrong", "outdated"])
def test_every_rating_is_taken_for_a_memory_the_call_served(memory_id, rating):
    reader = _client(agent_create(name="reader-rita"))
    ids, serve_id = _served(reader)
    assert memory_id in ids
    response = _vote(reader, memory_id, rating, serve_id, reason="checked against the runbook")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["rating"] == rating
    assert body["reported"] is (rating in ("wrong", "outdated"))
    assert MemoryFeedback.objects.get(memory_id=memory_id).rating == rating


def test_the_context_call_serves_a_serve_id_too(memory_id):
    reader = _client(agent_create(name="reader-rita"))
    body = reader.post("/api/context", {"query": "billing export backoff"}, format="json").json()
    assert memory_id in [m["id"] for m in body["memories"]]
    assert _vote(reader, memory_id, "helpful", body["serve_id"]).status_code == 200


def test_a_vote_needs_the_call_that_served_that_memory_to_that_agent(memory_id, writer):
    reader_agent = agent_create(name="reader-rita")
    reader, other = _client(reader_agent), _client(agent_create(name="other-otto"))
    _, others_serve = _served(other)
    refused = _vote(reader, memory_id, "helpful", others_serve)  # another agent's call
    assert refused.status_code == 403 and "another agent" in refused.content.decode()
    _, empty_serve = _served(reader, query="kubernetes ingress annotations for websockets")
    nothing = serve_id_issue(reader_id=reader_agent.pk, memory_ids=[])
    for serve_id in (nothing, "forged:value:sig", empty_serve.replace(":", ";", 1)):
        response = _vote(reader, memory_id, "wrong", serve_id)
        assert response.status_code == 403 and response.json()["field"] == "serve_id", response.content
    assert not MemoryFeedback.objects.exists() and not MemoryReport.objects.exists()


def test_an_expired_serve_id_is_refused(memory_id, settings, monkeypatch):
    reader_agent = agent_create(name="reader-rita")
    reader = _client(reader_agent)
    _, serve_id = _served(reader)
    settings.ULTRON_SERVE_MAX_AGE_DAYS = 1
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: signing.b62_encode(0))
    old = serve_id_issue(reader_id=reader_agent.pk, memory_ids=[memory_id])
    response = _vote(reader, memory_id, "helpful", old)
    assert response.status_code == 403 and "older than 1 days" in response.content.decode()


def test_one_vote_per_agent_a_new_one_replaces_it_and_null_clears_it(memory_id):
    reader = _client(agent_create(name="reader-rita"))
    _, serve_id = _served(reader)
    _vote(reader, memory_id, "wrong", serve_id, reason="the ledger returns 429 now, not 503")
    assert MemoryReport.objects.filter(memory_id=memory_id, state=ChangeState.OPEN).count() == 1
    body = _vote(reader, memory_id, "helpful", serve_id).json()
    assert MemoryFeedback.objects.filter(memory_id=memory_id).count() == 1
    assert body["reported"] is False and not MemoryReport.objects.exists()  # nobody reports it any more
    assert body["feedback"] == 1
    cleared = _vote(reader, memory_id, None, serve_id).json()
    assert cleared["feedback"] == 0 and not MemoryFeedback.objects.exists()


def test_helpful_votes_move_the_rank_a_little_and_are_capped(memory_id, writer, settings):
    settings.ULTRON_FEEDBACK_CAP = 2
    own = _client(writer)
    _, serve_id = _served(own)
    assert _vote(own, memory_id, "helpful", serve_id).json()["feedback"] == 0  # the writer's own vote does not rank
    for name in ("a-ann", "b-bob", "c-cid", "d-dan"):
        client = _client(agent_create(name=name))
        _, serve_id = _served(client)
        last = _vote(client, memory_id, "helpful", serve_id).json()
    assert last["feedback"] == 2 and Memory.objects.get(pk=memory_id).feedback == 2
    reader = _client(agent_create(name="reader-rita"))
    hits = reader.post("/api/memories/search", {"query": "billing export 503 backoff", "mode": "semantic"},
                       format="json").json()["results"]
    hit = next(h for h in hits if h["id"] == memory_id)
    # score = similarity × tier boost × (1 + step × feedback) × hotness: the vote's factor stays small
    assert hit["score"] <= hit["similarity_score"] * 1.5 * (1 + settings.ULTRON_FEEDBACK_STEP * 2) + 1e-6


def test_two_agents_reporting_put_the_memory_first_in_the_review_queue_and_a_curator_decides(memory_id):
    agents = [agent_create(name=n) for n in ("reader-rita", "other-otto")]
    for agent, rating in zip(agents, ("wrong", "outdated"), strict=True):
        client = _client(agent)
        _, serve_id = _served(client)
        _vote(client, memory_id, rating, serve_id, reason=f"{agent.name}: the ledger changed in v2")
    report = MemoryReport.objects.get(memory_id=memory_id)
    assert report.agents == 2 and report.state == ChangeState.OPEN

    user = get_user_model().objects.create_superuser("cora", "cora@example.com", "pw-for-tests-only")
    browser = APIClient()
    browser.force_login(user)
    page = browser.get(reverse("admin:memories_memory_queue") + "?kind=reported").content.decode()
    assert "2 agents agree" in page and "the ledger changed in v2" in page

    memory_page = browser.get(reverse("admin:memories_memory_change", args=[memory_id])).content.decode()
    assert "Feedback from agents" in memory_page and "other-otto: the ledger changed in v2" in memory_page

    action = reverse("admin:memories_memory_report_action", args=[report.pk, "archive"])
    assert browser.post(action).status_code == 302
    assert Memory.objects.get(pk=memory_id).status == Status.ARCHIVED
    report.refresh_from_db()
    assert report.state == ChangeState.DONE and report.outcome == "archived" and report.decided_by == "cora"
    assert "archived by cora" in browser.get(reverse("admin:memories_memory_change", args=[memory_id])).content.decode()
    browser.post(reverse("admin:memories_memory_report_action", args=[report.pk, "undo"]))
    report.refresh_from_db()
    assert report.state == ChangeState.OPEN and Memory.objects.get(pk=memory_id).status == Status.ACTIVE


def test_a_person_does_not_vote_and_a_reason_is_redacted(memory_id):
    reader = _client(agent_create(name="reader-rita"))
    _, serve_id = _served(reader)
    _vote(reader, memory_id, "outdated", serve_id, reason="the new key is sk-ant-api03-" + "x7Qm2Lp9" * 6)
    assert "sk-ant" not in MemoryFeedback.objects.get().reason
    assert APIClient().post(f"/api/memories/{memory_id}/feedback", {"rating": "helpful", "serve_id": serve_id},
                            format="json").status_code in (401, 403)
