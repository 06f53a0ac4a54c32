"""Peak memory (RSS) of the web process and of a pipeline worker, each with the models loaded.

    .venv/bin/python bench/memory.py [--requests 60] [--sessions N] [--json]

Web: gunicorn with one worker (4 threads) on a loopback port against a throw-away database,
driven over HTTP with uploads and searches (which load the embedding model and Presidio's spaCy
model); the worker's peak RSS (VmHWM) is read from /proc. Worker: a fresh process ingests the
real Claude Code sessions in ../shared/eval/transcripts/ and runs them through the pipeline
(``manage.py ingest --process``: segmentation with redaction, scoring, extraction through the
upload funnel, cluster assignment); its peak RSS comes from wait4(). A bare ``manage.py check``
is the baseline: Django alone.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    ROOT,
    bench_database,
    django_setup,
    eval_path,
    print_table,
    sts_sentences,
    write_results,
)


def _database_url() -> str:
    """The hub's database URL with the throw-away database's name in it."""
    from django.conf import settings
    from django.db import connection

    parts = urlsplit(settings.DATABASE_URL)
    return urlunsplit(parts._replace(path="/" + quote(connection.settings_dict["NAME"])))


def _child_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url, ULTRON_LOG_LEVEL="warning", DJANGO_SETTINGS_MODULE="ultron_site.settings")
    return env


def _run_measured(command: list[str], env: dict[str, str]) -> float:
    """Run a command to the end; its peak RSS in MiB."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024  # Linux reports KiB


def _peak_rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _call(url: str, token: str | None, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def measure_web(env: dict[str, str], token: str, texts: list[str]) -> dict[str, float]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "ultron_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--threads", "4", "--timeout", "120"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _call(f"{base}/api/health", None)
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("gunicorn did not come up") from None
                time.sleep(0.5)
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
        worker = int(children[0])
        idle = _peak_rss(worker)
        for text in texts:
            _call(f"{base}/api/memories/upload", token, {"content": text, "tags": ["bench"]})
            _call(f"{base}/api/memories/search", token, {"query": text, "limit": 10})
        return {"web_idle_mib": idle, "web_peak_mib": _peak_rss(worker), "web_master_mib": _peak_rss(server.pid)}
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--sessions", type=int, default=None, help="only the N smallest session files")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from agents.services import agent_create, token_issue

    texts = sts_sentences(args.requests)
    rows: list[tuple[str, str]] = []
    figures: dict = {}
    with bench_database():
        env = _child_env(_database_url())
        agent = agent_create(name="bench")
        token = token_issue(agent=agent).token
        figures["baseline_mib"] = _run_measured([sys.executable, "manage.py", "check"], env)
        rows.append(("`manage.py check` (Django alone)", f"{figures['baseline_mib']:.0f} MiB"))
        sessions = eval_path("transcripts")
        if sessions is not None:
            files = [str(p) for p in sorted(sessions.rglob("*.jsonl"), key=lambda p: p.stat().st_size)][: args.sessions]
            figures["worker_peak_mib"] = _run_measured(
                [sys.executable, "manage.py", "ingest", *files, "--agent", "bench", "--process"], env)
            rows.append((f"worker: ingest + pipeline over {len(files)} real sessions",
                         f"peak {figures['worker_peak_mib']:.0f} MiB"))
        else:
            rows.append(("worker", "skipped: ../shared/eval/transcripts not found"))
        figures.update(measure_web(env, token, texts))
        rows.append(("web worker (gunicorn, 4 threads), started", f"{figures['web_idle_mib']:.0f} MiB"))
        rows.append((f"web worker after {len(texts)} uploads + searches", f"peak {figures['web_peak_mib']:.0f} MiB"))
        rows.append(("gunicorn master", f"peak {figures['web_master_mib']:.0f} MiB"))
    print_table("Peak memory (RSS)", rows)
    write_results("memory", figures, as_json=args.json)


if __name__ == "__main__":
    main()
