"""Read replicas (issue 48): a real streaming replica of the test database's server, made with the
bundled PostgreSQL's pg_basebackup (``ultron_site.embedded_replica``). Writes go to the primary;
searches, context blocks, lists and stats read through the hub from the replica; a replica that
lags beyond the bound or fails is skipped; spaces hold there exactly as on the primary.

The tests commit their writes (``transaction=True``): a replica sees only what the primary has
committed and streamed.
"""

from __future__ import annotations

import contextlib
import copy
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.test.utils import CaptureQueriesContext, override_settings

from core.replicas import on_replica, read_connection, replica_forget, replica_in_use
from ultron_site import embedded_db, embedded_replica
from ultron_site.startup import data_dir

ALIAS = "replica_1"
# The replica's database alias exists for the whole run, as a test mirror of the primary (Django's
# test machinery neither creates nor empties it, and allows it in the tests marked below); reads
# go to it only while a test's ``replica`` fixture points it at the replica and configures it.
connections.settings.setdefault(ALIAS, {**copy.deepcopy(connections.settings[DEFAULT_DB_ALIAS]),
                                        "TEST": {"MIRROR": DEFAULT_DB_ALIAS}})
pytestmark = pytest.mark.django_db(transaction=True, databases=[DEFAULT_DB_ALIAS, ALIAS])
GUNICORN = "Gunicorn workers time out behind the nginx proxy: raise proxy_read_timeout to 120 seconds"
CELERY = "Celery beat runs every schedule twice when two beat processes start: run exactly one beat instance"


def _embedded() -> bool:
    host = str(connection.get_connection_params().get("host") or "")
    return bool(host) and Path(host) == embedded_db.pgdata_path(data_dir())


@pytest.fixture(scope="module")
def replica_server(django_db_setup, django_db_blocker):
    """A streaming replica of the server the test database lives on (copied once the test database
    exists); yields its directory."""
    with django_db_blocker.unblock():
        if not _embedded():
            pytest.skip("the replica is made from the embedded server; DATABASE_URL names another")
    # Not under pytest's own temporary directory: run as root, the server runs as the server
    # package's user, who cannot enter root's private directories.
    where = Path(tempfile.mkdtemp(prefix="ultron-replica-"))
    embedded_replica.replica_create(data_dir(), where)
    yield where
    embedded_replica.replica_remove(data_dir(), where)


@contextlib.contextmanager
def _configured(host: str):
    """The hub configured with a replica at ``host`` (as DATABASE_REPLICA_URL does)."""
    replica = connections[ALIAS]
    replica.close()
    mirrored = replica.settings_dict
    replica.settings_dict = {**copy.deepcopy(connections[DEFAULT_DB_ALIAS].settings_dict),
                             "HOST": host, "PORT": "", "CONN_MAX_AGE": 0, "TEST": mirrored["TEST"]}
    replica_forget()
    with override_settings(ULTRON_REPLICA_ALIASES=[ALIAS]):
        try:
            yield
        finally:
            replica.close()
            replica.settings_dict = mirrored
            replica_forget()


@pytest.fixture
def replica(replica_server, settings):
    """The hub reading from the replica, lag bound 60 s."""
    settings.ULTRON_REPLICA_MAX_LAG_SECONDS = 60.0
    with _configured(str(replica_server)):
        yield replica_server
    with _superuser(replica_server) as conn:
        conn.execute("SELECT pg_wal_replay_resume()")


def _superuser(replica_dir: Path) -> psycopg.Connection:
    name = connections[DEFAULT_DB_ALIAS].settings_dict["NAME"]
    return psycopg.connect(embedded_replica.replica_uri(replica_dir, name), autocommit=True)


