"""The embedded PostgreSQL + pgvector server (the ``pgserver`` package).

Used when ``DATABASE_URL`` is not set: start-up (``ultron_site.startup.prepare``) starts it
and sets ``DATABASE_URL`` to its URI. The server lives under ``<ULTRON_DATA_DIR>/pg``,
listens only on a Unix socket, and is left running when a process exits so that the web
server, the worker and management commands all attach to the same one. ``make run`` stops
it on Ctrl-C when it was the one that started it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

DATABASE_NAME = "ultron"

# platformdirs warns whenever XDG_RUNTIME_DIR is unset (CI, root shells); pgserver asks it for
# a lock directory on import and on use. The fallback it picks is fine here.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

logger = logging.getLogger(__name__)


def pgdata_path(data_dir: Path) -> Path:
    return data_dir.resolve() / "pg"


def is_running(data_dir: Path) -> bool:
    import psutil
    from pgserver.utils import PostmasterInfo

    pgdata = pgdata_path(data_dir)
    if not (pgdata / "PG_VERSION").exists():
        return False
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    # A killed server whose parent never reaps it (a container's init may not) is a zombie.
    try:
        return info.process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


TUNING_FILE = "ultron.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"


def tuning() -> dict[str, str]:
    """Server settings for the embedded PostgreSQL. initdb's defaults (128 MB of shared
    buffers) make a million-memory HNSW index live in the OS cache and cost every search page
    copies; ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB sets the buffer pool (default 1024)."""
    from ultron_site.env import env_get

    shared = env_get("ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB")  # declared in ultron_site/env.py
    return {
        "shared_buffers": f"{shared}MB",
        "effective_cache_size": f"{max(shared * 3, 4096)}MB",
        "maintenance_work_mem": f"{max(64, min(shared, 2048))}MB",  # HNSW builds, reembed
        # The tier rebalance rewrites many rows in one statement: no forced checkpoints (and
        # the full-page images after them) in the middle of it.
        "max_wal_size": "4GB",
    }


def _write_tuning(pgdata: Path) -> bool:
    """Write our settings file and include it from postgresql.conf; True if anything changed."""
    wanted = "# Written by Ultron Hub (ultron_site/embedded_db.py) on every start.\n" + "".join(
        f"{key} = '{value}'\n" for key, value in tuning().items()
    )
    changed = False
    target = pgdata / TUNING_FILE
    if not target.exists() or target.read_text() != wanted:
        target.write_text(wanted)
        target.chmod(0o644)
        changed = True
    conf = pgdata / "postgresql.conf"
    text = conf.read_text()
    if _INCLUDE not in text:
        conf.write_text(text.rstrip("\n") + f"\n\n# Ultron Hub\n{_INCLUDE}\n")
        changed = True
    return changed


def ensure_running(data_dir: Path) -> str:
    """Start the embedded server if needed; return the URI of the hub's database.

    Our settings (``tuning``) are written before a start; on the very first start, right after
    initdb, the fresh server is restarted once to pick them up."""
    import psycopg

    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = pgdata_path(data_dir)
    if (pgdata / "PG_VERSION").exists() and not is_running(data_dir):
        if (pgdata / "postmaster.pid").exists():
            logger.warning(UNCLEAN_STOP, pgdata)
            _wait_for_orphans(pgdata)
            # Its pid may still exist as a zombie, which PostgreSQL (and pgserver) would take
            # for a running server: its lock files go once no process holds the old memory.
            for lock in [pgdata / "postmaster.pid", *pgdata.glob(".s.PGSQL.*.lock")]:
                lock.unlink(missing_ok=True)
        _write_tuning(pgdata)
    fresh = not (pgdata / "PG_VERSION").exists()
    server = _server(pgdata)
    if fresh and _write_tuning(pgdata):
        stop(data_dir)
        server = _server(pgdata)
    admin_uri = server.get_uri()
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    return server.get_uri(DATABASE_NAME)


# A clean stop removes postmaster.pid; a server that was killed (kill -9, the OOM killer, the
# machine losing power) leaves it behind. PostgreSQL then recovers on its next start.
UNCLEAN_STOP = (
    "embedded PostgreSQL in %s was not shut down cleanly (killed, or the machine stopped): it "
    "replays its write-ahead log on this start, so every committed write is kept and writes that "
    "were in flight are rolled back (an upload that got no answer was not stored: send it again)"
)


def _wait_for_orphans(pgdata: Path, seconds: float = 30.0) -> None:
    """After the postmaster was killed its backends notice and exit within moments; a new server
    will not start while they are still attached to the old shared memory segment (Linux:
    its attach count in /proc/sysvipc/shm)."""
    import time

    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    segment = info.shmget_id if info is not None else None
    table = Path("/proc/sysvipc/shm")
    if segment is None or not table.exists():
        return
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        attached = [int(row.split()[6]) for row in table.read_text().splitlines()[1:]
                    if row.split()[1] == str(segment)]
        if not attached or attached[0] == 0:
            return
        time.sleep(0.2)
    logger.warning("embedded PostgreSQL: old server processes still hold %s's shared memory", pgdata)


def _server(pgdata: Path):
    import pgserver
    from pgserver.postgres_server import PostgresServer

    # pgserver keeps one handle per data directory for the life of the process, and a handle
    # does not notice that its server was stopped: forget a stale one so the server is started.
    key = pgdata.resolve()
    if key in PostgresServer._instances and not is_running(key.parent):
        del PostgresServer._instances[key]
    # cleanup_mode=None: the server outlives this process, for the web server, the worker and commands.
    return pgserver.get_server(pgdata, cleanup_mode=None)


def stop(data_dir: Path) -> None:
    """Stop the embedded server (fast shutdown) if it is running."""
    import subprocess

    from pgserver._commands import pg_ctl

    if not is_running(data_dir):
        return
    # PostgreSQL refuses to run as root: pg_ctl then runs as pgserver's own user.
    user = "pgserver" if _running_as_root() else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata_path(data_dir), user=user)
    except subprocess.CalledProcessError as exc:  # already stopping or gone
        logger.warning("embedded PostgreSQL did not stop cleanly: %s", exc)


def _running_as_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
