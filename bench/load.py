"""Load: a mixed workload (80 % search, 15 % upload, 5 % details) against running web processes.

    .venv/bin/python bench/load.py [--n 100000] [--seconds 60] [--levels 1,2,4,8,16,32]
                                   [--topology multi|single] [--keep-db bench_load] [--replica] [--json]
    .venv/bin/python bench/load.py --url http://hub:8000 --token ult_... [--url ... --token ...]

By default it starts its own hub on a throw-away database of the configured (embedded)
PostgreSQL, holding N memories (``bench/search.py``'s corpus: real texts embedded, noisy
variations, HNSW indexes built), reached over ``DATABASE_URL`` as an external server would be.
``--topology multi`` (the default) is the deployment a team runs: 2 web processes (gunicorn,
2 workers x 4 threads each, each on its own port and with its own data directory, so nothing
is shared but the database) and 2 pipeline workers (``manage.py qcluster``), the load spread
over both ports round-robin; ``single`` is one gunicorn (2 workers x 4 threads) as ``make run``.
``--replica`` adds a streaming replica of the embedded server (``manage.py embedded_replica``)
that the web processes read searches, context blocks, lists and stats from
(``DATABASE_REPLICA_URL``); the report counts the transactions it served.

At each concurrency level (requests in flight), for ``--seconds``: requests/s, p50/p95/p99 per
operation, every non-2xx counted by status, and the CPU each group of processes used (web
workers, PostgreSQL, pipeline workers, this client, everything else on the machine), read from
the kernel's per-process counters. Against its own hub it also checks that no write was lost:
the memories stored grow by the uploads answered 201. (Hits are not checked against the answers:
a reader's use counts once a day, and searches write theirs a few seconds later, off the request.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    ROOT,
    bench_database,
    django_setup,
    print_table,
    progress,
    sts_sentences,
    write_results,
)

MIX = (("search", 0.80), ("upload", 0.15), ("details", 0.05))
PATHS = {"search": "/api/memories/search", "upload": "/api/memories/upload", "details": "/api/memories/details"}
# What a coding agent stores: a failure, its cause and the fix, with the tools it names.
TOOLS = ["pytest", "docker compose", "pip install", "npm ci", "cargo build", "gunicorn", "alembic upgrade",
         "terraform apply", "kubectl rollout", "git rebase", "mypy", "webpack", "celery worker", "psql"]
FAILURES = ["fails with a timeout", "exits with code 137", "hangs at start-up", "raises ImportError",
            "reports a permission denied error", "cannot resolve the host name", "runs out of memory",
            "prints SSL: CERTIFICATE_VERIFY_FAILED", "fails only in CI", "loses the environment variables"]
CAUSES = ["a stale lock file", "the container's memory limit", "a pinned version that drifted",
          "the proxy settings", "a missing migration", "the wrong Python interpreter", "a cached build layer",
          "file descriptors running out", "a race between two jobs", "clock skew on the runner"]
FIXES = ["deleting the cache directory and retrying", "raising the limit to 2 GiB", "pinning the dependency",
         "setting NO_PROXY for the internal hosts", "running the migration before the tests",
         "activating the project's virtualenv first", "building with --no-cache", "raising ulimit -n to 65536",
         "serialising the two jobs with a lock", "enabling NTP on the runner"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] * 1000 if ordered else float("nan")


class Texts:
    """Queries from the corpus's own real texts (and short phrasings of them); uploads mostly
    new — unseen STS sentences and generated tool failures — and one in ten a duplicate, either
    of an upload of this run or of a stored text."""

    def __init__(self, corpus: list[str], fresh: list[str], seed: int = 16) -> None:
        self.rng = random.Random(seed)
        self.corpus, self.fresh, self.uploaded = corpus, fresh, []

    def query(self) -> dict:
        text = self.rng.choice(self.corpus)
        if self.rng.random() < 0.3:  # agents often search with a few words, not a sentence
            words = text.split()
            start = self.rng.randrange(max(1, len(words) - 4))
            text = " ".join(words[start : start + 5]) or text
        body: dict = {"query": text}
        roll = self.rng.random()
        if roll < 0.1:
            body["tags"] = [f"team-{self.rng.randrange(20)}"]
        elif roll < 0.2:
            body["memory_type"] = self.rng.choice(["error", "pattern", "correction"])
        return body

    def upload(self) -> dict:
        roll = self.rng.random()
        if roll < 0.05 and self.uploaded:
            return dict(self.rng.choice(self.uploaded))
        if roll < 0.10:
            return {"content": self.rng.choice(self.corpus)}
        if roll < 0.55 and self.fresh:
            body = {"content": self.fresh.pop(), "tags": [f"team-{self.rng.randrange(20)}"]}
        else:
            r = self.rng
            body = {"content": f"{r.choice(TOOLS)} {r.choice(FAILURES)} because of {r.choice(CAUSES)} "
                               f"(seen on build {r.randrange(10**6)})",
                    "context": f"while {r.choice(['deploying', 'running the test suite', 'upgrading'])}",
                    "resolution": f"fixed by {r.choice(FIXES)}", "tags": [r.choice(TOOLS).split()[0]]}
        self.uploaded.append(body)
        return body


@dataclass
class Level:
    concurrency: int
    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    created: int = 0
    cpu: dict[str, float] = field(default_factory=dict)
    check: dict[str, int] = field(default_factory=dict)  # stored minus answered (0: no lost write)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())


async def _one(client: httpx.AsyncClient, base: str, token: str, op: str, body: dict, level: Level,
               ids: list[str]) -> None:
    started = time.perf_counter()
    try:
        response = await client.post(base + PATHS[op], json=body, headers={"Authorization": f"Bearer {token}"})
        status = str(response.status_code)
    except httpx.HTTPError as exc:
        response, status = None, type(exc).__name__
    level.latencies[op].append(time.perf_counter() - started)
    level.statuses[(op, status)] += 1
    if response is None or not 200 <= response.status_code < 300:
        level.errors[status] += 1
        if len(level.error_samples) < 5:
            level.error_samples.append(f"{op} {body!r:.200} -> {status} {response.text[:300] if response else ''}")
        return
    data = response.json()
    if op == "search":
        ids.extend(hit["id"] for hit in data["results"][:3])
        del ids[:-2000]
    elif op == "upload":
        level.created += response.status_code == 201


async def run_level(bases: list[str], tokens: list[str], texts: Texts, concurrency: int, seconds: float,
                    ids: list[str], *, keepalive: bool = True) -> Level:
    """``concurrency`` loops, each sending one request at a time until ``seconds`` have passed;
    requests go to the web processes round-robin and to the tokens in turn."""
    level = Level(concurrency)
    turn = iter(range(10**12))
    ops, weights = zip(*MIX, strict=True)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency if keepalive else 0)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        deadline = time.perf_counter() + seconds

        async def loop() -> None:
            while time.perf_counter() < deadline:
                i = next(turn)
                op = texts.rng.choices(ops, weights)[0]
                if op == "details" and not ids:
                    op = "search"
                body = (texts.query() if op == "search" else texts.upload() if op == "upload"
                        else {"ids": texts.rng.sample(ids, min(len(ids), texts.rng.randint(1, 5)))})
                await _one(client, bases[i % len(bases)], tokens[i % len(tokens)], op, body, level, ids)

        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        level.seconds = time.perf_counter() - started
    return level


class CpuSampler:
    """CPU seconds used by named groups of processes (each a root pid and its descendants)
    while it runs, and by the whole machine; sampled every second so short-lived children
    count too."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self.first: dict[int, float] = {}
        self.last: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for name, roots in self.groups.items():
            for root in roots:
                with contextlib.suppress(psutil.Error):
                    parent = psutil.Process(root)
                    # The client started the servers: its own process only, not its children.
                    for proc in [parent, *([] if name == "client" else parent.children(recursive=True))]:
                        with contextlib.suppress(psutil.Error):
                            times = proc.cpu_times()
                            used = times.user + times.system
                            new = proc.create_time() > self.started
                            self.first.setdefault(proc.pid, 0.0 if new else used)
                            self.last[proc.pid] = (name, used)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._sample()

    def __enter__(self) -> CpuSampler:
        self.started, self.wall = time.time(), time.perf_counter()
        self.machine = psutil.cpu_times()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        wall = time.perf_counter() - self.wall
        now = psutil.cpu_times()
        busy = lambda t: t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)  # noqa: E731
        self.cores: dict[str, float] = defaultdict(float)
        for pid, (name, used) in self.last.items():
            self.cores[name] += (used - self.first[pid]) / wall
        self.cores["machine"] = (busy(now) - busy(self.machine)) / wall
        self.cores["others"] = max(0.0, self.cores["machine"] - sum(v for k, v in self.cores.items() if k != "machine"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 600  # a new host fits its redaction models once (its own data directory)
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/health", timeout=30).close()
            return
        except (urllib.error.URLError, OSError):  # refused, 503 while warming, no worker yet (timeout)
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"{base} did not come up; its log:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.5)


@contextlib.contextmanager
def topology(kind: str, database_url: str, rate: str, workdir: Path,
             replica_url: str = "") -> Iterator[tuple[list[str], dict[str, list[int]]]]:
    """Start the web and pipeline processes; yield their base URLs and pids by group. Every
    process gets its own data directory (another host's disk) and the same secret key; with
    ``replica_url``, the web processes read searches, context, lists and stats from it."""
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
           "ULTRON_API_RATE": rate, "ULTRON_LOG_LEVEL": "warning", "ULTRON_Q_WORKERS": "1",
           "DATABASE_REPLICA_URL": replica_url}
    webs, pipelines = (2, 2) if kind == "multi" else (1, 0)
    started: list[tuple[subprocess.Popen, Path]] = []
    bases, groups = [], {"web": [], "pipeline": []}

    def spawn(name: str, argv: list[str]) -> subprocess.Popen:
        (workdir / name).mkdir(parents=True, exist_ok=True)
        log = workdir / f"{name}.log"
        process = subprocess.Popen(argv, cwd=ROOT, env={**env, "ULTRON_DATA_DIR": str(workdir / name)},
                                   stdout=log.open("w"), stderr=subprocess.STDOUT)
        started.append((process, log))
        return process

    try:
        for i in range(webs):
            port = free_port()
            process = spawn(f"web{i + 1}", [sys.executable, "-m", "gunicorn", "ultron_site.wsgi:application",
                                            "--config", "python:ultron_site.gunicorn_conf", "--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4",
                                            "--timeout", "120"])
            bases.append(f"http://127.0.0.1:{port}")
            groups["web"].append(process.pid)
        for i in range(pipelines):
            groups["pipeline"].append(spawn(f"qcluster{i + 1}", [sys.executable, "manage.py", "qcluster"]).pid)
        for base, (process, log) in zip(bases, started, strict=False):
            wait_healthy(base, process, log)
        yield bases, groups
    finally:
        for process, _ in started:
            process.terminate()
        for process, log in started:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
            problems = [line for line in log.read_text(errors="replace").splitlines()
                        if "Traceback" in line or " ERROR " in line or "Error:" in line]
            if problems:
                kept = ROOT / "var" / f"load-{log.name}"
                kept.parent.mkdir(exist_ok=True)
                kept.write_text(log.read_text(errors="replace"))
                print(f"{log.name}: {len(problems)} error lines, e.g. {problems[0][:300]} (whole log: {kept})",
                      file=sys.stderr)


@contextlib.contextmanager
def replica(wanted: bool) -> Iterator[tuple[Path | None, str]]:
    """With ``wanted``: a streaming replica of the embedded server (which holds the bench
    database), as ``manage.py embedded_replica`` makes it; yields its directory and the bench
    database's URI on it. Otherwise (None, "")."""
    if not wanted:
        yield None, ""
        return
    from django.db import connection

    from ultron_site import embedded_replica, startup

    where = Path(tempfile.mkdtemp(prefix="ultron-replica-"))
    embedded_replica.replica_create(startup.data_dir(), where)
    try:
        yield where, embedded_replica.replica_uri(where, connection.settings_dict["NAME"])
    finally:
        embedded_replica.replica_remove(startup.data_dir(), where)


def replica_reads(replica_dir: Path) -> int:
    """Transactions the replica has run in the bench database (reads: it takes no writes)."""
    import psycopg
    from django.db import connection

    from ultron_site import embedded_replica

    name = connection.settings_dict["NAME"]
    with psycopg.connect(embedded_replica.replica_uri(replica_dir, name), autocommit=True) as conn:
        return int(conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                                [name]).fetchone()[0])


