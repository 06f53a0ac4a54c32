"""How fast the admin site's busiest pages answer at scale.

    .venv/bin/python bench/pages.py [--n 100000] [--requests 30] [--keep-db bench_pages] [--json]

A corpus of N memories (real STS / LoCoMo texts embedded with the hub's model, then noisy
variations, loaded as ``bench/search.py`` does, with the HNSW indexes built and ANALYZE run),
plus clusters and ingest jobs; then, logged in as an admin through Django's test client (the
whole view, template and middleware stack, no network), each page is requested
``--requests`` times after one untimed warm-up: the dashboard, the memory list, the memory list
with a search (the hub's hybrid ranking) and a memory's page. Target: p95 < 300 ms each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import bench_database, django_setup, print_table, progress, write_results  # noqa: E402
from bench.search import corpus_texts, load, noisy_vectors, percentiles  # noqa: E402

TARGET_MS = 300.0
QUERIES = ["pip install fails behind a proxy", "weekend trip to the mountains", "database connection refused",
           "how do I keep tests deterministic", "she adopted a dog last month", "docker image too large"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--base", type=int, default=3000, help="real texts to embed")
    parser.add_argument("--keep-db", metavar="NAME")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from django.test import Client
    from django.urls import reverse

    from memories.models import Memory
    from memories.providers.embeddings import get_embedder
    from memories.services import embedding_space_ensure
    from ultron_site.people import person_create

    with bench_database(args.keep_db):
        embedding_space_ensure()
        if Memory.objects.count() < args.n:
            texts = corpus_texts(args.base)
            progress(f"embedding {len(texts)} texts")
            base = np.asarray(get_embedder().embed(texts), dtype=np.float32)
            picks = np.random.default_rng(7).integers(0, len(base), size=args.n)
            progress(f"loading {args.n} memories")
            load(noisy_vectors(base, picks, seed=11), [texts[i] for i in picks])
            _extras()
        client = Client()
        person = person_create(username=f"bench-admin-{time.time_ns()}", role="admin", password_once=False)
        assert client.login(username=person.username, password=person.password)
        memory_id = Memory.objects.order_by("pk").values_list("pk", flat=True)[args.n // 2]
        pages = {
            "dashboard": lambda i: reverse("admin:index"),
            "memory list": lambda i: reverse("admin:memories_memory_changelist"),
            "memory list, search": lambda i: reverse("admin:memories_memory_changelist") + "?q="
            + QUERIES[i % len(QUERIES)].replace(" ", "+"),
            "memory page": lambda i: reverse("admin:memories_memory_change", args=[memory_id]),
        }
        rows: list[tuple[str, str]] = [("memories", f"{Memory.objects.count():,}")]
        figures: dict = {"n": args.n, "pages": {}}
        for name, url in pages.items():
            assert client.get(url(0)).status_code == 200, name  # warm-up, untimed
            times = []
            for i in range(args.requests):
                started = time.perf_counter()
                response = client.get(url(i + 1))
                times.append(time.perf_counter() - started)
                assert response.status_code == 200, (name, response.status_code)
            p50, p95, p99 = percentiles(times)
            figures["pages"][name] = {"p50_ms": p50, "p95_ms": p95, "p99_ms": p99}
            verdict = "ok" if p95 < TARGET_MS else f"over the {TARGET_MS:.0f} ms target"
            rows.append((name, f"p50 {p50:.0f} ms  p95 {p95:.0f} ms  p99 {p99:.0f} ms  ({verdict})"))
    print_table(f"Admin pages at {args.n:,} memories ({args.requests} requests each)", rows)
    write_results("pages", figures, as_json=args.json)


def _extras() -> None:
    """Clusters, skills and ingest jobs for the dashboard to count (a few thousand)."""
    from tests.site.test_query_counts import _clusters, _skills

    skill = _skills(0, 1)[0]
    _clusters(0, 2000, skill=skill)


if __name__ == "__main__":
    main()
