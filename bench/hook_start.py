"""The session-start hook as an agent runs it: ``ultron hook AGENT session-start``, a new process
each time, against a running hub; p50 / p95 of its wall time and the share of it spent in the
hub's ``POST /api/context``.

    .venv/bin/python bench/hook_start.py [--url URL] [--token TOKEN] [-n 30] [--agent claude-code] [--json]

The URL and token come from --url / --token, else ULTRON_URL / ULTRON_TOKEN, else the stored
``ultron login``. Three series of N runs each: the hook without a login (start-up and output
only, no request), ``POST /api/context`` alone from this process (a new connection each time,
as the hook opens one, with the hook's budget of tokens), and the hook itself. The hook's own cap
is 2 s from its start; a run that printed the stub instead of the hub's block is counted apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import print_table  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def hook_runs(argv: list[str], env: dict[str, str], n: int, stdin: bytes) -> tuple[list[float], list[str]]:
    seconds, outputs = [], []
    for _ in range(n):
        started = time.perf_counter()
        done = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=30)
        seconds.append(time.perf_counter() - started)
        outputs.append(done.stdout.decode("utf-8", errors="replace"))
        if done.returncode != 0:
            raise SystemExit(f"the hook exited {done.returncode}: {done.stderr.decode()[:300]}")
    return seconds, outputs


def context_calls(url: str, token: str, budget: int, n: int) -> tuple[list[float], int]:
    import httpx

    seconds, size = [], 0
    for _ in range(n):
        started = time.perf_counter()
        with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http:
            answer = http.post(f"{url}/api/context", json={"query": "", "token_budget": budget})
        seconds.append(time.perf_counter() - started)
        answer.raise_for_status()
        size = len(answer.json().get("context", ""))
    return seconds, size


def summary(values: list[float]) -> str:
    return (f"p50 {percentile(values, 0.5) * 1000:.0f} ms, p95 {percentile(values, 0.95) * 1000:.0f} ms, "
            f"max {max(values) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url")
    parser.add_argument("--token")
    parser.add_argument("-n", type=int, default=30, help="runs per series (default 30)")
    parser.add_argument("--agent", default="claude-code", choices=["claude-code", "codex", "cursor"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from ultron import config
    from ultron.hooks import STUB, budget
    from ultron.localstate import ultron_argv

    settings = config.resolve(args.url, args.token)
    if not settings.token:
        raise SystemExit("no token: pass --token, set ULTRON_TOKEN or run `ultron login`")
    argv = [*ultron_argv(), "hook", args.agent, "session-start"]
    stdin = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "bench",
                        "cwd": os.getcwd(), "transcript_path": None}).encode()
    with tempfile.TemporaryDirectory() as scratch:
        base = {k: v for k, v in os.environ.items() if not k.startswith("ULTRON_")}
        base["XDG_STATE_HOME"] = str(Path(scratch) / "state")  # the hook's log, not yours
        offline = {**base, "XDG_CONFIG_HOME": str(Path(scratch) / "no-login")}
        online = {**base, "ULTRON_URL": settings.url, "ULTRON_TOKEN": settings.token}
        hook_runs(argv, online, 2, stdin)  # the file cache and the hub's first answers warm
        start_only, _ = hook_runs(argv, offline, args.n, stdin)
        context, chars = context_calls(settings.url, settings.token, budget(), args.n)
        full, outputs = hook_runs(argv, online, args.n, stdin)
    stubs = sum(STUB in out for out in outputs)
    share = percentile(context, 0.5) / percentile(full, 0.5)
    figures = {
        "runs": args.n, "agent": args.agent, "url": settings.url, "cpus": os.cpu_count(),
        "hook_p50_s": percentile(full, 0.5), "hook_p95_s": percentile(full, 0.95), "hook_max_s": max(full),
        "start_only_p50_s": percentile(start_only, 0.5), "start_only_p95_s": percentile(start_only, 0.95),
        "context_p50_s": percentile(context, 0.5), "context_p95_s": percentile(context, 0.95),
        "context_share_of_hook_p50": share, "context_chars": chars, "stubs": stubs,
        "mean_s": statistics.fmean(full),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print_table(f"session-start hook, {args.n} runs each, {os.cpu_count()} CPUs, {settings.url}", [
        ("hook (whole process)", summary(full)),
        ("  start-up only (no login, no request)", summary(start_only)),
        ("  POST /api/context alone", summary(context) + f" ({chars} characters of context)"),
        ("context's share of the hook (p50)", f"{share:.0%}"),
        ("runs that printed the stub", f"{stubs} of {args.n} (the 2 s cap or a failing hub)"),
    ])


if __name__ == "__main__":
    main()
