"""The embedded PostgreSQL + pgvector server (the ``pgserver`` package).

Used when ``DATABASE_URL`` is not set. The server lives under ``<ULTRON_DATA_DIR>/pg``,
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
    from pgserver.utils import PostmasterInfo

    pgdata = pgdata_path(data_dir)
    if not (pgdata / "PG_VERSION").exists():
        return False
    info = PostmasterInfo.read_from_pgdata(pgdata)
    return bool(info is not None and info.is_running())


def ensure_running(data_dir: Path) -> str:
    """Start the embedded server if needed; return the URI of the hub's database."""
    import psycopg

    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    import pgserver

    server = pgserver.get_server(pgdata_path(data_dir), cleanup_mode=None)
    admin_uri = server.get_uri()
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    return server.get_uri(DATABASE_NAME)


def stop(data_dir: Path) -> None:
    """Stop the embedded server (fast shutdown) if it is running."""
    import subprocess

    from pgserver._commands import pg_ctl

    if not is_running(data_dir):
        return
    user = "pgserver" if _running_as_root() else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata_path(data_dir), user=user)
    except subprocess.CalledProcessError as exc:  # already stopping or gone
        logger.warning("embedded PostgreSQL did not stop cleanly: %s", exc)


def _running_as_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
