"""A fresh hub's start, as a user meets it: `make run` on an empty data directory, then the
first upload and the first search the moment it prints its URL.

Runs ``python -m ultron_site.launcher run`` (what ``make run`` runs) with its own data directory
under ``$ULTRON_DATA_DIR/bench/coldstart`` (emptied first: a new hub, its embedded PostgreSQL
made from scratch) on a free port, creates an agent with ``manage.py create_agent``, and times:

- start → the URL printed (the launcher prints it once ``/api/health`` says ``ok``);
- the first upload, the second, the first search — each over HTTP, as an agent sends them.

Usage: ``.venv/bin/python bench/coldstart.py [--workers 2] [--keep]`` (``--keep`` leaves the data
directory, to look at). Prints the figures, and JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="2")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import httpx

    base = Path(os.environ.get("ULTRON_DATA_DIR") or ROOT / "var")
    data_dir = (base if base.is_absolute() else ROOT / base) / "bench" / "coldstart"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env.update(ULTRON_DATA_DIR=str(data_dir), PORT=str(port), ULTRON_HOST="127.0.0.1",
               ULTRON_WEB_WORKERS=args.workers, ULTRON_LOG_LEVEL="warning")
    figures: dict[str, float] = {}
    started = time.perf_counter()
    hub = subprocess.Popen([sys.executable, "-m", "ultron_site.launcher", "run"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert hub.stdout is not None
        for line in hub.stdout:
            if "serving on" in line:
                break
        else:
            raise SystemExit("the hub stopped before it printed its URL")
        figures["start_to_url_s"] = time.perf_counter() - started
        token = subprocess.run([sys.executable, "manage.py", "create_agent", "coldstart"], cwd=ROOT, env=env,
                               capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        url = f"http://127.0.0.1:{port}/api"
        headers = {"Authorization": f"Bearer {token}"}
        timed = [
            ("first_upload_s", "memories/upload", {"content": "pip install fails behind the corporate proxy",
                                                   "resolution": "set HTTPS_PROXY before pip install"}),
            ("second_upload_s", "memories/upload", {"content": "npm ci times out on the CI runner",
                                                    "resolution": "raise fetch-timeout in .npmrc"}),
            ("first_search_s", "memories/search", {"query": "pip behind a proxy"}),
        ]
        for key, path, body in timed:
            began = time.perf_counter()
            response = httpx.post(f"{url}/{path}", json=body, headers=headers, timeout=300)
            figures[key] = time.perf_counter() - began
            if response.status_code not in (200, 201):
                raise SystemExit(f"{path} answered {response.status_code}: {response.text[:300]}")
    finally:
        os.killpg(hub.pid, signal.SIGINT)  # Ctrl-C, as a user stops it
        try:
            hub.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(hub.pid, signal.SIGKILL)
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"fresh hub, {args.workers} web workers (2 cores, 24 GiB when measured for bench/README.md)")
    print(f"  make run → URL printed     {figures['start_to_url_s']:6.1f} s")
    print(f"  first upload               {figures['first_upload_s'] * 1000:6.0f} ms")
    print(f"  second upload              {figures['second_upload_s'] * 1000:6.0f} ms")
    print(f"  first search               {figures['first_search_s'] * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
