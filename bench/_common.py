"""Shared set-up for the benchmark scripts.

Each script runs against a throw-away database (``bench_ultron_<pid>``) on the configured server,
created with migrations and dropped at the end, so the hub's own data is never touched.
Real data comes from ``../shared/eval/`` (read in place); a script skips cleanly without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def eval_dir() -> Path:
    """Where the third-party evaluation data is: ``ULTRON_EVAL_DIR``, else ``../shared/eval``
    beside the checkout. The one definition, for the benches and the tests alike."""
    return Path(os.environ.get("ULTRON_EVAL_DIR") or ROOT.parent / "shared" / "eval")


EVAL_DIR = eval_dir()


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
    os.environ.setdefault("ULTRON_LOG_LEVEL", "warning")
    from ultron_site.startup import prepare

    prepare()  # as manage.py does: the embedded PostgreSQL when DATABASE_URL is unset
    import django

    django.setup()


@contextlib.contextmanager
def bench_database(keep: str | None = None):
    """Create a throw-away database with migrations, point the default connection at it, drop it after.

    With ``keep`` (a database name), that database is reused if it exists, created (with
    migrations) if not, and left in place afterwards — for re-running a benchmark on a large
    corpus without loading it again. Never the hub's own database.
    """
    from django.core.management import call_command
    from django.db import connection

    from core.spaces import maintenance

    if keep:
        if keep == connection.settings_dict["NAME"] or not keep.startswith("bench_"):
            raise SystemExit("--keep-db must name a database starting with 'bench_' (not the hub's own)")
        with maintenance(), connection.cursor() as cursor:  # the login role creates databases, never the hub's
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [keep])
            exists = cursor.fetchone() is not None
            if not exists:
                cursor.execute(f'CREATE DATABASE "{keep}"')
        connection.close()
        connection.settings_dict["NAME"] = keep
        call_command("migrate", verbosity=0, interactive=False)
        with maintenance():
            yield
        return
    connection.settings_dict.setdefault("TEST", {})
    # One database per process, so benchmarks can run side by side.
    connection.settings_dict["TEST"].update({"NAME": f"bench_ultron_{os.getpid()}", "CHARSET": None, "TEMPLATE": None})
    original = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        # A bench loads and reads as the hub's upkeep does (past the spaces' row-level security);
        # the API requests it times run in their caller's spaces, as served ones do.
        with maintenance():
            yield
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)


def progress(message: str) -> None:
    """A progress line on stderr (long runs), with the peak RSS so far."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"[{time.strftime('%H:%M:%S')}] {message} (peak RSS {peak:,.0f} MiB)", file=sys.stderr, flush=True)


def eval_path(*parts: str) -> Path | None:
    path = EVAL_DIR.joinpath(*parts)
    return path if path.exists() else None


def skip(reason: str) -> None:
    print(f"SKIP: {reason}")
    sys.exit(0)


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    print(f"\n{title}\n" + "-" * len(title))
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")


def write_results(name: str, data: dict, *, as_json: bool) -> None:
    from django.conf import settings

    out_dir = Path(settings.ULTRON_DATA_DIR) / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamped = {"benchmark": name, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "cpus": os.cpu_count(), **data}
    (out_dir / f"{name}.json").write_text(json.dumps(stamped, indent=2))
    if as_json:
        print(json.dumps(data))


def sts_sentences(limit: int) -> list[str]:
    """Distinct sentences from the STS Benchmark files, in file order."""
    base = eval_path("paraphrase", "stsbenchmark")
    if base is None:
        skip(f"{EVAL_DIR}/paraphrase/stsbenchmark not found")
    seen: dict[str, None] = {}
    for name in ("sts-train.csv", "sts-dev.csv", "sts-test.csv"):
        for line in (base / name).read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 7:
                for sentence in parts[5:7]:
                    seen.setdefault(sentence.strip(), None)
            if len(seen) >= limit:
                return list(seen)[:limit]
    return list(seen)[:limit]


def bench_texts(limit: int) -> list[str]:
    """Distinct real texts to load and query: the STS Benchmark sentences when ../shared/eval is
    present, otherwise the project's own labelled memories and technical lines (tests/data,
    about 1,600 texts written from real shapes), so the speed benches run in any checkout."""
    if eval_path("paraphrase", "stsbenchmark") is not None:
        return sts_sentences(limit)
    data = Path(__file__).resolve().parent.parent / "tests" / "data"
    seen: dict[str, None] = {}
    for name in ("cluster_topics.jsonl", "memory_types.jsonl"):
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for key in ("content", "resolution"):
                if isinstance(row.get(key), str) and row[key].strip():
                    seen.setdefault(row[key].strip(), None)
    for line in (data / "ordinary_lines.txt").read_text(encoding="utf-8").splitlines():
        if line.strip():
            seen.setdefault(line.strip(), None)
    return list(seen)[:limit]


def session_pieces(split, *, tool_results: bool, keep, limit: int) -> list[str]:
    """Distinct pieces of the real Claude Code sessions' messages (``tool_results``: tool output
    only, else only what the people and the agents wrote), cut by ``split`` and kept where ``keep``
    says, in a fixed spread across the files (ordered by their hash); none when ../shared/eval is
    absent."""
    import hashlib

    from ingestion.parsing import parse_jsonl

    directory = eval_path("transcripts", "claude_code")
    if directory is None:
        return []
    pieces: dict[str, None] = {}
    for path in sorted(directory.glob("*.jsonl")):
        for message in parse_jsonl(path.read_bytes()).messages:
            if message.is_tool_result == tool_results:
                for piece in split(message.text):
                    if keep(piece.strip()):
                        pieces.setdefault(piece.strip(), None)
    return sorted(pieces, key=lambda piece: hashlib.sha256(piece.encode()).hexdigest())[:limit]

