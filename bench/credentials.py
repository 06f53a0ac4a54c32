"""Credentials in sentences: how many come back after redaction, and what ordinary values are lost.

    .venv/bin/python bench/credentials.py [--sets tune,fresh] [--misses tune] [--prose [--show-prose]] [--json]

Sets (tests/data/): ``secret_sentences.jsonl``, ``_tune2`` and ``_tune3`` (**tune** … **tune3**:
the detectors' thresholds were chosen on them, their misses read) and ``secret_sentences_fresh.jsonl``,
``_fresh3`` … ``_fresh6`` (**fresh** … **fresh6**: each written blind by someone who saw neither
the detectors nor the other sets; never tuned on, their misses are not read). Each line:
``{id, kind: secret|ordinary, family, lang, text, secrets: [...], keep: [...]}``.

A secret **leaks** when the redacted text still holds it, or any piece of it of half its length
(at least 6 characters). A kept value is **lost** when it is no longer in the text verbatim. An
ordinary row is **changed** when redaction changed it at all. Texts are redacted as a memory's
fields are (``Occasion.MEMORY``: every detector, names included).

``--prose`` adds the cost curators see on ordinary writing: the share of sentences from the real
sessions (``../shared/eval``, skipped when absent) and of the shipped lessons in which a credential
is redacted, and what was taken.
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
    parser.add_argument("--prose", action="store_true",
                        help="also the share of ordinary sentences (real sessions, shipped lessons) with a credential redacted")
    parser.add_argument("--show-prose", action="store_true", help="list what --prose found")
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
    if args.prose:
        results["prose"] = prose_false_flags(show=args.show_prose)
    write_results("credentials", results, as_json=args.json)


def _session_prose(limit: int = 1500) -> list[str]:
    """Sentences the people and the agents wrote in the real Claude Code sessions (not tool
    output), 30-300 characters, distinct, a fixed spread across the files."""
    import re

    from bench._common import session_pieces

    return session_pieces(lambda text: re.split(r"(?<=[.!?])\s+|\n+", text), tool_results=False, limit=limit,
                          keep=lambda sentence: 30 <= len(sentence) <= 300 and " " in sentence)


def _shape(value: str) -> str:
    if value.replace(" ", "").replace("-", "").isdigit():
        return "digits"
    if all(c in "0123456789abcdefABCDEF" for c in value) and len(value) >= 7:
        return "hex"
    if value.replace("_", "").replace("-", "").replace(".", "").replace(" ", "").isalpha():
        return "words"
    return "mixed"


def prose_false_flags(show: bool) -> dict:
    """The cost curators see: the share of ordinary sentences in which a credential is redacted,
    and what was taken, by shape. Two corpora: sentences from the real sessions (never seen by the
    detectors), and the lessons shipped with the hub (in-sample: the context model learns from
    their values' clauses and its vocabulary holds their words)."""
    import difflib

    from memories.redaction.likeness.samples import shipped_texts
    from memories.redaction.policy import Occasion, redact_for

    out = {}
    table = []
    for name, texts in (("real-session sentences", _session_prose()), ("shipped lessons", list(shipped_texts()))):
        if not texts:
            table.append((name, "absent, skipped"))
            continue
        outputs = [r.text for r in redact_for(Occasion.MEMORY, texts)]
        taken: Counter = Counter()
        flagged = 0
        for text, output in zip(texts, outputs, strict=True):
            if "<REDACTED_CREDENTIAL>" not in output or "<REDACTED_CREDENTIAL>" in text:
                continue
            flagged += 1
            matcher = difflib.SequenceMatcher(a=text, b=output, autojunk=False)
            for op, a0, a1, b0, b1 in matcher.get_opcodes():
                if op == "replace" and "REDACTED_CREDENTIAL" in output[b0:b1]:
                    taken[_shape(text[a0:a1].strip("<>"))] += 1
                    if show:
                        print(f"FLAG {text[a0:a1]!r} in: {text[:160]}")
        table.append((name, f"{flagged}/{len(texts)} = {flagged / len(texts):.4f} with a credential redacted; "
                            f"taken by shape {dict(taken)}"))
        out[name] = {"sentences": len(texts), "flagged": flagged, "share": flagged / len(texts), "taken": dict(taken)}
    print_table("ordinary prose: credentials redacted where there are none", table)
    return out


if __name__ == "__main__":
    main()
