"""Hits recorded off the request path (memories/services/uses.py): a search, details or context
call buffers its uses, and the buffer writes them later in one statement, in the reader's scope,
with the rules of docs/flow.md#hits (once per reader a day, never the writer's own)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from django.db import connection
from django.urls import reverse

from agents.services import agent_create, space_create, token_issue
from core.spaces import scope_current, space_scope
from memories.models import Memory, MemoryRead
from memories.services import memory_upload, uses_flush, uses_pending
from memories.services.uses import _buffer
from tests.conftest import _client
from tests.memories.test_api import DOCKER_PIP, upload
from tests.site.test_processes import _env

pytestmark = pytest.mark.django_db


@pytest.fixture
def deferred(settings):
    settings.ULTRON_HITS_FLUSH_SECONDS = 30.0  # the thread waits; the test flushes
    uses_flush()
    yield
    uses_flush()


def _search(client, query="pip install fails inside docker build"):
    response = client.post(reverse("memory-search"), {"query": query}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_search_writes_nothing_until_the_buffer_is_flushed(api, reader_api, deferred):
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    before = Memory.objects.get(pk=memory_id).hit_count
    reads = MemoryRead.objects.count()
    body = _search(reader_api)
    assert [r["id"] for r in body["results"]] == [memory_id]
    assert body["results"][0]["hit_count"] == before  # the stored count: the use is not written yet
    assert MemoryRead.objects.count() == reads and uses_pending() == 1
    assert uses_flush() == 1
    memory = Memory.objects.get(pk=memory_id)
    assert (memory.hit_count, memory.readers) == (before + 1, 1)
    assert uses_pending() == 0


def test_buffered_uses_keep_the_rules_once_a_day_per_reader_never_the_writer(api, reader_api, deferred):
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    before = Memory.objects.get(pk=memory_id).hit_count
    third_api = _client(token_issue(agent=agent_create(name="third-tess")).token)
    for client in (reader_api, reader_api, reader_api, api, third_api):  # one reader thrice, the writer, another
        _search(client)
    assert reader_api.post(reverse("memory-details"), {"ids": [memory_id]}, format="json").status_code == 200
    assert uses_flush() == 3  # one row per (memory, reader, day); the writer's is dropped when written
    memory = Memory.objects.get(pk=memory_id)
    assert (memory.hit_count, memory.readers) == (before + 2, 2)
    calls = dict(MemoryRead.objects.filter(memory_id=memory_id).values_list("reader__name", "calls"))
    assert calls == {"reader-rex": 4, "third-tess": 1}
    _search(reader_api)  # the same day again: calls only
    uses_flush()
    assert Memory.objects.get(pk=memory_id).hit_count == before + 2
    assert MemoryRead.objects.get(memory_id=memory_id, reader__name="reader-rex").calls == 5


def test_a_flush_writes_in_the_scope_the_use_was_read_in(agent, deferred):
    """Row-level security holds for the flush: a use carrying a space its request could not read
    changes nothing there."""
    other = space_create(slug="team-other")
    theirs = memory_upload(agent=agent_create(name="their-agent", spaces=[(other, "writer")]), space=other,
                           **DOCKER_PIP).memory
    reader = agent_create(name="reader-rex")
    before = Memory.objects.get(pk=theirs.pk).hit_count
    with space_scope(read=[reader.default_space_id]):
        _buffer.add([theirs.pk], reader.pk, scope_current())
    uses_flush()
    assert Memory.objects.get(pk=theirs.pk).hit_count == before
    assert not MemoryRead.objects.filter(memory=theirs).exists()


def test_immediate_mode_records_in_the_request(api, reader_api, settings):
    settings.ULTRON_HITS_FLUSH_SECONDS = 0
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    before = Memory.objects.get(pk=memory_id).hit_count
    assert _search(reader_api)["results"][0]["hit_count"] == before + 1
    assert Memory.objects.get(pk=memory_id).hit_count == before + 1 and uses_pending() == 0


@pytest.mark.django_db(transaction=True)
def test_the_buffers_thread_writes_the_uses_within_its_interval(api, reader_api, settings):
    settings.ULTRON_HITS_FLUSH_SECONDS = 0.2
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    before = Memory.objects.get(pk=memory_id).hit_count
    _search(reader_api)
    deadline = time.monotonic() + 20
    while Memory.objects.get(pk=memory_id).hit_count == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Memory.objects.get(pk=memory_id).hit_count == before + 1
    assert uses_pending() == 0


_STOPPING_PROCESS = """
import django, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "ultron_site.settings"
django.setup()
from core.spaces import maintenance
from memories.services import uses_defer
with maintenance():
    uses_defer(ids=[sys.argv[1]], reader_id=int(sys.argv[2]))
print("buffered", flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_a_clean_stop_writes_the_buffered_uses(api):
    """A process that buffered uses and exits normally writes them on the way out."""
    memory_id = upload(api, DOCKER_PIP).json()["id"]
    reader = agent_create(name="reader-rex")
    before = Memory.objects.get(pk=memory_id).hit_count
    connection.close()
    done = subprocess.run(
        [sys.executable, "-c", _STOPPING_PROCESS, memory_id, str(reader.pk)],
        env=_env(ULTRON_HITS_FLUSH_SECONDS="60"), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0 and "buffered" in done.stdout, done.stderr
    assert Memory.objects.get(pk=memory_id).hit_count == before + 1
