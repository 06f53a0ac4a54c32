"""The database's wall between spaces: row-level security, and the scope each request or task sets.

Every table that holds a space's data has a ``space_id`` column and row-level security policies
(``rls_enable_sql``, run by the migrations that add the column): a row is visible only while its
space is among the connection's *read* spaces, and may be inserted or deleted only while its
space is among the *write* spaces. Updates need the row to be readable before and after (a hit
recorded by a reader's search updates a memory it may only read; who may edit is the code's
rule, the database keeps rows from crossing spaces).

The policies bind every role but the tables' owner and superusers. So the hub's connections run
as the role ``ULTRON_DB_APP_ROLE`` (default ``ultron_app``: no login, owns nothing, holds only
``SELECT, INSERT, UPDATE, DELETE`` on the tables — never ``TRUNCATE``, which ignores policies):
each new connection switches to it (``SET ROLE``) with no spaces at all, so a query that runs
outside any scope finds nothing. Code opens a scope explicitly:

- ``space_scope(read=…, write=…)``: a request (its caller's spaces, set after authentication),
  a pipeline task (the one space it works on);
- ``maintenance()``: the connection's own login role, which owns the tables and is not bound by
  the policies — migrations, backups and restores, re-embedding, the pipeline's hub-wide upkeep
  (tier rebalance, lexeme folding). Every use is a visible line in the code.

The scope is a session setting (``set_config(…, false)``), set on entry and put back on exit, not
``SET LOCAL``: Django runs outside transactions by default (autocommit), and wrapping every
request in one transaction would hold a batch upload's row locks until its last item. A
connection pooler in *transaction* mode would therefore mix scopes between clients: use session
pooling (or none) in front of the hub (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.signals import connection_created
from django.dispatch import receiver

READ_SETTING = "ultron.read_spaces"
WRITE_SETTING = "ultron.write_spaces"


@dataclass(frozen=True)
class Scope:
    """What a connection may touch: the spaces it reads and writes, or everything (``maintenance``)."""

    read: tuple[int, ...] = ()
    write: tuple[int, ...] = ()
    maintenance: bool = False


NOTHING = Scope()
MAINTENANCE = Scope(maintenance=True)
_UNKNOWN = Scope(read=(-1,))  # never a real scope: compared unequal to every one
_FAILED = 3  # psycopg.pq.TransactionStatus.INERROR


def app_role() -> str:
    return settings.ULTRON_DB_APP_ROLE


def _ids(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted({int(v) for v in values}))


# The scope the code of this thread has opened. A connection opened meanwhile (the first, or
# a new one after the database restarted) starts in it: a scope is the code's declaration, not a
# property of one connection. A new thread starts with none.
_opened = threading.local()


def _declared() -> Scope:
    return getattr(_opened, "scope", NOTHING)


def _in_use() -> list:
    """The connections this thread's code runs on: the primary's, and a read replica's while a
    block reads from one (``core.replicas.on_replica``)."""
    from core.replicas import replica_in_use

    replica = replica_in_use()
    return [connection, connections[replica]] if replica else [connection]


def _apply(scope: Scope) -> None:
    """Declare ``scope`` for this thread and make the sessions of the connections in use match
    it (one round trip each, none where it already does)."""
    _opened.scope = scope
    for conn in _in_use():
        conn.ensure_connection()  # a new connection starts in the declared scope already
        if getattr(conn, "ultron_scope", None) != scope:
            _set(conn, scope)


def scope_to_read_connection() -> None:
    """Bring the read replica's connection (``core.replicas.on_replica``) into this thread's
    declared scope, before anything reads there."""
    _apply(_declared())


def _set(conn, scope: Scope) -> None:
    role = "RESET ROLE" if scope.maintenance else f'SET ROLE "{app_role()}"'
    with conn.cursor() as cursor:
        cursor.execute(
            f"{role}; SELECT set_config(%s, %s, false), set_config(%s, %s, false)",
            [READ_SETTING, ",".join(map(str, scope.read)), WRITE_SETTING, ",".join(map(str, scope.write))],
        )
    conn.ultron_scope = scope


def scope_apply(scope: Scope) -> None:
    """Switch this thread and its connection to ``scope`` for good (nothing puts the previous
    one back): for a thread's or a connection's start."""
    _apply(scope)


def scope_current() -> Scope:
    """The scope this thread's code runs in (nothing until one is opened)."""
    return _declared()


@contextlib.contextmanager
def _scoped(scope: Scope) -> Iterator[Scope]:
    previous = _declared()
    _apply(scope)
    try:
        yield scope
    finally:
        _opened.scope = previous
        for conn in _in_use():
            _put_back(conn, previous)


def _put_back(conn, previous: Scope) -> None:
    # A connection closed inside the scope (a database restart, a test's teardown): the next one
    # starts in the declared scope, nothing to put back on this one.
    if conn.connection is not None and getattr(conn, "ultron_scope", None) != previous:
        if conn.needs_rollback or conn.connection.info.transaction_status == _FAILED:
            # A failed transaction takes no statement; its rollback puts back the settings it
            # changed, so what the connection holds then is not known here: the next scope is
            # applied whatever it is.
            conn.ultron_scope = _UNKNOWN
        else:
            _set(conn, previous)


def space_scope(*, read: Iterable[int], write: Iterable[int] = ()) -> contextlib.AbstractContextManager[Scope]:
    """Run the block seeing the rows of ``read`` and inserting or deleting those of ``write``
    (a write space is always readable too)."""
    write_ids = _ids(write)
    return _scoped(Scope(read=_ids([*read, *write_ids]), write=write_ids))


