"""Tier rebalance and archival at scale: the set-based SQL against a Python loop.

    .venv/bin/python bench/rebalance.py [--n 1000000] [--loop-n 20000] [--json]

Rows are generated inside PostgreSQL (generate_series) with skewed hit counts and last-hit
times spread over 90 days, so some COLD memories are stale and get archived. The memory ANN
indexes are dropped in the throw-away database first: the rebalance does not use them and they
would make loading a million rows take hours. Times the hub's ``tiers_rebalance`` (one
window-function UPDATE + one archival UPDATE) run after run with nothing hit or new in between:
the first (most rows change tier), the next ones (each run's archival shifts the ranks of the
rest), up to the steady state, the first run that changes fewer than 1 % of the rows; and, on
``--loop-n`` rows, the anchor's approach: load every row into Python, sort, and save each
changed row.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import bench_database, django_setup, print_table, write_results  # noqa: E402


def _generate(n: int, *, vector_sql: str, drop_vector_indexes: bool, params: list) -> float:
    from django.db import connection

    from memories.models import Memory

    started = time.perf_counter()
    with connection.cursor() as cursor:
        if drop_vector_indexes:
            for index in Memory._meta.indexes:
                if "embedding" in index.fields or "search_vector" in index.fields:
                    cursor.execute(f'DROP INDEX IF EXISTS "{index.name}"')
        cursor.execute(
            f"""
            INSERT INTO {Memory._meta.db_table}
                (id, space_id, content, context, resolution, tags, memory_type, tier, status, hit_count, last_hit_at,
                 summary_l0, overview_l1, embedding, content_hash, merge_pending, source, provenance,
                 redaction_counts, created_at, updated_at, readers, verified_by, screen_flags)
            SELECT gen_random_uuid(), (SELECT id FROM agents_space WHERE slug = 'shared'), 'memory ' || g, '', '', '{{}}', 'pattern', 'warm', 'active',
                   1 + floor(power(random(), 3) * 500)::int,
                   now() - (random() * interval '90 days'), '', '', {vector_sql}, md5(g::text), false, 'api',
                   '{{}}', '{{}}', now() - interval '91 days', now(), 2, '', '[]'::jsonb
            FROM generate_series(1, %s) g
            """,
            [*params, n],
        )
        cursor.execute(f"ANALYZE {Memory._meta.db_table}")
    return time.perf_counter() - started


def load(n: int) -> float:
    """Fast: one shared vector and the vector indexes dropped (the rebalance never reads them)."""
    from django.conf import settings

    vector = "[" + ",".join(["0.05"] * settings.ULTRON_EMBEDDING_DIMENSIONS) + "]"
    return _generate(n, vector_sql="%s::vector", drop_vector_indexes=True, params=[vector])


def load_indexed(n: int) -> float:
    """As in production: distinct random vectors, inserted with every index in place."""
    from django.conf import settings

    return _generate(
        n, drop_vector_indexes=False, params=[settings.ULTRON_EMBEDDING_DIMENSIONS],
        vector_sql="(SELECT array_agg(random())::real[]::vector FROM generate_series(1, %s) WHERE g > 0)",
    )


def hot_updates() -> tuple[int, int]:
    """Row updates of the memory table so far and how many of them PostgreSQL made HOT (in
    place, no index touched): what keeps a rebalance cheap with seven HNSW indexes."""
    from django.db import connection

    from memories.models import Memory

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # this backend's counts, visible now
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = %s",
                       [Memory._meta.db_table])
        updated, hot = cursor.fetchone()
    return updated, hot


def python_loop(hot: int, warm: int) -> tuple[float, int]:
    """The anchor's way: every active row into Python, ranked there, changed rows saved one by one."""
    from memories.models import Memory

    started = time.perf_counter()
    rows = list(Memory.objects.filter(status="active").only("pk", "hit_count", "last_hit_at", "created_at", "tier"))
    rows.sort(key=lambda m: (-m.hit_count, -(m.last_hit_at or m.created_at).timestamp()))
    total = len(rows)
    changed = 0
    for rank, memory in enumerate(rows, 1):
        tier = "hot" if rank <= math.ceil(total * hot / 100) else "warm" if rank <= math.ceil(total * (hot + warm) / 100) else "cold"
        if tier != memory.tier:
            memory.tier = tier
            memory.save(update_fields=["tier"])
            changed += 1
    return time.perf_counter() - started, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--loop-n", type=int, default=20_000)
    parser.add_argument("--indexed-n", type=int, default=20_000,
                        help="rows for the run with every HNSW index in place")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from django.conf import settings

    from memories.services import tiers_rebalance

    rows: list[tuple[str, str]] = []
    figures: dict = {"n": args.n}
    with bench_database():
        loaded = load(args.n)
        rows.append(("rows generated", f"{args.n:,} in {loaded:.1f}s"))
        # Run after run with nothing hit and nothing new in between: each run's archival shifts
        # the ranks of the rest, so the first runs still move many rows. The steady state is the
        # first run that changes fewer than 1 % of the rows (a daily run on a settled hub).
        for number in range(1, 13):
            started = time.perf_counter()
            result = tiers_rebalance()
            seconds = time.perf_counter() - started
            moved = result.changed + result.archived
            steady = moved < args.n / 100
            label = {1: "first run", 2: "second run", 3: "third run"}.get(number, f"run {number}")
            rows.append((f"SQL rebalance, {label}" + (" (steady state)" if steady else ""),
                         f"{seconds:.2f}s  hot={result.hot:,} warm={result.warm:,} "
                         f"cold={result.cold:,} changed={result.changed:,} archived={result.archived:,}"))
            if number <= 3:
                figures[f"{label.replace(' ', '_')}_s"] = seconds
            if steady:
                figures.update(steady_run=number, steady_s=seconds, steady_changed=result.changed,
                               steady_archived=result.archived)
                break
    with bench_database():
        loaded = load_indexed(args.indexed_n)
        started = time.perf_counter()
        result = tiers_rebalance()
        seconds = time.perf_counter() - started
        rows.append((f"with all 7 HNSW indexes, {args.indexed_n:,} rows", f"{seconds:.2f}s, {result.changed:,} tier "
                                                                        f"changes in place (load {loaded:.0f}s)"))
        figures["indexed_n"], figures["indexed_s"] = args.indexed_n, seconds
        updated, hot = hot_updates()
        rows.append(("  of which HOT updates (in place)", f"{hot:,} of {updated:,} row updates "
                                                          f"({result.archived:,} archived: those touch the indexes)"))
        figures.update(indexed_changed=result.changed, indexed_archived=result.archived, indexed_updates=updated,
                       indexed_hot_updates=hot)
    with bench_database():
        load(args.loop_n)
        started = time.perf_counter()
        tiers_rebalance()
        sql_small = time.perf_counter() - started
    with bench_database():
        load(args.loop_n)
        loop_s, changed = python_loop(settings.ULTRON_HOT_PERCENT, settings.ULTRON_WARM_PERCENT)
    rows.append((f"at {args.loop_n:,} rows: SQL vs Python loop", f"{sql_small:.2f}s vs {loop_s:.1f}s "
                                                                  f"({changed:,} rows saved) = {loop_s / sql_small:.0f}x"))
    figures.update(loop_n=args.loop_n, sql_small_s=sql_small, python_loop_s=loop_s, loop_ratio=loop_s / sql_small)
    print_table("Tier rebalance (2 cores)", rows)
    write_results("rebalance", figures, as_json=args.json)


if __name__ == "__main__":
    main()
