"""Advisory locks per space: work that must not run twice at once within a space (deciding an
upload's duplicates, placing a memory in a cluster) takes the lock of its space, so that two
spaces' work never waits for each other.

A lock is PostgreSQL's two-key advisory lock ``(class, space id)``, held to the end of the
transaction: the class is a 32-bit key derived from the lock's name, so no other advisory lock
in the database shares it by chance (the one-key form lives in a key space of its own).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.db import connection


def lock_class(name: str) -> int:
    """The first key of the per-space advisory lock named ``name``."""
    return int.from_bytes(hashlib.sha256(f"ultron:{name}".encode()).digest()[:4], "big", signed=True)


def space_locks_take(name: str, space_ids: Iterable[int]) -> None:
    """Take lock ``name`` of each space in ``space_ids`` until the transaction ends, in ascending
    order of space id (so two takers of several never deadlock)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, id) FROM unnest(%s::int[]) AS s(id) ORDER BY id",
                       [lock_class(name), sorted({int(i) for i in space_ids})])
