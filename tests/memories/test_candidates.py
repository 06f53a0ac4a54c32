"""Merge candidates: pairs the hub is not sure are one memory wait for the LLM or a curator."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User

from memories.models import CandidateStatus, Memory, MemoryContribution, MergeCandidate, Status
from memories.services import memories_consolidate, memory_upload
from memories.services.candidates import merge_candidate_accept, merge_candidate_dismiss
from memories.services.inputs import MemoryInputError
from memories.thresholds import model_thresholds
from tests.spaces import curate_shared

pytestmark = pytest.mark.django_db

FIRST = {
    "content": "psycopg OperationalError: connection refused when Django starts before PostgreSQL",
    "context": "docker compose brings up web and db containers together",
    "resolution": "add a healthcheck to the db service and depends_on condition service_healthy",
}
REWORDED = {
    "content": "Django could not reach Postgres at boot (connection refused) since the database container was still starting",
    "context": "compose stack with web and db services",
    "resolution": "give db a healthcheck and make web depend on it being healthy",
}
PIN_OLD = {"content": "pandas import fails with a numpy ABI error; pin numpy to 1.26.4 in requirements"}
PIN_NEW = {"content": "pandas import fails with a numpy ABI error; pin numpy to 2.0.1 in requirements"}


@pytest.fixture
def band(settings):
    """Thresholds that put REWORDED in the candidate band of FIRST."""
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.995
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.4


def test_band_without_llm_stores_a_new_memory_and_records_a_candidate(agent, band, api):
    first = memory_upload(**FIRST, agent=agent)
    response = api.post("/api/memories/upload", REWORDED, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["merged"] is False and body["candidate_of"] == str(first.memory.pk)
    candidate = MergeCandidate.objects.get()
    assert str(candidate.memory_id) == body["id"] and candidate.duplicate_of_id == first.memory.pk
    assert candidate.status == CandidateStatus.OPEN and candidate.llm_verdict is None
    assert 0.4 <= candidate.similarity < 0.995
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2


def test_conflicting_details_above_the_threshold_become_a_candidate_with_the_details(agent):
    first = memory_upload(**PIN_OLD, agent=agent)
    second = memory_upload(**PIN_NEW, agent=agent)
    assert second.similarity is None and not second.merged
    assert second.candidate_of == first.memory.pk
    candidate = MergeCandidate.objects.get()
    assert candidate.similarity >= model_thresholds().duplicate  # similarity alone would have merged
    assert any(c.startswith("values:") and "2.0.1" in c and "1.26.4" in c for c in candidate.conflicts)


def test_a_clear_duplicate_still_merges_automatically(agent):
    first = memory_upload(**FIRST, agent=agent)
    again = memory_upload(content=FIRST["content"] + ".", context=FIRST["context"], resolution=FIRST["resolution"],
                          agent=agent)
    assert again.merged and again.memory.pk == first.memory.pk and again.match_reason == "similar"
    assert not MergeCandidate.objects.exists()


def test_curator_merge_folds_the_newer_into_the_older(agent, curator, band):
    first = memory_upload(**FIRST, agent=agent, tags=["docker"])
    second = memory_upload(**REWORDED, agent=curator, tags=["postgres"])
    candidate = second.candidates[0]
    kept = merge_candidate_accept(candidate_id=candidate.pk, decided_by="carol")
    assert kept.pk == first.memory.pk
    assert kept.hit_count == 2 and kept.merge_pending and kept.tags == ["docker", "postgres"]
    folded = Memory.objects.get(pk=second.memory.pk)
    assert folded.status == Status.ARCHIVED
    contribution = MemoryContribution.objects.get(memory=kept)
    assert contribution.content == REWORDED["content"] and contribution.match_reason == "curator"
    assert contribution.agent == curator
    candidate.refresh_from_db()
    assert candidate.status == CandidateStatus.MERGED and candidate.decided_by == "carol"
    with pytest.raises(MemoryInputError):
        merge_candidate_accept(candidate_id=candidate.pk, decided_by="carol")


def test_a_dismissed_pair_never_comes_back(agent, band, settings):
    memory_upload(**FIRST, agent=agent)
    second = memory_upload(**REWORDED, agent=agent)
    merge_candidate_dismiss(candidate_id=second.candidates[0].pk, decided_by="carol")
    # Consolidation with a threshold low enough to fold the pair leaves a decided pair alone.
    settings.ULTRON_CONSOLIDATION_ENABLED = True
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.4
    result = memories_consolidate(limit=10)
    assert result["merged"] == 0 and result["candidates"] == 0
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2
    assert MergeCandidate.objects.get().status == CandidateStatus.DISMISSED


def test_consolidation_turns_a_conflicting_pair_into_a_candidate(agent, settings):
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.999
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.999
    memory_upload(**PIN_OLD, agent=agent)
    memory_upload(**PIN_NEW, agent=agent)
    assert not MergeCandidate.objects.exists()
    settings.ULTRON_CONSOLIDATION_ENABLED = True
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.9
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.8
    assert memories_consolidate(limit=10) == {"enabled": 1, "merged": 0, "candidates": 1}
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2


def test_llm_verdict_distinct_is_recorded_on_the_candidate(agent, band, openai_llm):
    openai_llm.script('{"memory_type": "error"}')
    memory_upload(**FIRST, agent=agent)
    openai_llm.script('{"memory_type": "error"}', '{"same_subject": false}')
    second = memory_upload(**REWORDED, agent=agent)
    assert not second.merged and second.candidate_of is None  # decided: nothing left open
    candidate = MergeCandidate.objects.get()
    assert candidate.llm_verdict is False and candidate.status == CandidateStatus.DISMISSED
    assert candidate.decided_by == "llm"
    asked = json.dumps(openai_llm.chat_requests()[-1])
    assert "same core subject" in asked and REWORDED["content"][:40] in asked


def test_llm_is_shown_the_conflicting_details(agent, openai_llm):
    openai_llm.script('{"memory_type": "error"}')
    memory_upload(**PIN_OLD, agent=agent)
    openai_llm.script('{"memory_type": "error"}', '{"same_subject": false}')
    memory_upload(**PIN_NEW, agent=agent)
    asked = json.dumps(openai_llm.chat_requests()[-1])
    assert "Details that differ" in asked and "2.0.1" in asked


def test_llm_failure_leaves_the_candidate_open_for_a_curator(agent, band, openai_llm):
    openai_llm.script('{"memory_type": "error"}')
    memory_upload(**FIRST, agent=agent)
    openai_llm.script('{"memory_type": "error"}', "no idea", "still no idea", "nope")
    second = memory_upload(**REWORDED, agent=agent)
    assert not second.merged and second.candidate_of is not None
    candidate = MergeCandidate.objects.get()
    assert candidate.status == CandidateStatus.OPEN and candidate.llm_verdict is None
    assert openai_llm.asked_kinds() == ["classify", "classify", "same_subject", "same_subject", "same_subject"]


def test_curator_reviews_candidates_in_the_admin(agent, band, client):
    first = memory_upload(**FIRST, agent=agent)
    second = memory_upload(**REWORDED, agent=agent)
    user = User.objects.create_user("carol", password="pw-carol-12345", is_staff=True)
    curate_shared(user)  # people see the spaces they curate
    user.user_permissions.add(*Permission.objects.filter(
        codename__in=["view_mergecandidate", "change_mergecandidate"]))
    client.force_login(user)
    page = client.get("/admin/memories/mergecandidate/")
    assert page.status_code == 200 and b"Merge the selected pairs" in page.content
    candidate = second.candidates[0]
    response = client.post("/admin/memories/mergecandidate/", {
        "action": "merge_pairs", "_selected_action": [candidate.pk]}, follow=True)
    assert response.status_code == 200
    candidate.refresh_from_db()
    assert candidate.status == CandidateStatus.MERGED and candidate.decided_by == "carol"
    assert Memory.objects.get(pk=second.memory.pk).status == Status.ARCHIVED
    assert Memory.objects.get(pk=first.memory.pk).hit_count == 2


def test_viewing_without_the_change_permission_offers_no_decision(agent, band, client):
    memory_upload(**FIRST, agent=agent)
    second = memory_upload(**REWORDED, agent=agent)
    user = User.objects.create_user("vic", password="pw-vic-12345", is_staff=True)
    curate_shared(user)  # people see the spaces they curate
    user.user_permissions.add(Permission.objects.get(codename="view_mergecandidate"))
    client.force_login(user)
    page = client.get("/admin/memories/mergecandidate/")
    assert page.status_code == 200 and b"Merge the selected pairs" not in page.content
    client.post("/admin/memories/mergecandidate/", {"action": "merge_pairs",
                                                    "_selected_action": [second.candidates[0].pk]})
    assert MergeCandidate.objects.get().status == CandidateStatus.OPEN


def test_a_memory_page_lists_the_memories_it_may_duplicate(agent, band, client):
    first = memory_upload(**FIRST, agent=agent)
    second = memory_upload(**REWORDED, agent=agent)
    user = User.objects.create_user("vic", password="pw-vic-12345", is_staff=True)
    curate_shared(user)  # people see the spaces they curate
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_memory", "view_mergecandidate"]))
    client.force_login(user)
    page = client.get(f"/admin/memories/memory/{second.memory.pk}/change/")
    assert page.status_code == 200
    assert b"May duplicate (merge candidates)" in page.content
    assert str(first.memory).encode()[:30] in page.content
