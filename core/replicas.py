"""Read replicas: searches and the other pure reads an agent makes go to a streaming replica of
the database when one is configured, fresh enough and answering; everything else reads the
primary.

``DATABASE_REPLICA_URL`` names one or more replicas (``ultron_site/settings.py`` makes each a
database alias ``replica_1``, ``replica_2``, …). A view hands the work that may read a replica to
``on_replica``: inside it, the ORM's reads go to the chosen replica (``ReplicaRouter``) and raw
SQL that reads asks ``read_connection()`` for its connection; writes, and reads that take row
locks, go to the primary as always. Code that decides something it then writes (a duplicate
check, clustering, the review queue) never runs inside ``on_replica``, so it reads the primary.

A replica is chosen only while its lag — how far its replayed data is behind what it has
received from the primary — is within ``ULTRON_REPLICA_MAX_LAG_SECONDS``; the lag is asked of the
replica at most once a second per process. One that does not answer is left alone for a few
seconds. When the chosen replica fails during the work (it went away, or a query was cancelled
because replay needed its rows), the work runs again on the primary: a reader sees an answer,
never the replica's trouble.

Spaces hold on a replica exactly as on the primary: the row-level security policies are
replicated with the tables, and a replica's connection runs as the same role in the same scope
as the code that uses it (``core/spaces.py`` applies a scope to the read connection too).
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

logger = logging.getLogger(__name__)

REPLICA_PREFIX = "replica_"
RECHECK_SECONDS = 1.0  # how old a replica's measured lag may be before it is asked again
DOWN_SECONDS = 5.0  # how long a replica that did not answer is left alone

T = TypeVar("T")

_reading: contextvars.ContextVar[str | None] = contextvars.ContextVar("ultron_read_alias", default=None)

# Lag 0 while everything received is replayed (an idle primary sends nothing, and the last replayed
# commit's age would say nothing about freshness); otherwise the age of the last replayed commit.
# A server that is not in recovery is a primary: never behind itself.
_LAG_SQL = """
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0.0
    WHEN pg_last_wal_receive_lsn() IS NOT NULL AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
    ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8
END
"""


def replica_aliases() -> tuple[str, ...]:
    """The database aliases of the configured replicas, in order."""
    return tuple(settings.ULTRON_REPLICA_ALIASES)


@dataclass
class ReplicaState:
    """What this process last learned of one replica."""

    alias: str
    checked: float = float("-inf")  # time.monotonic() of the last check
    lag: float | None = None  # seconds; None: unknown (never checked, or no answer)
    error: str = ""  # why it did not answer at the last check

    def usable(self, max_lag: float) -> bool:
        return not self.error and self.lag is not None and self.lag <= max_lag


_states: dict[str, ReplicaState] = {}
_states_lock = threading.Lock()
_turn = itertools.count()


def _state(alias: str) -> ReplicaState:
    with _states_lock:
        return _states.setdefault(alias, ReplicaState(alias))


def lag_measure(alias: str) -> float | None:
    """Ask replica ``alias`` how far behind it is (seconds; None when it cannot tell: it has
    replayed nothing yet). Raises the database's error when it does not answer."""
    with connections[alias].cursor() as cursor:
        cursor.execute(_LAG_SQL)
        value = cursor.fetchone()[0]
    return None if value is None else max(0.0, float(value))


def replica_check(alias: str, *, force: bool = False) -> ReplicaState:
    """The replica's state, asking it again when the last check is too old (or ``force``)."""
    state = _state(alias)
    wait = DOWN_SECONDS if state.error else RECHECK_SECONDS
    if not force and time.monotonic() - state.checked < wait:
        return state
    try:
        lag = lag_measure(alias)
    except (OperationalError, InterfaceError) as exc:
        connections[alias].close()
        _mark_down(alias, _first_line(exc))
        return state
    state.lag, state.error, state.checked = lag, "", time.monotonic()
    return state


def replica_forget() -> None:
    """Forget what this process knows of its replicas (tests; a changed configuration)."""
    with _states_lock:
        _states.clear()


def replica_choose() -> str | None:
    """A replica to read from now: the configured ones in turn, skipping any that lags beyond the
    bound or does not answer. None: read the primary."""
    aliases = replica_aliases()
    if not aliases:
        return None
    start = next(_turn) % len(aliases)
    for alias in aliases[start:] + aliases[:start]:
        if replica_check(alias).usable(settings.ULTRON_REPLICA_MAX_LAG_SECONDS):
            return alias
    return None


def read_alias() -> str:
    """The database the current block reads from: the chosen replica inside ``on_replica``,
    otherwise the primary."""
    return _reading.get() or DEFAULT_DB_ALIAS


def replica_in_use() -> str | None:
    """The replica alias the current block reads from (None: the primary)."""
    return _reading.get()


def read_connection():
    """The connection raw SQL that only reads should use (``read_alias``)."""
    return connections[read_alias()]


def on_replica(work: Callable[[], T]) -> T:
    """Run ``work`` reading from a replica when one is usable, else from the primary. Work that
    fails on the replica because of the replica is run again on the primary."""
    alias = replica_choose()
    if alias is None:
        return work()
    token = _reading.set(alias)
    try:
        from core.spaces import scope_to_read_connection

        scope_to_read_connection()
        return work()
    except (OperationalError, InterfaceError) as exc:
        replica = connections[alias]
        if replica.connection is not None and replica.is_usable():
            # A query cancelled by replay (a recovery conflict), or a statement timeout there.
            logger.info("read on replica %s failed (%s): read again on the primary", alias, _first_line(exc))
        else:
            replica.close()
            _mark_down(alias, _first_line(exc))
    finally:
        _reading.reset(token)
    return work()


def _mark_down(alias: str, error: str) -> None:
    state = _state(alias)
    if not state.error:
        logger.warning("read replica %s does not answer (%s): reads go to the primary", alias, error)
    state.lag, state.error, state.checked = None, error, time.monotonic()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def replicas_health() -> list[dict[str, Any]]:
    """Each replica's state for the health check, asked afresh: whether it answers, its lag, and
    whether reads go to it now. The health check is public: replicas are named by their position,
    never by host, and the database's own error (which names the host) goes to the log only."""
    report = []
    max_lag = settings.ULTRON_REPLICA_MAX_LAG_SECONDS
    for alias in replica_aliases():
        state = replica_check(alias, force=True)
        entry: dict[str, Any] = {"name": alias, "answers": not state.error,
                                 "lag_seconds": None if state.lag is None else round(state.lag, 3),
                                 "in_use": state.usable(max_lag)}
        if state.error:
            entry["error"] = "does not answer (the hub's log says why)"
        elif not entry["in_use"]:
            entry["error"] = (f"lags more than {max_lag:g} s behind the primary" if state.lag is not None
                              else "has replayed nothing yet")
        report.append(entry)
    return report


class ReplicaRouter:
    """Django's database router: reads inside ``on_replica`` go to its replica, everything else
    (writes, locking reads, migrations) to the primary."""

    def db_for_read(self, model, **hints) -> str | None:  # noqa: ARG002 - the router's signature
        return _reading.get()

    def db_for_write(self, model, **hints) -> str:  # noqa: ARG002
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool:  # noqa: ARG002 - one database, seen twice
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints) -> bool:  # noqa: ARG002
        return not db.startswith(REPLICA_PREFIX)
