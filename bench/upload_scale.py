"""Upload throughput as a team's deployment sees it: several clients, two spaces, two web processes.

    .venv/bin/python bench/upload_scale.py [--clients 1,4,8] [--seconds 40] [--json]

Starts the multi-host shape of ``bench/load.py`` (two gunicorn processes on their own ports and
data directories, two pipeline workers) on a throw-away database, makes two spaces with two
agents each, and for each client count sends uploads only: client *i* writes to space *i mod 2*
through web process *i mod 2*, one request at a time, each a new memory (an unseen STS sentence
or a generated tool failure; one in twenty repeats an earlier upload of its space). Per level:
uploads/s, p50/p95 latency, and the **share of an upload's time spent waiting for a lock** —
sampled every 20 ms from ``pg_stat_activity``: the backends waiting on an advisory lock divided
by the uploads in flight. The single-text embedding rate of the model on this machine is printed
beside, as the physical limit an upload is measured against.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    bench_database,
    django_setup,
    print_table,
    progress,
    sts_sentences,
    write_results,
)
from bench.load import Texts, topology  # noqa: E402


class LockSampler:
    """How many of the database's backends wait on an advisory lock, sampled every 20 ms."""

    def __init__(self, database_url: str, database: str) -> None:
        self.url, self.database = database_url, database
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(0.02):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock' "
                    "AND wait_event = 'advisory'", [self.database]).fetchone()
                self.samples.append(int(row[0]))

    def __enter__(self) -> LockSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_level(bases: list[str], tokens: list[list[str]], texts: list[Texts], clients: int, seconds: float,
              database_url: str, database: str) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(i: int) -> None:
        space = i % 2
        base, token = bases[i % len(bases)], tokens[space][(i // 2) % len(tokens[space])]
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {token}"}) as http:
            while time.perf_counter() < deadline:
                with lock:
                    body = texts[space].upload()
                started = time.perf_counter()
                response = http.post(f"{base}/api/memories/upload", json=body)
                with lock:
                    if response.status_code in (200, 201):
                        latencies.append(time.perf_counter() - started)
                    elif len(errors) < 5:
                        errors.append(f"{response.status_code} {response.text[:200]}")

    started = time.perf_counter()
    with LockSampler(database_url, database) as sampler:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    wall = time.perf_counter() - started
    waiting = statistics.fmean(sampler.samples) if sampler.samples else 0.0
    ordered = sorted(latencies)
    return {"clients": clients, "uploads": len(latencies), "per_second": round(len(latencies) / wall, 1),
            "p50_ms": round(1000 * ordered[len(ordered) // 2], 1) if ordered else None,
            "p95_ms": round(1000 * ordered[int(len(ordered) * 0.95)], 1) if ordered else None,
            "lock_wait_share": round(waiting / clients, 3), "errors": errors}


def embedding_rate(count: int = 200) -> float:
    from memories.providers.embeddings import get_embedder

    embedder = get_embedder()
    texts = sts_sentences(count)
    embedder.embed(texts[:5])
    started = time.perf_counter()
    for text in texts:
        embedder.embed([text])
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="1,4,8")
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from django.conf import settings
    from django.db import connection

    from agents.services import agent_create, space_create, token_issue
    from memories.services import embedding_space_ensure

    rate = embedding_rate()
    progress(f"embedding one text at a time: {rate:.0f} texts/s")
    with bench_database():
        embedding_space_ensure()
        spaces = [space_create(slug=f"bench-team-{i}") for i in range(2)]
        tokens = [[token_issue(agent=agent_create(name=f"uploader-{s.slug}-{j}", spaces=[(s, "writer")])).token
                   for j in range(2)] for s in spaces]
        sentences = sts_sentences(30_000)
        halves = [sentences[0::2], sentences[1::2]]
        texts = [Texts(corpus=halves[i][:500], fresh=halves[i][500:], seed=20 + i) for i in range(2)]
        database = connection.settings_dict["NAME"]
        database_url = urlunsplit(urlsplit(settings.DATABASE_URL)._replace(path="/" + quote(database)))
        levels = []
        with tempfile.TemporaryDirectory(prefix="ultron-upload-") as workdir, \
                topology("multi", database_url, "0", Path(workdir)) as (bases, _groups):
            progress(f"warming up for {args.warmup:.0f} s")
            run_level(bases, tokens, texts, 4, args.warmup, database_url, database)
            for clients in (int(c) for c in args.clients.split(",") if c.strip()):
                progress(f"{clients} client(s) for {args.seconds:.0f} s")
                levels.append(run_level(bases, tokens, texts, clients, args.seconds, database_url, database))
        connection.close()
    rows = [("embedding, one text at a time", f"{rate:.0f} texts/s")]
    for level in levels:
        rows.append((f"{level['clients']} client(s)",
                     f"{level['per_second']} uploads/s (ratio {level['per_second'] / rate:.2f} of the embedding), "
                     f"p50 {level['p50_ms']} ms, p95 {level['p95_ms']} ms, lock wait {100 * level['lock_wait_share']:.1f} %"
                     + (f", errors {level['errors']}" if level["errors"] else "")))
    print_table(f"uploads over two spaces and two web processes ({os.cpu_count()} cores)", rows)
    write_results("upload-scale", {"embedding_per_second": round(rate, 1), "levels": levels}, as_json=args.json)


if __name__ == "__main__":
    main()
