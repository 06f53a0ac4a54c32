"""Credentials in sentences: how many come back after redaction, and what ordinary values are lost.

    .venv/bin/python bench/credentials.py [--sets tune,fresh] [--misses tune] [--json]

Sets (tests/data/): ``secret_sentences.jsonl`` (**tune**: the detectors' thresholds were chosen on
it) and ``secret_sentences_fresh.jsonl``, ``_fresh3``, ``_fresh4`` and ``_fresh5`` (**fresh** …
**fresh5**: each written blind by someone who saw neither the detectors nor the other sets;
never tuned on, their misses are not read). Each line:
``{id, kind: secret|ordinary, family, lang, text, secrets: [...], keep: [...]}``.

A secret **leaks** when the redacted text still holds it, or any piece of it of half its length
(at least 6 characters). A kept value is **lost** when it is no longer in the text verbatim. An
ordinary row is **changed** when redaction changed it at all. Texts are redacted as a memory's
fields are (``Occasion.MEMORY``: every detector, names included).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, django_setup, print_table, write_results  # noqa: E402

SETS = {"tune": ROOT / "tests/data/secret_sentences.jsonl", "fresh": ROOT / "tests/data/secret_sentences_fresh.jsonl",
        "fresh3": ROOT / "tests/data/secret_sentences_fresh3.jsonl",
        "fresh4": ROOT / "tests/data/secret_sentences_fresh4.jsonl",
        "fresh5": ROOT / "tests/data/secret_sentences_fresh5.jsonl",
        "fresh6": ROOT / "tests/data/secret_sentences_fresh6.jsonl",
        "tune2": ROOT / "tests/data/secret_sentences_tune2.jsonl",
        "tune3": ROOT / "tests/data/secret_sentences_tune3.jsonl"}


def leaked(secret: str, output: str) -> bool:
    piece = min(len(secret), max(6, len(secret) // 2))
    return any(secret[i : i + piece] in output for i in range(len(secret) - piece + 1))


def measure(rows: list[dict], outputs: list[str]) -> dict:
    by: dict[str, Counter] = defaultdict(Counter)
    for row, output in zip(rows, outputs, strict=True):
        groups = ("all", f"lang:{row.get('lang', '?')}", f"family:{row.get('family', '?')}")
        for group in groups:
            counts = by[group]
            for secret in row.get("secrets") or []:
                counts["secrets"] += 1
                counts["leaked"] += leaked(secret, output)
            for value in row.get("keep") or []:
                counts["keep"] += 1
                counts["lost"] += value not in output
            if row["kind"] == "ordinary":
                counts["ordinary"] += 1
                counts["changed"] += output != row["text"]
    return by


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="tune,fresh,fresh3,fresh4,fresh5,fresh6")
    parser.add_argument("--misses", choices=["tune", "tune2", "tune3"], default=None, help="list the tuning set's leaks and losses")
    parser.add_argument("--without-likeness", action="store_true",
                        help="the detectors as they were before the learned secret-likeness score")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from memories.redaction import likeness
    from memories.redaction.policy import Occasion, redact_for

    if args.without_likeness:
        likeness.find = lambda text, **_: []  # type: ignore[assignment]

    redact_for(Occasion.MEMORY, ["warm-up: password hunter2x"])
    results: dict = {}
    for name in args.sets.split(","):
        path = SETS[name]
        if not path.exists():
            print(f"SKIP: {path} not found")
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        started = time.process_time()
        outputs = [r.text for r in redact_for(Occasion.MEMORY, [row["text"] for row in rows])]
        cpu_ms = (time.process_time() - started) / len(rows) * 1000
        by = measure(rows, outputs)
        table = []
        for group, counts in sorted(by.items(), key=lambda kv: (kv[0] != "all", kv[0])):
            if group.startswith("family:") and counts["secrets"] + counts["ordinary"] < 3:
                continue
            leak = counts["leaked"] / counts["secrets"] if counts["secrets"] else None
            lost = counts["lost"] / counts["keep"] if counts["keep"] else None
            changed = counts["changed"] / counts["ordinary"] if counts["ordinary"] else None
            table.append((group, f"secrets {counts['secrets']:4d} leak {leak if leak is None else round(leak, 3)}  "
                                 f"kept values {counts['keep']:4d} lost {lost if lost is None else round(lost, 3)}  "
                                 f"ordinary rows {counts['ordinary']:4d} changed "
                                 f"{changed if changed is None else round(changed, 3)}"))
        print_table(f"{name}: {len(rows)} rows, redaction {cpu_ms:.2f} ms CPU per text", table)
        total = by["all"]
        results[name] = {"rows": len(rows), "leak": total["leaked"] / max(1, total["secrets"]),
                         "lost": total["lost"] / max(1, total["keep"]),
                         "ordinary_changed": total["changed"] / max(1, total["ordinary"]), "cpu_ms": cpu_ms}
        if args.misses == name:
            for row, output in zip(rows, outputs, strict=True):
                leaks = [s for s in row.get("secrets") or [] if leaked(s, output)]
                lost = [v for v in row.get("keep") or [] if v not in output]
                if leaks or lost or (row["kind"] == "ordinary" and output != row["text"]):
                    print(f"\n{row['id']} {row['family']} leaks={leaks} lost={lost}\n  in:  {row['text']}\n  out: {output}")
    write_results("credentials", results, as_json=args.json)


if __name__ == "__main__":
    main()