def _caught_up(replica_dir: Path, seconds: float = 60.0, *, receive_only: bool = False) -> None:
    """Wait until the replica has replayed (``receive_only``: received) everything the primary
    has written so far."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()")
        target = cursor.fetchone()[0]
    reached = "pg_last_wal_receive_lsn()" if receive_only else "pg_last_wal_replay_lsn()"
    deadline = time.monotonic() + seconds
    with _superuser(replica_dir) as conn:
        while time.monotonic() < deadline:
            if conn.execute(f"SELECT {reached} >= %s::pg_lsn", [target]).fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError(f"the replica did not reach {target} in {seconds} s ({reached})")


def _found(client, query: str) -> list[str]:
    response = client.post("/api/memories/search", {"query": query, "mode": "hybrid"}, format="json")
    assert response.status_code == 200, response.content
    return [str(hit) for hit in response.json()["results"]]


def _reads(client) -> dict:
    """What each of the four replica reads shows: search hits, context, list count, stats total."""
    return {
        "gunicorn": _found(client, "gunicorn worker timeout nginx proxy"),
        "celery": _found(client, "celery beat runs schedules twice"),
        "context": client.post("/api/context", {"query": "celery beat twice"}, format="json").json()["context"],
        "listed": client.get("/api/memories/").json()["count"],
        "total": client.get("/api/memories/stats").json()["total"],
    }


def _health(client) -> dict:
    return client.get("/api/health").json()["replicas"][0]


def test_reads_come_from_the_replica_and_a_lagging_one_is_skipped(replica, api, reader_api, settings):
    assert api.post("/api/memories/upload", {"content": GUNICORN, "memory_type": "pattern"},
                    format="json").status_code == 201
    _caught_up(replica)
    # Replay stops: what the primary writes now reaches the replica's disk but not its data.
    with _superuser(replica) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    assert api.post("/api/memories/upload", {"content": CELERY, "memory_type": "pattern"},
                    format="json").status_code == 201
    _caught_up(replica, receive_only=True)
    time.sleep(1.1)  # past the recheck: the replica now knows it is behind

    with CaptureQueriesContext(connections[ALIAS]) as on_the_replica:
        seen = _reads(reader_api)
    assert any("Gunicorn" in text for text in seen["gunicorn"])
    assert not any("Celery" in text for text in seen["celery"]), "the search read the primary"
    assert "Celery" not in seen["context"]
    assert (seen["listed"], seen["total"]) == (1, 1)
    assert len(on_the_replica.captured_queries) >= 4
    state = _health(reader_api)
    assert state["answers"] and state["in_use"] and state["lag_seconds"] > 0

    # A bound it no longer meets: the same reads go to the primary and see both memories.
    settings.ULTRON_REPLICA_MAX_LAG_SECONDS = 0.5
    time.sleep(1.1)
    with CaptureQueriesContext(connections[ALIAS]) as on_the_replica:
        seen = _reads(reader_api)
    assert any("Celery" in text for text in seen["celery"]) and "Celery" in seen["context"]
    assert (seen["listed"], seen["total"]) == (2, 2)
    assert all("pg_last_wal" in q["sql"] for q in on_the_replica.captured_queries), "only lag checks"
    state = _health(reader_api)
    assert not state["in_use"] and "lags more than 0.5 s" in state["error"]

    # Replay resumes; the replica catches up and is read again.
    settings.ULTRON_REPLICA_MAX_LAG_SECONDS = 60.0
    with _superuser(replica) as conn:
        conn.execute("SELECT pg_wal_replay_resume()")
    _caught_up(replica)
    time.sleep(1.1)
    with CaptureQueriesContext(connections[ALIAS]) as on_the_replica:
        seen = _reads(reader_api)
    assert any("Celery" in text for text in seen["celery"]) and (seen["listed"], seen["total"]) == (2, 2)
    assert len(on_the_replica.captured_queries) >= 4
    # Within the bound (other tests' writes may stream in meanwhile: not always exactly 0).
    state = _health(reader_api)
    assert state["answers"] and state["in_use"] and state["lag_seconds"] < 60 and "error" not in state


def test_every_read_of_a_search_goes_to_the_replica_and_writes_to_the_primary(replica, api, reader_api):
    """A search's statements: its reads on the replica; on the primary, only the reader's use
    (written in the request in tests) and the request's own bookkeeping, no read of memories."""
    assert api.post("/api/memories/upload", {"content": GUNICORN, "memory_type": "pattern"},
                    format="json").status_code == 201
    _caught_up(replica)
    _found(reader_api, "warm up the caches")  # the first request reads the caller's token and spaces
    with CaptureQueriesContext(connections[ALIAS]) as replica_side, \
            CaptureQueriesContext(connections[DEFAULT_DB_ALIAS]) as primary_side:
        assert any("Gunicorn" in text for text in _found(reader_api, "gunicorn worker timeout nginx proxy"))
    searched = [q["sql"] for q in replica_side.captured_queries]
    assert any("memories_memory" in sql and "<=>" in sql for sql in searched), searched
    on_primary = [q["sql"] for q in primary_side.captured_queries]
    assert not any("<=>" in sql or "ts_rank" in sql for sql in on_primary), on_primary


