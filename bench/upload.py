"""Upload throughput through the whole funnel vs. the embedding model alone.

    .venv/bin/python bench/upload.py [--n 300] [--clients 1,4] [--batches 50,100] [--json]

Texts: distinct STS Benchmark sentences. The funnel is ``memory_upload`` (validation,
redaction, classification, embedding, dedup, insert); the physical limit on this machine is
the embedding model, timed on the same texts one at a time and in batches. Batch uploads
(``memories_upload``, what ``POST /api/memories/upload`` with ``{"memories": [...]}`` runs) are
compared with the embedding model alone on the same texts in batches of the same size, each
batch embedded alone just before it is uploaded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    Timer,
    bench_database,
    bench_texts,
    django_setup,
    print_table,
    write_results,
)


def run_clients(texts: list[str], count: int, agent) -> tuple[float, list[float]]:
    """Upload ``texts`` from ``count`` threads; return wall time and per-upload latencies."""
    from django.db import connection

    from memories.services import memory_upload

    latencies: list[float] = []
    lock = threading.Lock()

    def work(part: list[str]) -> None:
        from core.spaces import maintenance

        try:
            with maintenance():  # a new thread's connection starts with no spaces, as the bench's does not
                for text in part:
                    started = time.perf_counter()
                    memory_upload(content=text, agent=agent)
                    with lock:
                        latencies.append(time.perf_counter() - started)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(texts[i::count],)) for i in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies


def run_batches(texts: list[str], size: int, agent, embedder) -> tuple[float, float]:
    """Seconds to embed ``texts`` in batches of ``size``, and to upload them in such batches.
    Each batch is embedded alone, then uploaded, so both see the same machine (the load of
    other processes changes from second to second)."""
    from memories.services import memories_upload

    embedding = uploading = 0.0
    for start in range(0, len(texts), size):
        batch = texts[start : start + size]
        with Timer() as embedded:
            embedder.embed(batch)
        with Timer() as uploaded:
            results = memories_upload(items=[{"content": text} for text in batch], agent=agent)
        assert all(not isinstance(r, Exception) for r in results), results
        embedding += embedded.seconds
        uploading += uploaded.seconds
    return embedding, uploading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--clients", default="1,4")
    parser.add_argument("--batches", default="50,100", help="batch sizes for the batch upload (0: none)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from agents.services import agent_create
    from memories.models import Memory
    from memories.providers.embeddings import get_embedder

    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    sizes = [int(b) for b in args.batches.split(",") if b.strip() and int(b) > 0]
    texts = bench_texts(args.n * (1 + len(clients) + len(sizes)))
    embedder = get_embedder()
    embedder.embed(["warm-up"])
    sample = texts[: args.n]
    with Timer() as single:
        for text in sample:
            embedder.embed([text])
    with Timer() as batched:
        embedder.embed(sample)
    rows = [
        ("texts", str(len(sample))),
        ("embedding only, one at a time", f"{len(sample) / single.seconds:.1f} texts/s"),
        ("embedding only, batched", f"{len(sample) / batched.seconds:.1f} texts/s"),
    ]
    results = {"n": len(sample), "embed_single_per_s": len(sample) / single.seconds,
               "embed_batch_per_s": len(sample) / batched.seconds}
    with bench_database():
        agent = agent_create(name="bench")
        # Warm-up, untimed, as for the embedding above: the first upload loads the redaction
        # models and the classifier, a one-time cost that is not the funnel's per-upload one.
        from memories.services import memory_upload

        memory_upload(content="Warm-up: the funnel loads its models on first use.", agent=agent)
        offset = 0
        for count in clients:
            chunk = texts[offset : offset + args.n]
            offset += args.n
            elapsed, latencies = run_clients(chunk, count, agent)
            rate = len(chunk) / elapsed
            p50 = statistics.median(latencies) * 1000
            p95 = sorted(latencies)[int(0.95 * (len(latencies) - 1))] * 1000
            rows.append((f"funnel, {count} client(s)", f"{rate:.1f} uploads/s  p50 {p50:.1f} ms  p95 {p95:.1f} ms  "
                         f"ratio to single embedding {rate / results['embed_single_per_s']:.2f}"))
            results[f"funnel_{count}_per_s"] = rate
            results[f"funnel_{count}_ratio"] = rate / results["embed_single_per_s"]
        for size in sizes:
            chunk = texts[offset : offset + args.n]
            offset += args.n
            embed_seconds, upload_seconds = run_batches(chunk, size, agent, embedder)
            embed_rate, rate = len(chunk) / embed_seconds, len(chunk) / upload_seconds
            rows.append((f"batch upload, batches of {size}",
                         f"{rate:.1f} uploads/s  embedding alone {embed_rate:.1f} texts/s  "
                         f"ratio to batched embedding {rate / embed_rate:.2f}"))
            results[f"batch_{size}_per_s"] = rate
            results[f"batch_{size}_embed_per_s"] = embed_rate
            results[f"batch_{size}_ratio"] = rate / embed_rate
        rows.append(("memories stored", str(Memory.objects.count())))
    print_table("Upload throughput (offline LLM, local embeddings)", rows)
    write_results("upload", results, as_json=args.json)


if __name__ == "__main__":
    main()
