"""A curator clears a real backlog in the review queue, in Chromium, timed.

    .venv/bin/python bench/review_queue.py [--pairs 337] [--json]

The backlog: every old/new pair of ``tests/data/update_pairs.jsonl`` (changed facts, conflicts,
refinements, duplicates, compatible and unrelated pairs of one subject) uploaded in order, the old
memory then the new one, with no LLM — whatever the hub decided alone or could not decide lands in
the queue (supersessions, conflicts, merge candidates in families, automatic merges). Then a
curator logs in to the live hub in Debian's Chromium (Playwright) and clears it twice, from the
same backlog each time:

1. **by the keyboard, row by row**: ``j`` to the first row, then the row's main key (``m``:
   merge keeping the newer text, newer is current, accept) for every row, reloading when a page of
   25 is done — one key per decision, each waiting for the row's answer;
2. **in bulk**: *Select page* and *Accept* per page of 25.

Printed: the backlog by kind, decisions and key presses, the machine's time per decision (the
request and the page's swap), and the total with a person's reading time added (``--read``
seconds a row, 4 by default, which is what the 10-minute target for 100 rows leaves: 6 s a row).
The machine's part is measured; the reading is the assumption, stated.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, bench_database, django_setup, print_table, progress, write_results  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
PAIRS = ROOT / "tests" / "data" / "update_pairs.jsonl"


def backlog(limit: int) -> dict[str, int]:
    """Upload the labelled pairs; the queue's counts by kind."""
    from memories.selectors.review import review_queue
    from memories.services import memory_upload

    fields = ("content", "context", "resolution", "tags")
    for line in PAIRS.read_text().splitlines()[:limit]:
        pair = json.loads(line)
        for side in ("old", "new"):
            memory_upload(**{k: pair[side][k] for k in fields if k in pair[side]})
    return review_queue(kind=None, page=1, per_page=25)[1]


def server_sql(*statements: str) -> None:
    """Statements run on the server's maintenance database (a database is copied or dropped only
    while nobody is connected to it, the hub's own connection included)."""
    import psycopg
    from django.db import connection

    connection.close()
    params = {**connection.get_connection_params(), "dbname": "postgres"}
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as admin:
        for statement in statements:
            admin.execute(statement)


def live_server():
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.test.testcases import LiveServerThread

    server = LiveServerThread("127.0.0.1", StaticFilesHandler)
    server.daemon = True
    server.start()
    server.is_ready.wait()
    if server.error:
        raise server.error
    return server


def clear(page, base: str, *, bulk: bool) -> tuple[int, int, float, list[float]]:
    """Clear the queue; (decisions, key presses and clicks, seconds, per-decision seconds)."""
    decisions = presses = 0
    per: list[float] = []
    started = time.perf_counter()
    while True:
        page.goto(base + "/admin/memories/memory/queue/")
        page.wait_for_load_state("networkidle")
        rows = page.locator(".hub-queue-row").count()
        if rows == 0:
            break
        if bulk:
            t = time.perf_counter()
            page.click("[data-select-all]")
            with page.expect_navigation():
                page.click('#queue-bulk button[value="accept"]')
            per.append(time.perf_counter() - t)
            decisions, presses = decisions + rows, presses + 2
            continue
        page.keyboard.press("j")
        presses += 1
        for _ in range(rows):
            row = page.locator(".hub-queue-row.hub-queue-focus")
            row_id = row.get_attribute("id")
            t = time.perf_counter()
            page.keyboard.press("m")
            page.wait_for_selector(f"#{row_id} .hub-settled")
            per.append(time.perf_counter() - t)
            decisions, presses = decisions + 1, presses + 1
    return decisions, presses, time.perf_counter() - started, per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=337)
    parser.add_argument("--read", type=float, default=4.0, help="a person's reading time per row, seconds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print("SKIP: Debian's chromium is not installed")
        return
    django_setup()
    from django.db import connection
    from playwright.sync_api import sync_playwright

    from ultron_site.people import person_create

    rows: list[tuple[str, str]] = []
    figures: dict = {}
    with bench_database():
        progress("uploading the pairs")
        counts = backlog(args.pairs)
        kinds = {k: v for k, v in counts.items() if v and k != "candidate_pairs"}
        total = sum(kinds.values())
        rows.append(("backlog (no LLM)", f"{total} rows: " + ", ".join(f"{v} {k}" for k, v in kinds.items())
                     + f" ({counts['candidate_pairs']} candidate pairs)"))
        figures.update(backlog=total, kinds=kinds)
        curator = person_create(username="bench-curator", role="curator", password_once=False)
        # The live hub's own connections read the bench's database (it is committed, not a test's);
        # a copy of the backlog lets the second way start from it too.
        name = connection.settings_dict["NAME"]
        template = f"{name}_start"
        server_sql(f'CREATE DATABASE "{template}" TEMPLATE "{name}"')
        server = live_server()
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
                for bulk in (False, True):
                    if bulk:  # the same backlog again
                        server.terminate()
                        server_sql(f'DROP DATABASE "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                        server = live_server()
                    base = f"http://127.0.0.1:{server.port}"
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.goto(base + "/admin/login/")
                    page.fill("#id_username", curator.username)
                    page.fill("#id_password", curator.password)
                    page.click("#login-form button[type=submit]")
                    page.wait_for_load_state("networkidle")
                    progress("clearing in bulk" if bulk else "clearing by the keyboard")
                    decisions, presses, seconds, per = clear(page, base, bulk=bulk)
                    page.close()
                    way = "bulk" if bulk else "keys"
                    ordered = sorted(per)
                    p50 = ordered[len(ordered) // 2] * 1000 if ordered else 0.0
                    p95 = ordered[int(0.95 * (len(ordered) - 1))] * 1000 if ordered else 0.0
                    with_reading = seconds + args.read * decisions
                    label = "in bulk (select page, Accept)" if bulk else "by the keyboard, one key a row"
                    rows.append((label, f"{decisions} decisions, {presses} presses; machine {seconds:.1f} s "
                                        f"({'per page' if bulk else 'per row'} p50 {p50:.0f} ms, p95 {p95:.0f} ms); "
                                        f"with {args.read:g} s reading a row: {with_reading / 60:.1f} min"))
                    figures[way] = {"decisions": decisions, "presses": presses, "seconds": seconds, "p50_ms": p50,
                                    "p95_ms": p95, "minutes_with_reading": with_reading / 60}
                browser.close()
        finally:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
            server.terminate()
            server_sql(f'DROP DATABASE IF EXISTS "{template}"')
    print_table("Clearing the review queue in Chromium (2 cores)", rows)
    write_results("queue", figures, as_json=args.json)


if __name__ == "__main__":
    main()
