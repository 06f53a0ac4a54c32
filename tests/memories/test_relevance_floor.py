"""Search says when nothing matches: a memory below the embedding space's relevance floor is left
out of search, context and the admin's ranking, unless a keyword match supports it."""

from __future__ import annotations

import pytest
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memories.models import EmbeddingCalibration
from memories.services.recall import memories_rank, relevance_floor
from memories.text import EMBEDDING_TEXT_FORMAT
from memories.thresholds import MODEL_THRESHOLDS, VALUES, model_thresholds, thresholds_forget
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db

MEMORIES = [
    {"content": "pip install failed inside Docker: could not find a version that satisfies the requirement",
     "context": "CI runner without outbound network", "resolution": "configure a proxy or build with --network host"},
    {"content": "PostgreSQL refused connections with FATAL: sorry, too many clients already",
     "resolution": "Put PgBouncer in transaction mode in front of the database"},
    {"content": "Prefer ruff over flake8 for linting Python projects"},
]
NONSENSE = ["qwertyuiop zxcvb", "purple elephant banjo"]


@pytest.fixture
def stored(api) -> list[str]:
    ids = []
    for memory in MEMORIES:
        response = api.post("/api/memories/upload", memory, format="json")
        assert response.status_code == 201, response.json()
        ids.append(response.json()["id"])
    return ids


def _search(api, query: str, **extra) -> dict:
    response = api.post("/api/memories/search", {"query": query, **extra}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_nonsense_query_answers_an_empty_list_and_a_real_one_its_memory(api, stored, mode):
    for query in NONSENSE:
        answer = _search(api, query, mode=mode)
        assert answer.pop("serve_id")  # names the call, even one that served nothing
        assert answer == {"results": [], "count": 0, "mode": mode}
    found = _search(api, "pip cannot download packages in docker build", mode=mode)["results"]
    assert found[0]["id"] == stored[0]
    assert all(hit["similarity_score"] >= relevance_floor() for hit in found)


def test_the_context_block_holds_nothing_relevant_for_a_nonsense_query(api, stored):
    empty = api.post("/api/context", {"query": "purple elephant banjo"}, format="json").json()
    assert empty["memories"] == [] and empty["context"] == ""
    real = api.post("/api/context", {"query": "too many clients connecting to postgres"}, format="json").json()
    assert [block["id"] for block in real["memories"]][:1] == [stored[1]]


def test_a_keyword_match_keeps_a_memory_the_floor_would_drop(api, stored):
    # A word of the memory, in a query whose meaning is far from it.
    rare = api.post("/api/memories/upload", {
        "content": "GPU test jobs must run on the purple build agents; the other runners have no CUDA driver installed",
    }, format="json").json()["id"]
    query = "purple elephant"
    assert _search(api, query, mode="semantic")["results"] == []  # the vector side alone: below the floor
    hybrid = _search(api, query, mode="hybrid")["results"]
    assert [hit["id"] for hit in hybrid] == [rare]
    assert hybrid[0]["similarity_score"] < relevance_floor()
    assert [hit["id"] for hit in _search(api, query, mode="keyword")["results"]] == [rare]


def test_the_floor_is_the_embedding_spaces_and_the_environment_overrides_it(api, stored, settings):
    assert relevance_floor() == MODEL_THRESHOLDS["all-MiniLM-L6-v2"].floor
    # A calibration stored for the configured space that says "no floor": nonsense lists memories again.
    row = MODEL_THRESHOLDS["all-MiniLM-L6-v2"]
    EmbeddingCalibration.objects.create(
        provider="local", model="all-MiniLM-L6-v2", dimensions=384, text_format=EMBEDDING_TEXT_FORMAT,
        values={**{name: getattr(row, name) for name in VALUES}, "floor": -1.0}, calibrated_at=timezone.now())
    thresholds_forget()
    assert model_thresholds().floor == -1.0 and relevance_floor() is None
    assert _search(api, "purple elephant banjo")["count"] == len(MEMORIES)
    # The environment wins over the stored value.
    settings.ULTRON_SEARCH_RELEVANCE_FLOOR = 0.99
    assert _search(api, "pip cannot download packages in docker build", mode="semantic")["results"] == []


def test_the_admins_live_search_finds_nothing_for_nonsense(stored):
    assert memories_rank(query="purple elephant banjo") == []
    assert [str(pk) for pk in memories_rank(query="linting python code")][:1] == [stored[2]]
    person = person_create(username="carol", role="curator", password_once=False)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    changelist = reverse("admin:memories_memory_changelist")
    assert client.get(changelist, {"q": "qwertyuiop zxcvb"}, HTTP_HX_REQUEST="true").context["cl"].result_count == 0
    assert client.get(changelist, {"q": "docker pip"}).context["cl"].result_count >= 1
