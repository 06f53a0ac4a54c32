"""Where an upload's time goes, step by step, against the embedding model alone.

    .venv/bin/python bench/upload_steps.py [--n 300] [--json]

Uploads ``--n`` distinct texts (STS Benchmark sentences and generated tool failures with a
context and a fix, as agents write them) one at a time through ``memory_upload`` in this
process, on a throw-away database that already holds 2,000 memories, with each step of the
funnel wrapped in a timer: the input's cleaning and its redaction (the rule catalogue, each
detector family, the names model), the embedding, the poisoning screen, the type classifier, the
duplicate lookup and decision, the insert, the supersession check, the cluster placement, and
every SQL statement (counted and timed apart). Steps nest: a step's time includes its parts.
The single-text embedding rate on the same texts is the physical limit an upload is measured
against (issue: one client at 0.5x of it).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    bench_database,
    django_setup,
    print_table,
    progress,
    sts_sentences,
    write_results,
)
from bench.load import CAUSES, FAILURES, FIXES, TOOLS  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def timed(owner: object, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper adding its time to ``label``."""
    inner: Callable = getattr(owner, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - started
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def texts(n: int) -> list[dict]:
    rng = random.Random(5)
    sentences = sts_sentences(n * 2)[n:]
    out = []
    for i in range(n):
        if i % 2:
            out.append({"content": sentences[i]})
        else:
            out.append({"content": f"{rng.choice(TOOLS)} {rng.choice(FAILURES)} because of {rng.choice(CAUSES)} "
                                   f"(seen on build {rng.randrange(10**6)})",
                        "context": f"while {rng.choice(['deploying', 'running the test suite', 'upgrading'])}",
                        "resolution": f"fixed by {rng.choice(FIXES)}"})
    return out


def instrument() -> None:
    import clusters.services as cluster_services
    import memories.redaction as redaction
    import memories.services.upload as upload
    from memories.redaction import (
        detectors,
        entropy,
        keys,
        likeness,
        numbers,
        presidio_engine,
        prose,
        vendors,
    )

    timed(upload, "memory_input_clean", "1 clean the input (limits, redaction)")
    timed(redaction, "_pattern_findings", "1.1 redaction: rules and detectors")
    for module, label in ((keys, "keys"), (prose, "prose cues"), (detectors, "detect-secrets"),
                          (vendors, "vendor prefixes"), (entropy, "entropy"), (likeness, "likeness and context")):
        timed(module, "find", f"1.1.{label}")
    for name in ("phones", "cards", "ibans"):
        timed(numbers, name, "1.1.numbers")
    timed(presidio_engine, "analyze_many", "1.2 redaction: names (spaCy NER, Presidio)")
    timed(presidio_engine, "analyze_patterns", "1.2 redaction: names (spaCy NER, Presidio)")
    timed(redaction, "_people", "1.3 redaction: names kept or added")
    timed(redaction, "_resolve", "1.4 redaction: overlaps resolved")
    timed(upload, "write_gate", "2 the writer's gate (trust, hosts)")
    timed(upload, "embed_texts", "3 embedding")
    timed(upload, "screen_items", "4 poisoning screen")
    timed(upload, "classify_decide", "5 type classifier")
    timed(upload, "_upload_locks_take", "6 locks (duplicate, cluster)")
    timed(upload, "memory_duplicate_neighbours", "7 duplicate lookup (hash + HNSW)")
    timed(upload, "duplicate_decide", "8 duplicate decision")
    timed(upload, "_store_new", "9 insert")
    timed(upload, "changes_check", "10 supersession check (neighbours)")
    timed(cluster_services, "cluster_assign", "11 cluster placement")
    timed(upload, "_after_upload", "12 after the upload (queued work)")


def statements_timer():
    def wrapper(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            SPENT["SQL statements (all, inside the steps)"] += time.perf_counter() - started
            CALLS["SQL statements (all, inside the steps)"] += 1

    return wrapper


def explain(body: dict, embedder) -> None:
    """The duplicate lookup's plan, in the upload's own settings (its first statement's)."""
    from django.db import connection, transaction

    from agents.selectors import space_or_shared
    from memories.selectors.duplicates import _neighbours_sql
    from memories.services.upload import upload_locks
    from memories.text import content_hash, embedding_text
    from memories.vectors import vector_literal

    vector = embedder.embed([embedding_text(body["content"], body.get("context", ""), body.get("resolution", ""))])[0]
    space = space_or_shared(None)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(sql for _, sql in upload_locks()), {"space": space})
        for _ in range(2):  # the second run is the one shown: caches warm, as in a stream of uploads
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + _neighbours_sql(False), {
                "vector": vector_literal(vector), "space": space,
                "hash": content_hash(body["content"], body.get("context", ""), body.get("resolution", ""))})
            plan = [row[0] for row in cursor.fetchall()]
    print("\n".join(plan))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--explain", action="store_true", help="print the duplicate lookup's query plan")
    parser.add_argument("--keep-db", metavar="NAME", help=(
        "keep the database (a name starting with bench_) with its 2,000 memories for the next run: for "
        "studying a plan with --explain; a second run's uploads meet the first run's, so its times differ"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from django.db import connection

    from agents.services import agent_create
    from memories.providers.embeddings import get_embedder
    from memories.services import embedding_space_ensure, memory_upload
    from memories.text import embedding_text

    items = texts(args.n)
    from memories.models import Memory

    with bench_database(args.keep_db):
        embedding_space_ensure()
        agent = agent_create(name=f"bench-steps-{time.time_ns()}")
        if not Memory.objects.filter(content__endswith=" (earlier)").exists():
            progress("2,000 memories first")
            for body in texts(2000)[: 2000]:
                body = {**body, "content": body["content"] + " (earlier)"}
                memory_upload(agent=agent, **body)
        for body in items[:10]:  # warm: models loaded, statements prepared
            memory_upload(agent=agent, **{**body, "content": body["content"] + " (warm)"})
        embedder = get_embedder()
        started = time.perf_counter()
        for body in items:
            embedder.embed([embedding_text(body["content"], body.get("context", ""), body.get("resolution", ""))])
        embed_ms = 1000 * (time.perf_counter() - started) / len(items)
        instrument()
        progress(f"{len(items)} uploads, timed")
        with connection.execute_wrapper(statements_timer()):
            started = time.perf_counter()
            for body in items:
                memory_upload(agent=agent, **body)
            total_ms = 1000 * (time.perf_counter() - started) / len(items)
        if args.explain:
            explain(items[-1], embedder)
        connection.close()
    rows = [("embedding alone, one text at a time", f"{embed_ms:.2f} ms"),
            ("one upload, whole", f"{total_ms:.2f} ms (ratio {embed_ms / total_ms:.2f}: "
                                  f"{1000 / total_ms:.0f} uploads/s against {1000 / embed_ms:.0f} embeddings/s)")]
    steps = {}
    for label in sorted(SPENT, key=lambda k: [int(p) if p.isdigit() else 99 for p in k.split(" ")[0].split(".")]
                        if k[0].isdigit() else [99]):
        per = 1000 * SPENT[label] / len(items)
        steps[label] = {"ms": round(per, 2), "share": round(per / total_ms, 3), "calls": CALLS[label]}
        rows.append((label, f"{per:.2f} ms  {100 * per / total_ms:.1f} %  ({CALLS[label] / len(items):.1f} calls)"))
    print_table("one upload, step by step (ms per upload, share of the whole)", rows)
    write_results("upload-steps", {"n": len(items), "embed_ms": round(embed_ms, 2), "upload_ms": round(total_ms, 2),
                                   "steps": steps}, as_json=args.json)


if __name__ == "__main__":
    main()