def maintenance() -> contextlib.AbstractContextManager[Scope]:
    """Run the block as the connection's login role, past the policies: for work that is the
    hub's own and spans spaces (migrations, backups, hub-wide upkeep). Never for a caller."""
    return _scoped(MAINTENANCE)


def scope_enter(*, read: Iterable[int], write: Iterable[int] = ()) -> Scope:
    """Switch the connection to these spaces until the enclosing ``scope_kept`` block ends (the
    API opens its caller's spaces only once DRF has authenticated the caller, inside the view)."""
    write_ids = _ids(write)
    scope = Scope(read=_ids([*read, *write_ids]), write=write_ids)
    _apply(scope)
    return scope


@contextlib.contextmanager
def scope_kept() -> Iterator[None]:
    """Whatever scope the block switches to (``scope_enter``) ends with it: the one before is
    put back (a request's middleware)."""
    with _scoped(scope_current()):
        yield


def scoped_iterator(items: Iterable, scope: Scope) -> Iterator:
    """``items`` consumed inside ``scope``: a streamed response's body is produced after the
    view and its middleware have returned, when the request's scope is gone."""
    with _scoped(scope):
        yield from items


def role_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [app_role()])
        return cursor.fetchone() is not None


@receiver(connection_created)
def _connection_start(sender, connection, **kwargs) -> None:  # noqa: ARG001 - the signal's signature
    """A new connection (the primary's, or a read replica's) sees nothing until a scope is
    opened. Before the migration that creates the role has run (a new database), the primary's
    connection stays the login role: only ``migrate`` can do anything useful then, and the hub
    refuses to serve (``ultron.E002``); a replica's refuses to open. The test runner's and
    ``createdb``'s connection to the server's maintenance database is left alone."""
    from core.replicas import REPLICA_PREFIX

    if connection.vendor != "postgresql" or not (
            connection.alias == DEFAULT_DB_ALIAS or connection.alias.startswith(REPLICA_PREFIX)):
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [app_role()])
        exists = cursor.fetchone() is not None
    if not exists:
        if connection.alias != DEFAULT_DB_ALIAS:
            # Never past the policies on a replica: one without the role is not read at all.
            from django.db import OperationalError

            connection.close()  # not kept half-open: the next use connects (and refuses) again
            raise OperationalError(f"the replica has no role {app_role()} (not migrated yet?): not read")
        connection.ultron_scope = MAINTENANCE
        return
    _set(connection, getattr(_opened, "scope", NOTHING))


# --- migrations -------------------------------------------------------------------------------

_READABLE = f"space_id = ANY (string_to_array(current_setting('{READ_SETTING}', true), ',')::bigint[])"
_WRITABLE = f"space_id = ANY (string_to_array(current_setting('{WRITE_SETTING}', true), ',')::bigint[])"


def rls_enable_sql(table: str) -> str:
    """Row-level security on ``table`` (which has a ``space_id`` column): the four policies of
    this module's docstring."""
    return f"""
        ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
        DROP POLICY IF EXISTS space_read ON {table};
        DROP POLICY IF EXISTS space_insert ON {table};
        DROP POLICY IF EXISTS space_update ON {table};
        DROP POLICY IF EXISTS space_delete ON {table};
        CREATE POLICY space_read ON {table} FOR SELECT USING ({_READABLE});
        CREATE POLICY space_insert ON {table} FOR INSERT WITH CHECK ({_WRITABLE});
        CREATE POLICY space_update ON {table} FOR UPDATE USING ({_READABLE}) WITH CHECK ({_READABLE});
        CREATE POLICY space_delete ON {table} FOR DELETE USING ({_WRITABLE});
    """


def rls_disable_sql(table: str) -> str:
    return f"""
        DROP POLICY IF EXISTS space_read ON {table};
        DROP POLICY IF EXISTS space_insert ON {table};
        DROP POLICY IF EXISTS space_update ON {table};
        DROP POLICY IF EXISTS space_delete ON {table};
        ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;
    """


def space_column_sql(table: str, *, constraint: bool = True) -> str:
    """Add ``space_id`` to ``table``, every existing row in the space ``shared``: a column with a
    default is added without rewriting the table (the default lives in the catalogue), then the
    default is dropped so every new row must name its space; a foreign key (validated by one
    scan, no rewrite) unless ``constraint`` is false, and an index."""
    fk = (f"ALTER TABLE {table} ADD CONSTRAINT {table}_space_id_fk FOREIGN KEY (space_id) "
          f"REFERENCES agents_space (id) DEFERRABLE INITIALLY DEFERRED;") if constraint else ""
    return f"""
        DO $$
        DECLARE shared bigint;
        BEGIN
            SELECT id INTO STRICT shared FROM agents_space WHERE slug = 'shared';
            EXECUTE format('ALTER TABLE {table} ADD COLUMN space_id bigint NOT NULL DEFAULT %s', shared);
            ALTER TABLE {table} ALTER COLUMN space_id DROP DEFAULT;
        END $$;
        {fk}
        CREATE INDEX {table}_space_id ON {table} (space_id);
    """


def space_column_drop_sql(table: str) -> str:
    return f"ALTER TABLE {table} DROP COLUMN space_id;"



class HubWideCommand:
    """A management command that does the hub's own work across spaces (backups, exports,
    re-embedding, the pipeline's upkeep): it runs as the tables' owner (``maintenance``), an
    operator's tool like ``migrate``. Mixed in before ``BaseCommand``."""

    def execute(self, *args, **options):
        with maintenance():
            return super().execute(*args, **options)  # type: ignore[misc]
