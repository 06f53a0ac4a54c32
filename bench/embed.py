"""The local embedding model alone: first start, one short text, a batch, concurrent callers, memory.

    .venv/bin/python bench/embed.py [--queries 200] [--texts 256] [--clients 4] [--code DIR] [--cores N] [--json]

Each start is a fresh process (no database needed), so load times and memory are a real
worker's. The first one gets an empty data directory: on the ONNX path that start builds the
model file (timed on its own as "ONNX build"); the second finds the file and only loads it.
The second then measures:

- one short text at a time (distinct queries, after ten untimed): p50 / p95 latency, and the
  process's CPU time per text (which a loaded machine moves less than the wall clock);
- a batch: ``--texts`` memories of typical length (the project's labelled memories, median 110
  characters) in one ``embed`` call, batched by ``ULTRON_EMBEDDING_BATCH_SIZE``: texts/s and CPU
  time per text, the best of three;
- ``--clients`` threads each embedding short texts one at a time, as concurrent searches do;
- resident memory after the first embedding and at the end (psutil).

``--code DIR`` runs another checkout's code (its ``memories/providers/embeddings.py``) with this
script, for a before/after on the same machine minutes apart. ``--cores 1`` pins the processes to
one core, so that each library runs one thread: on a machine that others load, threads waiting
for each other (torch's spin) cost more than the model does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _texts(kind: str, limit: int) -> list[str]:
    data = ROOT / "tests" / "data"
    if kind == "memories":
        rows = [json.loads(line) for line in (data / "memory_types.jsonl").read_text(encoding="utf-8").splitlines()]
        texts = [row["content"] for row in rows]
    else:  # short texts, as queries are
        texts = [line.strip() for line in (data / "ordinary_lines.txt").read_text(encoding="utf-8").splitlines()
                 if 10 <= len(line.strip()) <= 80]
    texts = list(dict.fromkeys(texts))
    return (texts * (limit // len(texts) + 1))[:limit]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[int(share * (len(ordered) - 1))]


def child(args: argparse.Namespace) -> dict:
    """One process start: load, embed once, and (``--measure``) the rest."""
    if args.cores:  # before any library sizes its thread pool from the cores it may use
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: args.cores]))
    import psutil

    sys.path.insert(0, str(Path(args.code).resolve()))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
    os.environ.setdefault("DATABASE_URL", "postgresql://bench@localhost/bench")  # never connected to
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench")
    os.environ.setdefault("ULTRON_LOG_LEVEL", "warning")
    import django

    django.setup()
    from django.conf import settings

    from memories.providers.embeddings import get_embedder

    process = psutil.Process()
    out: dict = {"rss_before_mib": process.memory_info().rss / 2**20, "batch_size": settings.ULTRON_EMBEDDING_BATCH_SIZE}
    try:
        from memories.providers import minilm_onnx
    except ImportError:
        minilm_onnx = None
    if minilm_onnx is not None:  # time the build, if this start does one
        build = minilm_onnx.build

        def timed(source):
            started = time.perf_counter()
            model = build(source)
            out["build_graph_s"] = time.perf_counter() - started
            return model

        minilm_onnx.build = timed
        ensure = minilm_onnx.ensure

        def timed_ensure(*a, **k):
            started = time.perf_counter()
            result = ensure(*a, **k)
            out["ensure_s"] = time.perf_counter() - started
            return result

        minilm_onnx.ensure = timed_ensure
    embedder = get_embedder()
    started = time.perf_counter()
    embedder.embed(["warm-up"])
    out["first_embed_s"] = time.perf_counter() - started
    out["rss_after_first_mib"] = process.memory_info().rss / 2**20
    if not args.measure:
        return out

    queries = _texts("queries", args.queries + 10)
    for text in queries[:10]:
        embedder.embed([text])
    latencies = []
    cpu = time.process_time()
    for text in queries[10:]:
        started = time.perf_counter()
        embedder.embed([text])
        latencies.append(time.perf_counter() - started)
    out["single_cpu_ms"] = (time.process_time() - cpu) / len(latencies) * 1000
    out["single_p50_ms"] = statistics.median(latencies) * 1000
    out["single_p95_ms"] = _percentile(latencies, 0.95) * 1000

    memories = _texts("memories", args.texts)
    rates, cpus = [], []
    for _ in range(3):
        started, cpu = time.perf_counter(), time.process_time()
        embedder.embed(memories)
        rates.append(len(memories) / (time.perf_counter() - started))
        cpus.append((time.process_time() - cpu) / len(memories) * 1000)
    out["batch_per_s"] = max(rates)
    out["batch_cpu_ms"] = min(cpus)
    out["rss_after_batch_mib"] = process.memory_info().rss / 2**20

    if args.clients > 1:
        latencies = []
        lock = threading.Lock()
        per_client = max(1, args.queries // args.clients)

        def work(offset: int) -> None:
            for text in queries[10 + offset :: args.clients][:per_client]:
                started = time.perf_counter()
                embedder.embed([text])
                with lock:
                    latencies.append(time.perf_counter() - started)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(args.clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        out["clients"] = args.clients
        out["clients_per_s"] = len(latencies) / elapsed
        out["clients_p50_ms"] = statistics.median(latencies) * 1000
        out["clients_p95_ms"] = _percentile(latencies, 0.95) * 1000
    out["rss_end_mib"] = process.memory_info().rss / 2**20
    out["loaded_torch"] = "torch" in sys.modules
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose code is measured")
    parser.add_argument("--cores", type=int, default=0, help="run on this many cores only (0: all)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return

    def start(data_dir: str, measure: bool) -> dict:
        command = [sys.executable, __file__, "--child", "--code", args.code, "--queries", str(args.queries),
                   "--texts", str(args.texts), "--clients", str(args.clients), "--cores", str(args.cores)]
        command += ["--measure"] if measure else []
        result = subprocess.run(command, env={**os.environ, "ULTRON_DATA_DIR": data_dir}, capture_output=True,
                                text=True, check=False)
        if result.returncode:
            sys.exit(result.stderr[-3000:])
        return json.loads(result.stdout.strip().splitlines()[-1])

    with tempfile.TemporaryDirectory(prefix="bench-embed-") as data_dir:
        first = start(data_dir, measure=False)
        later = start(data_dir, measure=True)
    results = {"code": args.code, "cpus": os.cpu_count(), "first_start": first, "later_start": later}
    if args.json:
        print(json.dumps(results))
        return
    rows = [
        ("first start: load + first embedding", f"{first['first_embed_s']:.2f} s"
         + (f" (of which building the ONNX model {first['ensure_s']:.2f} s: graph {first['build_graph_s']:.2f} s)"
            if "build_graph_s" in first else "")),
        ("later start: load + first embedding", f"{later['first_embed_s']:.2f} s"),
        ("RSS after the first embedding", f"{later['rss_after_first_mib']:.0f} MiB (before loading "
         f"{later['rss_before_mib']:.0f} MiB; first start {first['rss_after_first_mib']:.0f} MiB)"),
        ("one short text", f"p50 {later['single_p50_ms']:.1f} ms  p95 {later['single_p95_ms']:.1f} ms  "
         f"CPU {later['single_cpu_ms']:.1f} ms  ({args.queries} texts)"),
        (f"batch of {args.texts} memories", f"{later['batch_per_s']:.0f} texts/s  CPU {later['batch_cpu_ms']:.1f} ms "
         f"a text (batch size {later['batch_size']})"),
    ]
    if "clients" in later:
        rows.append((f"{later['clients']} threads, one short text each call",
                     f"{later['clients_per_s']:.0f} texts/s  p50 {later['clients_p50_ms']:.1f} ms  "
                     f"p95 {later['clients_p95_ms']:.1f} ms"))
    rows.append(("RSS at the end", f"{later['rss_end_mib']:.0f} MiB (torch loaded: {later['loaded_torch']})"))
    width = max(len(key) for key, _ in rows)
    cores = args.cores or len(os.sched_getaffinity(0))
    title = f"Local embedding model ({args.code}, {cores} of {os.cpu_count()} CPUs)"
    print(f"\n{title}\n" + "-" * len(title))
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
