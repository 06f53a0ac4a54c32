"""A streaming read replica of the embedded PostgreSQL, made with the bundled server's own
``pg_basebackup``: to try read replicas on one machine (``manage.py embedded_replica``), and for
the tests and benchmarks that read through one.

The replica is a copy of the embedded server's whole data directory that keeps replaying the
primary's write-ahead log as it streams in (a hot standby: it answers reads, refuses writes). It
listens on a Unix socket in its own directory only, with a small buffer pool of its own. A
production hub's replicas are the database operator's (docs/deployment.md#read-replicas); this
one dies with its machine like the embedded primary.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ultron_site import embedded_db

# The replica's own settings, after everything the copied configuration says (postgresql.auto.conf
# is read last): its socket in its own directory, no TCP, and a buffer pool of its own size.
_SETTINGS = """
# Written by Ultron Hub (ultron_site/embedded_replica.py)
listen_addresses = ''
unix_socket_directories = '{socket}'
shared_buffers = '{shared_buffers}MB'
hot_standby = on
hot_standby_feedback = on
"""


def _major(data_dir: Path) -> int:
    return embedded_db.data_major(embedded_db.pgdata_path(data_dir)) or embedded_db.TARGET_MAJOR


def replica_create(data_dir: Path, replica_dir: Path, *, shared_buffers_mb: int = 128) -> str:
    """Copy the running embedded server of ``data_dir`` into ``replica_dir`` (which must not exist
    or be empty; its path short enough for a socket name, under ~90 characters), start it as a
    streaming replica and return the URI of its ``ultron`` database. The hub's login role and
    every database come with the copy. Run as root, the server runs as the server package's
    user, who must be able to reach ``replica_dir`` (a directory under /tmp is fine)."""
    pgdata = embedded_db.pgdata_path(data_dir)
    if not embedded_db.is_running(data_dir):
        raise RuntimeError(f"the embedded server in {pgdata} is not running: start the hub first")
    replica_dir = replica_dir.resolve()
    if len(str(replica_dir)) > 90:
        raise ValueError(f"{replica_dir} is too long a path for the replica's socket (at most 90 characters)")
    replica_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if any(replica_dir.iterdir()):
        raise ValueError(f"{replica_dir} is not empty")
    replica_dir.chmod(0o700)
    embedded_db._as_server_user(replica_dir)
    major = _major(data_dir)
    # -R: writes standby.signal and the connection to the primary; -X stream: the WAL written
    # during the copy comes with it; -c fast: no wait for the primary's next checkpoint.
    try:
        embedded_db._pg("pg_basebackup", ["-h", str(pgdata), "-U", "postgres", "-D", str(replica_dir),
                                          "-X", "stream", "-R", "-c", "fast", "--no-sync"], major=major)
    except subprocess.CalledProcessError as exc:
        said = " / ".join(line for line in (exc.output or "").splitlines() if line.strip())[-600:]
        raise RuntimeError(f"pg_basebackup could not copy {pgdata} into {replica_dir}: {said}") from None
    with (replica_dir / "postgresql.auto.conf").open("a", encoding="utf-8") as conf:
        conf.write(_SETTINGS.format(socket=replica_dir, shared_buffers=shared_buffers_mb))
    # The embedded primary keeps its socket in its data directory: the socket's lock file came
    # with the copy (and would stop the replica starting), as did the primary's logs and the
    # server package's own bookkeeping.
    for copied in [*replica_dir.glob(".s.PGSQL.*"), replica_dir / ".handle_pids.json"]:
        copied.unlink(missing_ok=True)
    shutil.rmtree(replica_dir / "log", ignore_errors=True)
    replica_start(data_dir, replica_dir)
    return replica_uri(replica_dir, embedded_db.DATABASE_NAME)


def replica_start(data_dir: Path, replica_dir: Path) -> None:
    """Start a replica made by ``replica_create`` (waits until it answers reads)."""
    embedded_db._pg("pg_ctl", ["-w", "-t", "120", "-D", str(replica_dir), "-l", str(replica_dir / "replica.log"),
                               "start"], major=_major(data_dir))


def replica_stop(data_dir: Path, replica_dir: Path) -> None:
    """Stop the replica (fast shutdown); nothing happens when it is not running."""
    if not (replica_dir / "postmaster.pid").exists():
        return
    try:
        embedded_db._pg("pg_ctl", ["-w", "-m", "fast", "-D", str(replica_dir), "stop"], major=_major(data_dir))
    except subprocess.CalledProcessError:  # already stopping or gone
        pass


def replica_remove(data_dir: Path, replica_dir: Path) -> None:
    """Stop the replica and delete its directory."""
    replica_stop(data_dir, replica_dir)
    shutil.rmtree(replica_dir, ignore_errors=True)


def replica_uri(replica_dir: Path, database: str) -> str:
    """The URI of ``database`` on the replica in ``replica_dir``, as the primary's login role."""
    return f"postgresql://postgres:@/{database}?host={replica_dir.resolve()}"
