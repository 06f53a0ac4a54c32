from __future__ import annotations

import threading

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.db.backends.signals import connection_created
from django.dispatch import receiver
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
def reader_api(db) -> APIClient:
    """Another agent of the shared space: its reads count as uses of the first agent's memories
    (a writer's own reads never do)."""
    return _client(token_issue(agent=agent_create(name="reader-rex")).token)


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
    """The rows data migrations made that a flush empties: the role groups and the shared space."""
    from django.apps import apps

    from agents.models import SHARED_SPACE, Space
    from core.spaces import maintenance
    from ultron_site.roles import groups_sync

    with maintenance():
        groups_sync(apps)
        Space.objects.get_or_create(slug=SHARED_SPACE, defaults={"name": "Shared"})


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
def _hub_scope(request):
    """A test sets up its data as the hub's own upkeep does: past the row-level security that
    keeps spaces apart (``core.spaces.maintenance``). Requests the test makes run in their
    caller's spaces, as served ones do, and the maintenance scope is back after each. A test
    marked ``spaces_enforced`` runs with no scope at all, as a served process starts."""
    marker = request.node.get_closest_marker("django_db")
    uses_db = marker is not None or {"db", "transactional_db", "live_server"} & set(request.fixturenames)
    if not uses_db or request.node.get_closest_marker("spaces_enforced"):
        yield
        return
    request.getfixturevalue("_django_db_helper")  # the test's database and transaction first
    if "live_server" in request.fixturenames:
        request.getfixturevalue("live_server")  # it opens connections of its own when it starts
    from core.spaces import maintenance

    _TEST_BODY.set()
    try:
        with maintenance():
            yield
    finally:
        _TEST_BODY.clear()


# While a test body runs, a connection opened meanwhile (the test closed its own, a thread of
# the test's) starts as the hub's upkeep too: the test sets up data as ``_hub_scope`` says. A
# served request still runs in its caller's spaces (the middleware opens them).
_TEST_BODY = threading.Event()


@receiver(connection_created)
def _test_connection_start(sender, connection, **kwargs) -> None:
    if _TEST_BODY.is_set() and connection.alias == DEFAULT_DB_ALIAS:
        from core.spaces import MAINTENANCE, scope_apply

        scope_apply(MAINTENANCE)


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
