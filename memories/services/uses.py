"""Agents' uses of memories (docs/flow.md#hits), recorded off the request path.

A search, a details call or a context block names the memories an agent used. Each use is a
read row per (memory, reader, day) — its ``calls`` counting every use — and the reader's first
use of a day is a hit on the memory (plus one distinct reader when the reader never used it
before); a memory's writer is never counted. Those writes used to sit in the request: a
statement and its commit on every search, and on a read replica a round trip to the primary.

Now a read hands its uses to this process's buffer (``uses_defer``), which a background thread
writes in one statement every ``ULTRON_HITS_FLUSH_SECONDS`` (sooner when it grows past
``_FLUSH_AT`` uses), and again when the process stops cleanly (``atexit``, gunicorn's
``worker_exit``). What a crash loses is the uses of the last interval: a few hits, which the
tier rebalance (hourly, by the stored counts) would have weighed as a handful among thousands.
``ULTRON_HITS_FLUSH_SECONDS=0`` records every use in the request, as before.

Each use keeps the spaces its request could read, and is written in that scope: row-level
security holds for the flush as it did for the request.
"""

from __future__ import annotations

import atexit
import datetime
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.spaces import Scope, maintenance, scope_current, space_scope
from memories.models import Memory, MemoryRead

logger = logging.getLogger("ultron.hits")

# One statement for a batch of uses (one row per memory, reader and day): the read rows are
# inserted or their calls added to; the rows that are new (a reader's first use of the day) are
# hits, grouped per memory, and a reader with no read row before that day is a new reader.
_USES_SQL = """
WITH used AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(readers)s::bigint[], %(days)s::date[], %(calls)s::int[],
                         %(at)s::timestamptz[]) AS u(memory_id, reader_id, day, calls, at)
), asked AS (
    SELECT u.*, m.space_id FROM used u JOIN {memories} m ON m.id = u.memory_id
    WHERE m.status = 'active' AND m.agent_id IS DISTINCT FROM u.reader_id
), recorded AS (
    INSERT INTO {reads} (space_id, memory_id, reader_id, day, calls, last_at)
    SELECT space_id, memory_id, reader_id, day, calls, at FROM asked
    ON CONFLICT (memory_id, reader_id, day) DO UPDATE
        SET calls = {reads}.calls + EXCLUDED.calls, last_at = greatest({reads}.last_at, EXCLUDED.last_at)
    RETURNING memory_id, reader_id, day, last_at, (xmax = 0) AS fresh
), counted AS (
    SELECT r.memory_id, count(*) AS hits, max(r.last_at) AS at,
           count(DISTINCT r.reader_id) FILTER (WHERE NOT EXISTS (
               SELECT 1 FROM {reads} p WHERE p.memory_id = r.memory_id AND p.reader_id = r.reader_id
                                           AND p.day < r.day)) AS new_readers
    FROM recorded r WHERE r.fresh GROUP BY r.memory_id
)
UPDATE {memories} m SET hit_count = m.hit_count + c.hits, last_hit_at = greatest(m.last_hit_at, c.at),
       readers = m.readers + c.new_readers
FROM counted c WHERE m.id = c.memory_id
RETURNING m.id
"""


@dataclass
class _Use:
    calls: int = 0
    at: datetime.datetime | None = None
    read: set[int] = field(default_factory=set)
    maintenance: bool = False


def _write(uses: dict[tuple[Any, int, datetime.date], _Use]) -> set[Any]:
    """One statement for ``uses``; the ids of the memories that gained a hit."""
    if not uses:
        return set()
    keys = list(uses)
    params: dict[str, Any] = {"ids": [str(k[0]) for k in keys], "readers": [k[1] for k in keys], "days": [k[2] for k in keys],
              "calls": [uses[k].calls for k in keys], "at": [uses[k].at for k in keys]}
    with connection.cursor() as cursor:
        cursor.execute(_USES_SQL.format(memories=Memory._meta.db_table, reads=MemoryRead._meta.db_table), params)
        return {row[0] for row in cursor.fetchall()}


def _batch(ids: Iterable[Any], reader_id: int, scope: Scope) -> dict[tuple[Any, int, datetime.date], _Use]:
    now = timezone.now()
    day = timezone.localdate(now)
    return {(memory_id, reader_id, day): _Use(1, now, set(scope.read), scope.maintenance)
            for memory_id in dict.fromkeys(ids)}