def replica_health(base: str) -> list:
    import json

    try:
        with urllib.request.urlopen(f"{base}/api/health", timeout=10) as answer:
            return json.loads(answer.read()).get("replicas", [])
    except urllib.error.HTTPError as exc:  # 503 carries the same body
        return json.loads(exc.read()).get("replicas", [])


def hub_totals() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        return int(cursor.fetchone()[0])


def postmaster_pid(pgdata: Path | None = None) -> list[int]:
    """The server process of ``pgdata`` (default: the embedded PostgreSQL; its backends are its
    children)."""
    from ultron_site import embedded_db, startup

    pid_file = (pgdata or embedded_db.pgdata_path(startup.data_dir())) / "postmaster.pid"
    return [int(pid_file.read_text().split()[0])] if pid_file.exists() else []


def prepare_hub(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """Inside the bench database: the corpus (loaded unless a kept database has it), agents and
    their tokens. Returns (tokens, corpus texts, fresh texts for uploads)."""
    import numpy as np
    from django.db import connection

    from agents.services import agent_create, token_issue
    from bench.search import corpus_texts, load, noisy_vectors
    from memories.models import Memory
    from memories.providers.embeddings import get_embedder
    from memories.services import embedding_space_ensure

    texts = corpus_texts(args.base)
    fresh = sts_sentences(args.base + 20_000)[args.base :]
    embedding_space_ensure()
    if Memory.objects.count() < args.n:
        progress(f"embedding {len(texts):,} texts, loading {args.n:,} memories")
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {Memory._meta.db_table} CASCADE")
        rng = np.random.default_rng(11)
        picks = rng.integers(0, len(texts), size=args.n)
        base = get_embedder().embed(texts)
        loaded, built, _ = load(noisy_vectors(base, picks, seed=12), [texts[i] for i in picks])
        progress(f"loaded in {loaded:.0f} s, HNSW indexes built in {built:.0f} s")
    tokens = []
    for i in range(args.tokens):
        agent = agent_create(name=f"load-{os.getpid()}-{i}")
        tokens.append(token_issue(agent=agent).token)
    return tokens, texts, fresh


def report(levels: list[Level], args: argparse.Namespace, where: str) -> dict:
    rows, figures = [], {"n": args.n, "topology": where, "seconds": args.seconds, "levels": []}
    for level in levels:
        rate = level.requests / level.seconds
        parts = [f"{rate:6.1f} req/s"]
        entry = {"concurrency": level.concurrency, "rps": round(rate, 1), "errors": dict(level.errors)}
        for op, _ in MIX:
            values = level.latencies.get(op, [])
            p = [percentile(values, q) for q in (0.5, 0.95, 0.99)]
            parts.append(f"{op} {len(values)}: {p[0]:.0f}/{p[1]:.0f}/{p[2]:.0f} ms")
            entry[op] = {"count": len(values), "p50_ms": round(p[0], 1), "p95_ms": round(p[1], 1),
                         "p99_ms": round(p[2], 1)}
        parts.append(f"errors {sum(level.errors.values())}" + (f" {dict(level.errors)}" if level.errors else ""))
        if level.cpu:
            parts.append("CPU cores " + " ".join(f"{k} {v:.2f}" for k, v in level.cpu.items()))
            entry["cpu_cores"] = {k: round(v, 2) for k, v in level.cpu.items()}
        if level.check:
            entry.update(level.check)
            parts.append(f"lost writes: memories {level.check['stored_minus_201']}")
        rows.append((f"{level.concurrency} in flight", "  ".join(parts)))
        figures["levels"].append(entry)
    ok = [e for e in figures["levels"] if not e["errors"] and e["search"]["p95_ms"] < 100]
    best = max(ok, key=lambda e: e["rps"], default=None)
    figures["goal_met_at"] = best and {"concurrency": best["concurrency"], "rps": best["rps"]}
    peak = max(figures["levels"], key=lambda e: e["rps"])
    figures["peak"] = {"concurrency": peak["concurrency"], "rps": peak["rps"]}
    rows.append(("highest rate with 0 errors and search p95 < 100 ms",
                 f"{best['rps']} req/s at {best['concurrency']} in flight" if best else "none"))
    rows.append(("peak rate", f"{peak['rps']} req/s at {peak['concurrency']} in flight"))
    if "cpu_cores" in peak:
        cpu = peak["cpu_cores"]
        limit = max(("web", "postgres"), key=lambda k: cpu.get(k, 0.0))
        figures["limit"] = limit
        rows.append(("at the peak", f"web {cpu.get('web', 0):.2f} cores, postgres {cpu.get('postgres', 0):.2f}, "
                                    f"machine {cpu['machine']:.2f} of {os.cpu_count()} busy: {limit} is the limit"))
    print_table(f"Load at {args.n:,} memories ({where}, {args.seconds:.0f} s a level)", rows)
    for level in levels:
        for sample in level.error_samples:
            print(f"  e.g. ({level.concurrency} in flight) {sample}")
    return figures


def warm_up(bases: list[str], tokens: list[str], texts: Texts, limit: float, ids: list[str]) -> None:
    """Untimed rounds until every web worker has loaded its models (embedding, redaction,
    classifier: tens of seconds each on a busy machine), i.e. until a round's slowest request
    is quick. Each request on a new connection, so the kernel hands them to every worker."""
    deadline = time.perf_counter() + limit
    while True:
        level = asyncio.run(run_level(bases, tokens, texts, 8, 10, ids, keepalive=False))
        slowest = max(max(v) for v in level.latencies.values())
        progress(f"warm-up round: {level.requests} requests, slowest {slowest:.1f} s")
        if slowest < 3 or time.perf_counter() > deadline:
            return


def measure(bases: list[str], tokens: list[str], texts: Texts, args: argparse.Namespace,
            groups: dict[str, list[int]], own: bool) -> list[Level]:
    ids: list[str] = []
    warm_up(bases, tokens, texts, args.warmup, ids)
    levels = []
    for concurrency in args.levels:
        before = hub_totals() if own else None
        progress(f"{concurrency} in flight for {args.seconds:.0f} s")
        with CpuSampler(groups) as sampler:
            level = asyncio.run(run_level(bases, tokens, texts, concurrency, args.seconds, ids))
        level.cpu = dict(sampler.cores)
        if before is not None:
            time.sleep(1)  # an answer is sent after its commit; nothing is still in flight now
            level.check = {"stored_minus_201": hub_totals() - before - level.created}
        levels.append(level)
    return levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories in the database (own hub)")
    parser.add_argument("--base", type=int, default=6000, help="real texts the corpus is made from")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each level")
    parser.add_argument("--warmup", type=float, default=300.0, help="at most this long warming up")
    parser.add_argument("--levels", default="1,2,4,8,16,32", help="requests in flight, one level each")
    parser.add_argument("--topology", choices=["multi", "single"], default="multi")
    parser.add_argument("--tokens", type=int, default=8, help="agents (each with a token) the load is spread over")
    parser.add_argument("--rate", default="6000/min", help="ULTRON_API_RATE of the started hub (0: off)")
    parser.add_argument("--keep-db", metavar="NAME", help="reuse (or create and keep) this bench_* database")
    parser.add_argument("--url", action="append", help="an already running hub (repeat for several web processes)")
    parser.add_argument("--token", action="append", help="with --url: an agent's token (repeat to spread the load)")
    parser.add_argument("--replica", action="store_true", help=(
        "start a streaming replica of the embedded server and have the web processes read searches from it"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if args.url:
        if not args.token:
            raise SystemExit("--url needs --token")
        corpus, fresh = sts_sentences(args.base), sts_sentences(args.base + 20_000)[args.base :]
        levels = measure([u.rstrip("/") for u in args.url], args.token, Texts(corpus, fresh), args, {}, own=False)
        print_table("note", [("target", ", ".join(args.url))])
        figures = report(levels, args, "external hub")
        if args.json:
            import json

            print(json.dumps(figures))
        return
    django_setup()
    from django.conf import settings
    from django.db import connection

    with bench_database(args.keep_db):
        tokens, corpus, fresh = prepare_hub(args)
        parts = urlsplit(settings.DATABASE_URL)
        database_url = urlunsplit(parts._replace(path="/" + quote(connection.settings_dict["NAME"])))
        with tempfile.TemporaryDirectory(prefix="ultron-load-") as workdir, replica(args.replica) as (replica_dir, url), \
                topology(args.topology, database_url, args.rate, Path(workdir), url) as (bases, groups):
            groups = {"web": groups["web"], "postgres": postmaster_pid(), "pipeline": groups["pipeline"],
                      "client": [os.getpid()]}
            if replica_dir:
                groups["replica"] = postmaster_pid(replica_dir)
                before = replica_reads(replica_dir)
            levels = measure(bases, tokens, Texts(corpus, fresh), args, groups, own=True)
            served = replica_reads(replica_dir) - before if replica_dir else 0
            health = [replica_health(base) for base in bases] if replica_dir else []
        connection.close()
        where = f"{args.topology}: {len(bases)} web process(es), rate {args.rate}" + (", a read replica" if url else "")
        figures = report(levels, args, where)
        if replica_dir:
            searches = sum(len(level.latencies.get("search", [])) for level in levels)
            figures["replica"] = {"transactions": served, "searches": searches, "health": health}
            print_table("read replica", [
                ("transactions on the replica during the levels", f"{served:,} (searches answered: {searches:,})"),
                *((f"health of {base}", str(state)) for base, state in zip(bases, health, strict=True))])
    write_results(f"load-{args.n}", figures, as_json=args.json)


if __name__ == "__main__":
    main()