def test_spaces_hold_on_the_replica(replica, settings):
    """The isolation suite's reads and counts (tests/agents/test_isolation_api.py), served from the
    replica; and a replica connection outside any scope sees no row, as the primary's."""
    from tests.agents.test_isolation_api import (
        check_counts_are_team_bs,
        check_reads_show_nothing_of_team_a,
    )
    from tests.isolation import two_teams
    from ultron_site.warmup import warm_up

    warm_up()
    teams = two_teams(settings)
    _caught_up(replica)
    with CaptureQueriesContext(connections[ALIAS]) as on_the_replica:
        check_reads_show_nothing_of_team_a(teams)
        check_counts_are_team_bs(teams)
    assert len(on_the_replica.captured_queries) > 20

    from core.spaces import NOTHING, _set

    replica_connection = connections[ALIAS]
    replica_connection.ensure_connection()
    _set(replica_connection, NOTHING)
    with replica_connection.cursor() as cursor:
        cursor.execute("SELECT current_user, count(*) FROM memories_memory")
        role, rows = cursor.fetchone()
    assert (role, rows) == (settings.ULTRON_DB_APP_ROLE, 0)
    with _superuser(replica) as conn:
        assert conn.execute("SELECT count(*) FROM memories_memory").fetchone()[0] > 0


def test_work_that_fails_on_the_replica_runs_again_on_the_primary(replica, api, reader_api):
    assert api.post("/api/memories/upload", {"content": GUNICORN, "memory_type": "pattern"},
                    format="json").status_code == 201
    _caught_up(replica)
    tries = []

    def work() -> int:
        tries.append(replica_in_use())
        if replica_in_use():
            read_connection().connection.close()  # the replica goes away under the query
        with read_connection().cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone()[0]

    assert on_replica(work) == 1
    assert tries == [ALIAS, None]
    # Left alone for a while: the next reads go straight to the primary.
    assert any("Gunicorn" in text for text in _found(reader_api, "gunicorn worker timeout nginx proxy"))
    assert on_replica(replica_in_use) is None


def test_a_replica_that_does_not_answer_is_skipped(api, tmp_path):
    """A configured replica with no server behind it: reads go to the primary, the health check
    says it does not answer without naming where it is."""
    with _configured(str(tmp_path / "nothing-listens-here")):
        assert api.post("/api/memories/upload", {"content": GUNICORN, "memory_type": "pattern"},
                        format="json").status_code == 201
        assert any("Gunicorn" in text for text in _found(api, "gunicorn worker timeout nginx proxy"))
        body = api.get("/api/health").json()
        assert body["replicas"] == [{"name": ALIAS, "answers": False, "lag_seconds": None, "in_use": False,
                                     "error": "does not answer (the hub's log says why)"}]
        assert "nothing-listens-here" not in str(body)
