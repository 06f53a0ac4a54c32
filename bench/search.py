"""Search speed and index recall at scale, against exact search and a Python scan.

    .venv/bin/python bench/search.py [--n 100000] [--queries 200] [--spaces 1] [--keep-db NAME] [--api-only] [--json]

Corpus: real sentences (STS Benchmark and LoCoMo turns) embedded with the hub's model, then
noisy variations of them up to N memories, spread over types, tiers and tags. Loaded in bulk,
then the HNSW indexes are built (their build time and size are reported). Measures the search
service (SQL ranking over HNSW candidates) and the HTTP API in-process (Django test client:
auth, validation, redaction, query embedding, hit recording), with and without filters; the
index's recall@10 against exact search (index scans off); and the anchor's approach — every
stored vector into Python, cosine in a loop — on a few queries, as a ratio.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    bench_database,
    bench_texts,
    django_setup,
    eval_path,
    print_table,
    progress,
    write_results,
)

TYPES = ["error", "pattern", "correction", "preference", "security", "life"]
TIERS = ["hot", "warm", "cold"]


def percentiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] * 1000  # noqa: E731
    return pick(0.5), pick(0.95), pick(0.99)


def corpus_texts(limit: int) -> list[str]:
    texts = bench_texts(limit // 2)
    path = eval_path("locomo", "locomo10.json")
    if path is not None:
        for sample in json.loads(path.read_text()):
            for key, session in sample["conversation"].items():
                if key.startswith("session_") and isinstance(session, list):
                    texts.extend(turn["text"] for turn in session if turn.get("text"))
    return list(dict.fromkeys(texts))[:limit]


def noisy_vectors(base: np.ndarray, picks: np.ndarray, seed: int, chunk: int = 50_000):
    """Unit vectors near the picked base vectors, generated a chunk at a time (float32): a
    million 384-d float64 rows at once would take 3 GiB per copy."""
    rng = np.random.default_rng(seed)
    scale = np.float32(0.35 / np.sqrt(base.shape[1]))
    for start in range(0, len(picks), chunk):
        part = base[picks[start : start + chunk]].astype(np.float32)
        part += rng.standard_normal(size=part.shape, dtype=np.float32) * scale
        yield part / np.linalg.norm(part, axis=1, keepdims=True)


def bench_spaces(count: int) -> list[int]:
    """The spaces the corpus is spread over: the shared space alone, or ``count`` spaces
    ``bench-0``… (a hub of several teams)."""
    from agents.selectors import space_or_shared
    from agents.services import space_create

    if count <= 1:
        return [space_or_shared(None)]
    return [space_create(slug=f"bench-{i}").pk for i in range(count)]


def load(chunks, texts: list[str], *, analyze: bool = True, space_ids: list[int] | None = None,
         ) -> tuple[float, float, int]:
    """Bulk-load the corpus (row i in ``space_ids[i % len]``), build the vector indexes; ANALYZE
    unless ``analyze`` is false (a hub right after a bulk load, before autovacuum has passed)."""
    from django.db import connection

    from memories.models import Memory
    from memories.selectors import lexeme_counts_compact

    indexes = [i for i in Memory._meta.indexes if "embedding" in i.fields]
    with connection.cursor() as cursor:
        for index in indexes:
            cursor.execute(f'DROP INDEX IF EXISTS "{index.name}"')
    started = time.perf_counter()
    batch = []
    vectors = (vector for part in chunks for vector in part)
    spaces = space_ids or bench_spaces(1)
    for i, vector in enumerate(vectors):
        batch.append(Memory(
            space_id=spaces[i % len(spaces)], content=texts[i % len(texts)], memory_type=TYPES[i % len(TYPES)], tier=TIERS[(i // 7) % 3],
            tags=[f"team-{i % 20}"], embedding=vector.tolist(), content_hash=f"h{i}", hit_count=1 + (i % 13),
        ))
        if len(batch) == 5000:
            Memory.objects.bulk_create(batch)
            batch = []
    if batch:
        Memory.objects.bulk_create(batch)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '4GB'")  # the 1M graph fits: no slow spill
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        with connection.schema_editor() as editor:
            for index in indexes:
                editor.add_index(Memory, index)
        lexeme_counts_compact()  # the pipeline's keyword_counts step, run once after the load
        if analyze:
            cursor.execute("ANALYZE memories_memory")
        cursor.execute("SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = "
                       "'memories_memory'::regclass AND indexrelid::regclass::text LIKE 'memory_emb_%%'")
        size = int(cursor.fetchone()[0] or 0)
    return loaded, time.perf_counter() - started, size


def hnsw_index_in(plan: str) -> str:
    """The HNSW index a plan scans (``memory_emb_…``), or ``""`` when it scans none: a small
    table is read whole and sorted, which says nothing about the index."""
    found = re.search(r"\b(memory_emb_\w+)", plan)
    return found.group(1) if found else ""


def explain(sql: str, params, *settings_sql: str) -> str:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for statement in settings_sql:
            cursor.execute(statement)
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def service_plan(**search) -> str:
    """The plan of the search service's main query, as it runs (captured, then explained)."""
    from django.conf import settings
    from django.db import connection

    from memories.selectors import memory_search
    from memories.selectors.search import ITERATIVE_SCAN

    captured: list = []

    def capture(execute, sql, params, many, context):
        if "semantic AS (" in sql:
            captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        memory_search(**search)
    sql, params = captured[0]
    return explain(sql, params, f"SET LOCAL hnsw.ef_search = {max(settings.ULTRON_SEARCH_EF, 40)}", ITERATIVE_SCAN)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--base", type=int, default=6000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--spaces", type=int, default=1,
                        help="spread the corpus over this many spaces and time searches reading 1, 3 and all of them")
    parser.add_argument("--api-only", action="store_true",
                        help="time the API rows only (no service rows, recall or Python scan): a re-run of a kept database")
    parser.add_argument("--keep-db", metavar="NAME",
                        help="reuse (or create and keep) this bench_* database; the corpus is loaded only once")
    args = parser.parse_args()
    django_setup()
    from django.conf import settings
    from django.db import connection, transaction
    from django.urls import reverse
    from rest_framework.test import APIClient

    from agents.models import Agent
    from agents.services import agent_create, token_issue
    from memories.models import Memory
    from memories.providers.embeddings import get_embedder
    from memories.selectors import memory_search
    from memories.selectors.search import ITERATIVE_SCAN
    from memories.services import embedding_space_ensure
    from memories.services.recall import query_cache_forget

    rng = np.random.default_rng(11)
    texts = corpus_texts(args.base)
    embedder = get_embedder()
    base = embedder.embed(texts)
    picks = rng.integers(0, len(base), size=args.n)
    query_texts = [texts[i] for i in rng.integers(0, len(texts), size=args.queries)]
    query_vectors = embedder.embed(query_texts)
    rows: list[tuple[str, str]] = [("corpus", f"{args.n:,} memories from {len(texts):,} real texts")]
    figures: dict = {"n": args.n}
    with bench_database(args.keep_db):
        embedding_space_ensure()
        progress("corpus embedded")
        space_ids = bench_spaces(args.spaces)
        fresh = False
        if Memory.objects.count() != args.n:
            with connection.cursor() as cursor:  # never Django's delete(): it loads every row
                cursor.execute(f"TRUNCATE {Memory._meta.db_table} CASCADE")
            loaded, built, size = load(noisy_vectors(base, picks, seed=12), [texts[i] for i in picks], analyze=False,
                                       space_ids=space_ids)
            fresh = True
            rows.append(("load / HNSW build / index size",
                         f"{loaded:.0f}s / {built:.0f}s / {size / 2**20:.0f} MiB (the one vector index)"))
            figures.update(load_s=loaded, index_build_s=built, index_mib=size / 2**20)
        cases = {
            "no filter": {},
            "memory_type": {"memory_type": "error"},
            "tier": {"tier": "hot"},
            "tags": {"tags": ["team-3"]},
            "keyword mode": {"mode": "keyword"},
            "hybrid mode": {"mode": "hybrid"},
            "hybrid mode, tags": {"mode": "hybrid", "tags": ["team-3"]},
        }
        # Warm-up, untimed: the first pass after a load or a switch of database reads the index
        # pages into the buffer pool; the figures are for a serving hub.
        for vector, text in zip(query_vectors, query_texts, strict=True):
            memory_search(vector=vector.tolist(), text=text, limit=10, mode="hybrid")

        def service_times(filters: dict) -> tuple[float, float, float]:
            times = []
            for vector, text in zip(query_vectors, query_texts, strict=True):
                started = time.perf_counter()
                memory_search(vector=vector.tolist(), text=text, limit=10, **filters)
                times.append(time.perf_counter() - started)
            return percentiles(times)

        if fresh:
            # A hub right after a bulk load, before ANALYZE: search must not depend on it.
            progress("service, hybrid mode, before ANALYZE")
            p50, p95, p99 = service_times({"mode": "hybrid"})
            rows.append(("service, hybrid mode, right after the load (no ANALYZE yet)",
                         f"p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms"))
            figures["service_hybrid_fresh_p50_ms"], figures["service_hybrid_fresh_p95_ms"] = p50, p95
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE memories_memory")
        if not args.api_only:  # the service's rows, the plans and recall
            for label, filters in cases.items():
                progress(f"service, {label}")
                p50, p95, p99 = service_times(filters)
                rows.append((f"service, {label}", f"p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms"))
                if label == "no filter":
                    figures["service_p50_ms"], figures["service_p95_ms"] = p50, p95
                if label == "hybrid mode":
                    figures["service_hybrid_p50_ms"], figures["service_hybrid_p95_ms"] = p50, p95
            # The plans the figures are about: the service's query on its HNSW index (a table too
            # small for it is read whole, and the timings would be of that), and recall measured on
            # the index against a real exact scan (sequential scans off for the one, index scans
            # for the other, so neither silently turns into the other).
            plans = {
                "service_plan_index": hnsw_index_in(service_plan(vector=query_vectors[0].tolist(), limit=10)),
                "service_type_plan_index": hnsw_index_in(
                    service_plan(vector=query_vectors[0].tolist(), limit=10, memory_type="error")),
            }
            # As the service sets them: ef_search, and the iterative scan that applies filters during the scan.
            approximate = [f"SET LOCAL hnsw.ef_search = {max(settings.ULTRON_SEARCH_EF, 40)}", ITERATIVE_SCAN,
                           "SET LOCAL enable_seqscan = off"]
            exact_scan = ["SET LOCAL enable_indexscan = off"]
            # recall@10 of the index against exact search: no filter, by type (a sixth of the rows), by tag (a twentieth)
            recall_keys = {"no filter": "recall", "memory_type": "recall_type", "tags": "recall_tags"}
            for label, where in (("no filter", "status = 'active'"), ("memory_type", "status = 'active' AND memory_type = 'error'"),
                                 ("tags", "status = 'active' AND tags @> ARRAY['team-3']::varchar(200)[]")):
                hits = 0
                sample = query_vectors[: min(100, len(query_vectors))]
                sql = f"SELECT id FROM memories_memory WHERE {where} ORDER BY embedding <=> %s::vector LIMIT 10"
                for vector in sample:
                    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
                    with transaction.atomic(), connection.cursor() as cursor:
                        for statement in approximate:  # ef_search as the service sets it
                            cursor.execute(statement)
                        cursor.execute(sql, [literal])
                        approx = {r[0] for r in cursor.fetchall()}
                    with transaction.atomic(), connection.cursor() as cursor:
                        for statement in exact_scan:
                            cursor.execute(statement)
                        cursor.execute(sql, [literal])
                        exact = {r[0] for r in cursor.fetchall()}
                    hits += len(approx & exact)
                recall = hits / (10 * len(sample))
                literal = "[" + ",".join(f"{x:.7g}" for x in sample[0]) + "]"
                key = recall_keys[label]
                plans[f"{key}_plan_index"] = hnsw_index_in(explain(sql, [literal], *approximate))
                plans[f"{key}_exact_plan_index"] = hnsw_index_in(explain(sql, [literal], *exact_scan))
                rows.append((f"recall@10 vs exact, {label}", f"{recall:.3f} (index {plans[f'{key}_plan_index'] or 'none'})"))
                figures[key.replace("recall", "recall_at_10")] = recall
            rows.append(("service query's index, no filter / memory_type",
                         f"{plans['service_plan_index'] or 'none (whole table read)'} / "
                         f"{plans['service_type_plan_index'] or 'none (whole table read)'}"))
            figures.update(plans)
        progress("API")
        from agents.models import Role, Space

        def reader_of(name: str, ids: list[int]) -> APIClient:
            """An API client whose agent reads ``ids`` (and nothing else)."""
            reader = Agent.objects.filter(name=name).first() or agent_create(
                name=name, spaces=[(space, Role.READER) for space in Space.objects.filter(pk__in=ids)])
            api = APIClient()
            api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(agent=reader).token}")
            return api

        client = reader_of("bench", space_ids)
        # Warm-up, untimed, as for the service: the recall's exact scans above have just read
        # the whole table, and the figures are for a serving hub, whose pages are cached.
        for text in query_texts:
            client.post(reverse("memory-search"), {"query": text}, format="json")
        # The API's default mode is hybrid: its figures are the headline.
        for label, extra in (("API, hybrid (default)", {}), ("API, hybrid, tags", {"tags": ["team-3"]}),
                             ("API, semantic", {"mode": "semantic"}),
                             ("API, semantic, memory_type", {"mode": "semantic", "memory_type": "error"}),
                             ("API, semantic, tags", {"mode": "semantic", "tags": ["team-3"]})):
            times = []
            for text in query_texts:
                query_cache_forget()  # every query new to the hub: redacted and embedded in the request
                started = time.perf_counter()
                response = client.post(reverse("memory-search"), {"query": text, **extra}, format="json")
                times.append(time.perf_counter() - started)
                assert response.status_code == 200, response.content
            p50, p95, p99 = percentiles(times)
            rows.append((label + " (incl. query embedding)", f"p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms"))
            if label == "API, hybrid (default)":
                figures["api_p50_ms"], figures["api_p95_ms"] = p50, p95
            if label == "API, semantic":
                figures["api_semantic_p50_ms"], figures["api_semantic_p95_ms"] = p50, p95
        # A hub of several teams: the same new queries from agents reading 1 and 3 of the spaces
        # (the rows above read all of them), each search narrowed by the database's scope too.
        for part in (1, 3):
            if len(space_ids) <= part:
                continue
            narrow = reader_of(f"bench-{part}-of-{len(space_ids)}", space_ids[:part])
            times = []
            for text in query_texts:
                query_cache_forget()
                started = time.perf_counter()
                response = narrow.post(reverse("memory-search"), {"query": text}, format="json")
                times.append(time.perf_counter() - started)
                assert response.status_code == 200, response.content
            p50, p95, p99 = percentiles(times)
            rows.append((f"API, hybrid, reading {part} of {len(space_ids)} spaces (incl. query embedding)",
                         f"p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms"))
            figures[f"api_{part}_of_{len(space_ids)}_p50_ms"], figures[f"api_{part}_of_{len(space_ids)}_p95_ms"] = p50, p95
        # The same queries again, as agents repeating a question: redaction and embedding cached.
        # The rows above cleared the cache before every request, so it is filled first (untimed).
        for text in query_texts:
            client.post(reverse("memory-search"), {"query": text}, format="json")
        times = []
        for text in query_texts:
            started = time.perf_counter()
            response = client.post(reverse("memory-search"), {"query": text}, format="json")
            times.append(time.perf_counter() - started)
            assert response.status_code == 200, response.content
        p50, p95, p99 = percentiles(times)
        rows.append(("API, hybrid, a repeated query (cached embedding)", f"p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms"))
        figures["api_repeat_p50_ms"], figures["api_repeat_p95_ms"] = p50, p95
        # the anchor's approach: every vector into Python, cosine in a loop
        if not args.api_only:  # the anchor's approach
            progress("Python scan")
            brute = []
            for vector in query_vectors[: 3 if args.n <= 200_000 else 1]:  # 1.5 min a query at 1M
                started = time.perf_counter()
                # streamed from a server-side cursor: a list of a million vectors does not fit beside the rest
                stored = Memory.objects.filter(status="active").values_list("id", "embedding").iterator(chunk_size=5000)
                query = [float(x) for x in vector]
                scores = []
                for memory_id, embedding in stored:
                    values = [float(x) for x in embedding]
                    scores.append((sum(a * b for a, b in zip(query, values, strict=True)), memory_id))
                scores.sort(reverse=True)
                brute.append(time.perf_counter() - started)
            brute_ms = statistics.median(brute) * 1000
            rows.append(("Python scan over every vector", f"median {brute_ms:,.0f} ms per query"))
            figures["bruteforce_ms"] = brute_ms
            figures["bruteforce_ratio"] = brute_ms / figures["service_p50_ms"]
            rows.append(("Python scan / service p50", f"{figures['bruteforce_ratio']:,.0f}x"))
    print_table(f"Search at {args.n:,} memories (2 cores)", rows)
    write_results(f"search-{args.n}", figures, as_json=args.json)


if __name__ == "__main__":
    main()