def memory_uses_record(*, ids: list[Any], reader_id: int | None) -> set[Any]:
    """A use, now and in the current scope, of each active memory in ``ids`` by the agent
    ``reader_id``: a hit only for the reader's first use of the day and never for the memory's
    own writer; None (a person in the admin site) records nothing. Returns the ids of the
    memories that gained a hit (an upload that repeats a memory counts its use at once)."""
    if not ids or reader_id is None:
        return set()
    return _write(_batch(ids, reader_id, scope_current()))


class UseBuffer:
    """This process's uses not yet written, and the thread that writes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uses: dict[tuple[Any, int, datetime.date], _Use] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._since = 0.0  # when the oldest use still buffered came (time.monotonic)

    def add(self, ids: Iterable[Any], reader_id: int, scope: Scope) -> None:
        batch = _batch(ids, reader_id, scope)
        with self._lock:
            self._after_fork()
            if not self._uses:
                self._since = time.monotonic()
            for key, use in batch.items():
                kept = self._uses.setdefault(key, _Use())
                kept.calls += use.calls
                kept.at = max(filter(None, (kept.at, use.at)))
                kept.read |= use.read
                kept.maintenance |= use.maintenance
            size = len(self._uses)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ultron-hits", daemon=True)
                self._thread.start()
        if size >= _FLUSH_AT:
            self._wake.set()

    def pending(self) -> int:
        with self._lock:
            return len(self._uses)

    def flush(self) -> int:
        """Write every buffered use now, each in the scope it was read in; returns how many
        (memory, reader, day) rows were written. A batch the database refuses is logged and
        dropped: hits are a ranking signal, not a record to retry forever."""
        with self._lock:
            self._after_fork()
            taken, self._uses = self._uses, {}
        groups: dict[tuple[bool, tuple[int, ...]], dict] = {}
        for key, use in taken.items():
            groups.setdefault((use.maintenance, tuple(sorted(use.read))), {})[key] = use
        written = 0
        for (whole, read), uses in groups.items():
            try:
                with maintenance() if whole else space_scope(read=read):
                    _write(uses)
                written += len(uses)
            except Exception:
                logger.exception("%d memory uses could not be recorded", len(uses))
        return written

    def _after_fork(self) -> None:
        # A forked child (a gunicorn worker of a preloaded master) inherits neither the thread
        # nor the parent's uses: those are the parent's to write.
        if self._pid != os.getpid():
            self._pid, self._uses, self._thread, self._wake = os.getpid(), {}, None, threading.Event()

    def _due(self) -> bool:
        with self._lock:
            return bool(self._uses) and (len(self._uses) >= _FLUSH_AT or
                                         time.monotonic() - self._since >= settings.ULTRON_HITS_FLUSH_SECONDS)

    def _run(self) -> None:
        wake = self._wake
        while True:
            # Short ticks, so that the oldest use waits the interval and no more whenever it came.
            wake.wait(min(max(settings.ULTRON_HITS_FLUSH_SECONDS, 0.05), 0.5))
            wake.clear()
            if self._due():
                try:
                    self.flush()
                finally:
                    # Its own connection, closed between flushes: an idle process holds none.
                    connection.close()


_FLUSH_AT = 2000
_buffer = UseBuffer()


def uses_defer(*, ids: list[Any], reader_id: int | None) -> set[Any]:
    """Uses by a read (search, details, context): buffered and written within
    ``ULTRON_HITS_FLUSH_SECONDS`` (nothing known yet of which gain a hit: an empty set), or at
    once when that is 0 (the ids that gained a hit)."""
    if not ids or reader_id is None:
        return set()
    if settings.ULTRON_HITS_FLUSH_SECONDS <= 0:
        return memory_uses_record(ids=ids, reader_id=reader_id)
    _buffer.add(ids, reader_id, scope_current())
    return set()


def uses_flush() -> int:
    """Write this process's buffered uses now (a clean stop, a test, a bench)."""
    return _buffer.flush()


def uses_pending() -> int:
    return _buffer.pending()


def _flush_at_exit() -> None:
    if _buffer.pending():
        try:
            _buffer.flush()
        except Exception:  # the database may be gone already at exit
            logger.exception("memory uses lost at exit")


atexit.register(_flush_at_exit)
