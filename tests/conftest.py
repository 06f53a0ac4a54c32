from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.services import agent_create, token_issue
from tests.fakes import FAKE_DASHSCOPE_KEY, FakeLLMServer


def _client(token: str | None) -> APIClient:
    client = APIClient()
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def agent(db):
    return agent_create(name="agent-smith")


@pytest.fixture
def agent_token(agent) -> str:
    return token_issue(agent=agent).token


@pytest.fixture
def api(agent_token) -> APIClient:
    """An API client authenticated as an ordinary agent."""
    return _client(agent_token)


@pytest.fixture
def curator(db):
    return agent_create(name="curator-carol", staff=True)


@pytest.fixture
def curator_api(curator) -> APIClient:
    return _client(token_issue(agent=curator).token)


@pytest.fixture
def outsider_api(db) -> APIClient:
    """No credentials at all."""
    return _client(None)


@pytest.fixture
def fake_llm_server():
    """The fake model server; a test that leaves scripted replies unused fails (the LLM path
    it meant to exercise did not run as scripted)."""
    server = FakeLLMServer().start()
    yield server
    server.stop()
    server.assert_used_up()


@pytest.fixture
def openai_llm(settings, fake_llm_server):
    """Point the hub's LLM at the fake OpenAI-compatible server; script replies on it."""
    settings.ULTRON_LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = f"{fake_llm_server.url}/v1"
    settings.ULTRON_LLM_MODEL = "fake-model"
    settings.ULTRON_LLM_TIMEOUT_SECONDS = 5.0
    return fake_llm_server


@pytest.fixture
def dashscope_llm(settings, fake_llm_server):
    settings.ULTRON_LLM_PROVIDER = "dashscope"
    settings.DASHSCOPE_API_KEY = FAKE_DASHSCOPE_KEY
    settings.DASHSCOPE_BASE_URL = f"{fake_llm_server.url}/api/v1"
    settings.ULTRON_LLM_TIMEOUT_SECONDS = 5.0
    return fake_llm_server


def _groups_sync() -> None:
    from django.apps import apps

    from ultron_site.roles import groups_sync

    groups_sync(apps)


@pytest.fixture(autouse=True)
def _roles_back_after_flush(request, django_db_blocker):
    """A transactional test (marked ``transaction=True``, or using a live server or
    ``transactional_db``) ends by emptying every table, the data migration's role groups too.
    pytest-django runs those tests after all others, so each of them puts the groups back first."""
    marker = request.node.get_closest_marker("django_db")
    if (marker and marker.kwargs.get("transaction")) or {"live_server", "transactional_db"} & set(request.fixturenames):
        request.getfixturevalue("django_db_setup")  # the test database, never the hub's own
        with django_db_blocker.unblock():
            _groups_sync()
    yield


@pytest.fixture(autouse=True)
def _fresh_django_cache():
    """Each test's database starts empty, so what the pages cache about it (the memory list's
    tag choices) must too."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    """Each test's database starts empty, so what this process caches about the database must
    too: the embedding space's 'verified' flag; the stored calibration's thresholds; and the cached
    query embeddings, which a test's redaction settings would otherwise carry into the next."""
    from memories.services import embedding_space_forget
    from memories.services.recall import query_cache_forget
    from memories.thresholds import thresholds_forget

    embedding_space_forget()
    query_cache_forget()
    thresholds_forget()
    yield
    embedding_space_forget()
    query_cache_forget()
    thresholds_forget()
