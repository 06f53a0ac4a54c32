"""The spool: sessions waiting to be uploaded, and the detached uploader that sends them.

A capture hook (stop, session end, before compaction) must return at once, and an agent may
kill it as the session closes, so it only writes a small JSON record (one file per transcript,
written atomically) under ``$XDG_STATE_HOME/ultron/spool/queue`` and starts the uploader unless
one is running. The uploader (``ultron spool drain --background``, its own session, no terminal)
holds ``drain.lock`` (its pid, refreshed every few seconds; a lock whose process is gone or that
stopped being refreshed is stale), sends each queued transcript with ``Ultron().ingest`` (the
hub keys a session by its path, so a repeat or a longer copy of it replaces what it had), removes
the record on success, keeps it with a growing delay while the hub is down, and exits once the
queue is empty or nothing is due for a while. Each sent transcript leaves its size and time under
``sent/``, so an unchanged transcript is not queued again and a Stop (after every turn) queues a
transcript at most every few minutes; the session's end sends the rest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ultron import sessions
from ultron.localstate import display, ensure_state_dir, log, pid_alive, state_dir

STOP_INTERVAL = 300.0  # seconds between two uploads of a transcript on Stop
STALE_LOCK = 90.0  # a lock not refreshed for this long belongs to no live uploader
HEARTBEAT = 10.0
MAX_BACKOFF = 600.0


def spool_dir() -> Path:
    return state_dir() / "spool"


def queue_dir() -> Path:
    return spool_dir() / "queue"


def lock_path() -> Path:
    return spool_dir() / "drain.lock"


def linger() -> float:
    """How long the uploader waits for a retry that is not due yet before it exits."""
    try:
        return max(0.0, float(os.environ.get("ULTRON_SPOOL_LINGER", "120")))
    except ValueError:
        return 120.0


def key_of(path: Path) -> str:
    return hashlib.sha256(sessions.identity(path).encode("utf-8")).hexdigest()[:32]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, data: dict[str, Any]) -> None:
    ensure_state_dir()
    spool_dir().mkdir(exist_ok=True, mode=0o700)
    path.parent.mkdir(exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(temp, path)


def enqueue(*, agent: str, event: str, transcript: str, session_id: str | None = None,
            now: float | None = None) -> Path | None:
    """Queue ``transcript`` (the record's path), or None when there is nothing new to send."""
    now = time.time() if now is None else now
    path = Path(transcript).expanduser()
    try:
        stat = path.stat()
    except OSError as exc:
        log(f"spool: {agent} {event}: transcript not readable, nothing queued: {exc}")
        return None
    key = key_of(path)
    sent = _read(spool_dir() / "sent" / f"{key}.json")
    if sent and sent.get("size") == stat.st_size and sent.get("mtime_ns") == stat.st_mtime_ns:
        return None  # the hub has these very bytes
    if event == "stop" and sent and now - float(sent.get("sent_at", 0)) < STOP_INTERVAL:
        return None  # sent a moment ago; the session's end sends the rest
    target = queue_dir() / f"{key}.json"
    queued = _read(target) or {}
    _write(target, {"transcript_path": str(path.absolute()), "agent": agent, "event": event,
                    "session_id": session_id, "queued_at": now, "attempts": queued.get("attempts", 0),
                    "next_try": 0, "last_error": queued.get("last_error")})
    return target


def pending() -> list[tuple[str, dict[str, Any]]]:
    """The queued records (key, record), oldest first."""
    found = []
    try:
        names = sorted(os.listdir(queue_dir()))
    except FileNotFoundError:
        return []
    for name in names:
        if name.endswith((".json", ".sending")) and not name.startswith("."):
            record = _read(queue_dir() / name)
            if record is not None:
                found.append((name.rsplit(".", 1)[0], record))
    return sorted(found, key=lambda item: float(item[1].get("queued_at", 0)))


# --- the lock ------------------------------------------------------------------------------------


def lock_info() -> dict[str, Any] | None:
    """{"pid", "age" (seconds since its last refresh), "alive", "stale"}, None without a lock."""
    path = lock_path()
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return None
    data = _read(path) or {}
    pid = int(data.get("pid") or 0)
    alive = pid_alive(pid)
    return {"pid": pid, "age": age, "alive": alive, "stale": not alive or age > STALE_LOCK}


class Lock:
    """The uploader's lock: created exclusively, refreshed by a thread while held."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    @classmethod
    def acquire(cls) -> Lock | None:
        path = lock_path()
        ensure_state_dir()
        path.parent.mkdir(exist_ok=True, mode=0o700)
        for _ in range(2):
            try:
                handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                info = lock_info()
                if info is not None and not info["stale"]:
                    return None
                aside = path.with_name(f"drain.lock.stale-{os.getpid()}")
                try:  # moved aside, not deleted: two uploaders breaking it at once cannot both win
                    os.replace(path, aside)
                    aside.unlink()
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(handle, "w") as out:
                json.dump({"pid": os.getpid(), "started": time.time()}, out)
            lock = cls()
            lock._thread.start()
            return lock
        return None

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT):
            try:
                os.utime(lock_path())
            except OSError:
                return

    def release(self) -> None:
        self._stop.set()
        if (_read(lock_path()) or {}).get("pid") == os.getpid():
            lock_path().unlink(missing_ok=True)


def ensure_uploader() -> bool:
    """Start the uploader when records wait and none runs; whether one was started."""
    if not pending():
        return False
    info = lock_info()
    if info is not None and not info["stale"]:
        return False
    argv = [sys.executable, "-m", "ultron", "spool", "drain", "--background"]
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                               "stderr": subprocess.DEVNULL, "close_fds": True, "cwd": str(spool_dir())}
    if os.name == "nt":
        options["creationflags"] = 0x00000008 | 0x00000200  # DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP
    else:
        options["start_new_session"] = True  # outlives the agent closing the hook's process group
    subprocess.Popen(argv, **options)  # noqa: S603 - our own program, no shell
    return True


def stop_uploader() -> str:
    """Stop a running uploader and remove the lock (``ultron setup --uninstall``)."""
    info = lock_info()
    if info is None:
        return "no uploader running"
    said = "stale lock removed"
    if not info["stale"]:
        try:
            os.kill(info["pid"], signal.SIGTERM)
            said = f"uploader (pid {info['pid']}) stopped"
        except OSError:
            pass
        for _ in range(20):
            if not pid_alive(info["pid"]):
                break
            time.sleep(0.1)
    lock_path().unlink(missing_ok=True)
    return said


# --- the uploader --------------------------------------------------------------------------------


@dataclass
class DrainReport:
    uploaded: int = 0
    failed: int = 0
    dropped: int = 0
    busy: bool = False  # another uploader holds the lock


def backoff(attempts: int) -> float:
    return min(MAX_BACKOFF, 5.0 * 2 ** max(0, attempts - 1))


def _recover_claims() -> None:
    """Records an uploader claimed (``.sending``) and never finished: queued again."""
    for name in os.listdir(queue_dir()) if queue_dir().is_dir() else []:
        if name.endswith(".sending"):
            claim = queue_dir() / name
            queued = claim.with_suffix(".json")
            if queued.exists():
                claim.unlink(missing_ok=True)
            else:
                os.replace(claim, queued)


def _send(key: str, client: Any, report: DrainReport) -> None:
    from ultron.errors import (
        InvalidRequestError,
        NotFoundError,
        RequestTooLargeError,
        UltronError,
        UsageError,
    )

    queued, claim = queue_dir() / f"{key}.json", queue_dir() / f"{key}.sending"
    try:
        os.replace(queued, claim)  # ours now: a new event writes a fresh record beside it
    except FileNotFoundError:
        return
    record = _read(claim) or {}
    path = Path(str(record.get("transcript_path", "")))
    try:
        stat = path.stat()
        result = client.ingest([str(path)])
    except (UsageError, InvalidRequestError, RequestTooLargeError, NotFoundError, OSError) as exc:
        log(f"spool: upload failed for good, dropped {display(path)}: {exc}")
        claim.unlink(missing_ok=True)
        report.dropped += 1
        return
    except Exception as exc:  # noqa: BLE001 - the hub is down or failing (or a bug, logged): later
        if not isinstance(exc, UltronError):
            log(f"spool: unexpected error for {display(path)}:\n{traceback.format_exc()}")
        attempts = int(record.get("attempts", 0)) + 1
        record.update(attempts=attempts, next_try=time.time() + backoff(attempts), last_error=str(exc))
        newer = _read(queued)
        if newer is not None:  # queued again meanwhile: keep the newer record, with the count
            newer.update(attempts=attempts, last_error=str(exc))
            _write(queued, newer)
            claim.unlink(missing_ok=True)
        else:
            _write(claim, record)
            os.replace(claim, queued)
        log(f"spool: upload failed (attempt {attempts}, next in {backoff(attempts):.0f} s) "
            f"for {display(path)}: {exc}")
        report.failed += 1
        return
    statuses = ", ".join(f.status for f in result.files) or "nothing"
    _write(spool_dir() / "sent" / f"{key}.json", {"path": str(path), "size": stat.st_size,
                                                   "mtime_ns": stat.st_mtime_ns, "sent_at": time.time()})
    claim.unlink(missing_ok=True)
    log(f"spool: uploaded {display(path)} ({statuses}; job {', '.join(result.job_ids) or '-'})")
    report.uploaded += 1


def drain(*, force: bool = False, wait: float | None = None, client: Any = None) -> DrainReport:
    """Send what is queued. ``force``: every record once, due or not (``ultron spool drain``);
    otherwise records as they fall due, waiting up to ``wait`` seconds (default: ``linger()``)
    for one that is not due yet."""
    report = DrainReport()
    wait = linger() if wait is None else wait
    owned: list[Any] = []  # a client made here is closed here (its keep-alive connection with it)
    try:
        return _drain(report, force=force, wait=wait, client=client, owned=owned)
    finally:
        for made in owned:
            made.close()


def _drain(report: DrainReport, *, force: bool, wait: float, client: Any, owned: list[Any]) -> DrainReport:
    while True:
        lock = Lock.acquire()
        if lock is None:
            report.busy = True
            return report
        try:
            _recover_claims()
            deadline = time.monotonic() + wait
            tried: set[str] = set()
            while True:
                now = time.time()
                records = pending()
                due = [k for k, r in records if k not in tried and (force or float(r.get("next_try", 0)) <= now)]
                if due:
                    if client is None:
                        from ultron.client import Ultron

                        client = Ultron(retries=1)
                        owned.append(client)
                    for key in due:
                        _send(key, client, report)
                        if force:
                            tried.add(key)
                    continue
                waiting = [float(r.get("next_try", 0)) for k, r in records if k not in tried]
                if force or not waiting or time.monotonic() + (min(waiting) - now) > deadline:
                    break
                time.sleep(max(0.05, min(min(waiting) - now, 5.0)))
        finally:
            lock.release()
        # A record queued while the lock was being released found it held and started no one.
        if force or not any(float(r.get("next_try", 0)) <= time.time() for _, r in pending()):
            return report


# --- `ultron spool` -------------------------------------------------------------------------------


def status(*, stale_minutes: float = 30.0) -> dict[str, Any]:
    now = time.time()
    records = [{"key": k, "age": now - float(r.get("queued_at", now)), **r} for k, r in pending()]
    return {"dir": str(queue_dir()), "entries": records, "count": len(records),
            "oldest": max((r["age"] for r in records), default=0.0),
            "stuck": [r for r in records if r["age"] > stale_minutes * 60], "uploader": lock_info()}


def run_drain(args: argparse.Namespace) -> int:
    if args.background:
        try:
            drain()
        except Exception:  # noqa: BLE001 - a detached process has no one to tell but the log
            log(f"spool: uploader crashed:\n{traceback.format_exc()}")
        return 0
    report = drain(force=True)
    if report.busy:
        print("An uploader is running already (it holds the spool's lock); it sends what is queued.")
        return 0
    left = len(pending())
    print(f"uploaded {report.uploaded}, failed {report.failed} (kept for later), dropped {report.dropped}; "
          f"{left} waiting" + ("" if not report.dropped else f" (reasons in {display(state_dir() / 'hook.log')})"))
    return 0 if not report.failed else 5


def run_list(args: argparse.Namespace) -> int:
    info = status()
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    if not info["entries"]:
        print(f"The spool is empty ({display(info['dir'])}).")
    for r in info["entries"]:
        attempts = int(r.get("attempts", 0))
        print(f"{display(r.get('transcript_path', '?'))}  ({r.get('agent', '?')} {r.get('event', '?')}, queued "
              f"{r['age'] / 60:.0f} min ago, attempts {attempts})")
        if r.get("last_error"):
            print(f"    last error: {r['last_error']}")
    uploader = info["uploader"]
    if uploader and not uploader["stale"]:
        print(f"uploader running (pid {uploader['pid']})")
    return 0
