"""Uploads decide per space: the duplicate decision's lock and the cluster placement's lock are
taken per space (core/locks.py), so one team's uploads never wait for another's. Within a space
one upload decides at a time (tests/site/test_processes.py races 50 identical and 50
near-duplicate uploads through gunicorn and still gets one memory)."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from agents.services import agent_create, space_create
from clusters.services.membership import ASSIGN_CLASS
from memories.models import Memory
from memories.services import memory_upload
from memories.services.upload import _DEDUP_CLASS
from tests.site.test_processes import _test_database_url

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = {"content": "alembic upgrade fails with 'Can't locate revision' after a squashed migration",
        "resolution": "stamp the database at the squashed revision, then upgrade"}


class Holder:
    """Another session holding one advisory lock (class, space) until released."""

    def __init__(self, key: int, space_id: int) -> None:
        self.key, self.space_id = key, space_id
        self.taken, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(_test_database_url()) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", [self.key, self.space_id])
            self.taken.set()
            self.release.wait(60)

    def __enter__(self) -> Holder:
        self.thread.start()
        assert self.taken.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(30)


def _upload_within(seconds: float, space) -> Memory:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{int(seconds * 1000)}ms'")
        return memory_upload(agent=agent_create(name=f"writer-{space.slug}", spaces=[(space, "writer")]),
                             space=space, **TEXT).memory


@pytest.mark.parametrize("key", [_DEDUP_CLASS, ASSIGN_CLASS], ids=["duplicate decision", "cluster placement"])
def test_an_upload_does_not_wait_for_another_spaces_lock(key):
    team_a, team_b = space_create(slug="team-a"), space_create(slug="team-b")
    with Holder(key, team_a.pk):
        stored = _upload_within(5, team_b)  # team A's lock is held: team B does not wait for it
        assert stored.space_id == team_b.pk
        with pytest.raises(OperationalError, match="lock timeout"):
            _upload_within(1, team_a)  # team A's own upload waits for it
    assert _upload_within(5, team_a).space_id == team_a.pk  # released: it goes through
    assert Memory.objects.filter(content=TEXT["content"]).count() == 2  # one per space
