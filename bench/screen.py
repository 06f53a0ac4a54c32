"""The poisoning screen on labelled memories (docs/flow.md#screening): how many attacks it holds
or marks, how many benign technical lessons it flags, per set, kind and language, and what it
costs per memory.

    .venv/bin/python bench/screen.py                      # every set, the configured screen
    .venv/bin/python bench/screen.py --classifier off     # the rules alone
    .venv/bin/python bench/screen.py --scores             # the classifier's scores: operating points
    .venv/bin/python bench/screen.py --misses dev         # list what one set's screen got wrong

Sets (tests/data/): ``screen_dev.jsonl`` (the rules and thresholds were written against it),
``screen_fresh.jsonl`` and ``screen_fresh2.jsonl`` (each written blind by someone who saw neither
the rules, the training examples nor the other sets; never tuned on: do not read their misses).
Each line: ``{id, label: attack|benign, kind, lang, content, context, resolution, tags}``.
The texts are redacted first, as the upload funnel does, so the screen sees what it sees there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
os.environ.setdefault("DATABASE_URL", "postgresql://bench@localhost/bench")  # nothing here touches it
os.environ.setdefault("DJANGO_SECRET_KEY", "bench")

SETS = {"dev": ROOT / "tests/data/screen_dev.jsonl", "fresh": ROOT / "tests/data/screen_fresh.jsonl",
        "fresh2": ROOT / "tests/data/screen_fresh2.jsonl",
        # The learned model's own examples: its figures there are not a measure (--sets train_a to read the rules on them).
        "train_a": ROOT / "memories/data/screen_train_a.jsonl", "train_b": ROOT / "memories/data/screen_train_b.jsonl",
        "train_c": ROOT / "memories/data/screen_train_c.jsonl"}
# What the checks call an obvious injection, where a set does not say (``obvious``): the reader's
# instructions overridden or a fake prompt structure.
OBVIOUS = ("override", "role", "marker", "instruction", "system", "identity", "ignore")


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", choices=["defender", "off"], default=None)
    parser.add_argument("--rules-only", action="store_true", help="--misses: what the rules alone got wrong")
    parser.add_argument("--scores", action="store_true", help="print the classifier's operating points")
    parser.add_argument("--misses", choices=list(SETS), default=None)
    parser.add_argument("--c", type=float, default=None, help="the learned model's regularisation (a grid by hand)")
    parser.add_argument("--sets", default="dev,fresh,fresh2", help="comma-separated: " + ", ".join(SETS))
    parser.add_argument("--train", choices=list(SETS), default=None,
                        help="fit the learned model on this set instead of the shipped training examples "
                             "(its own figures are then not a measure)")
    args = parser.parse_args()
    if args.classifier:
        os.environ["ULTRON_SCREEN_CLASSIFIER"] = args.classifier
    import django

    django.setup()
    from memories.providers.embeddings import get_embedder
    from memories.screening import HOLD, MARK, memories_screen
    from memories.screening import model as learned
    from memories.screening.classifier import get_classifier
    from memories.services.inputs import memory_inputs_clean
    from memories.text import embedding_text

    if args.c:
        learned.REGULARISATION_C = args.c
    if args.train:
        shipped = learned.training_rows
        learned.training_rows = lambda paths=None: shipped([SETS[args.train]])  # type: ignore[assignment]

    for name, path in SETS.items():
        if name not in args.sets.split(","):
            continue
        if not path.exists():
            print(f"{name}: {path} is missing, skipped")
            continue
        rows = load(path)
        fields = ("content", "context", "resolution")
        # Cleaned as the upload funnel cleans them: validated, decoded where hidden, redacted.
        cleaned = memory_inputs_clean([{**{f: row.get(f) or "" for f in fields}, "tags": row.get("tags") or []}
                                       for row in rows])
        refused = [row["id"] for row, c in zip(rows, cleaned, strict=True) if not hasattr(c, "content")]
        if refused:
            print(f"{name}: {len(refused)} refused by the upload's validation, left out: {refused[:5]}")
        rows = [row for row, c in zip(rows, cleaned, strict=True) if hasattr(c, "content")]
        cleaned = [c for c in cleaned if hasattr(c, "content")]
        items = [{"content": c.content, "context": c.context, "resolution": c.resolution, "tags": c.tags,
                  "hidden": c.hidden} for c in cleaned]
        vectors = get_embedder().embed([embedding_text(c.content, c.context, c.resolution) for c in cleaned])
        memories_screen(items[:2], vectors=vectors[:2])  # loads the classifier, fits the model
        started = time.perf_counter()
        verdicts = memories_screen(items, vectors=vectors)
        per_memory = (time.perf_counter() - started) / len(items) * 1000
        by: dict[tuple[str, str], Counter] = defaultdict(Counter)
        for row, verdict in zip(rows, verdicts, strict=True):
            for key in (("all", row["label"]), ("lang:" + row.get("lang", "?"), row["label"]),
                        ("kind:" + row.get("kind", "?"), row["label"])):
                by[key][verdict.action] += 1
        print(f"\n== {name}: {len(rows)} memories, screen {per_memory:.1f} ms per memory "
              f"(classifier {get_classifier().name})")
        for (group, label), counts in sorted(by.items(), key=lambda kv: (kv[0][0] != "all", kv[0])):
            total = sum(counts.values())
            if group.startswith("kind:") and total < 3:
                continue
            flagged = counts[HOLD] + counts[MARK]
            rate = flagged / total if label == "attack" else flagged / total
            what = "reach the reader unmarked" if label == "attack" else "held or marked"
            value = (total - flagged) / total if label == "attack" else rate
            print(f"{group:32s} {label:7s} n={total:4d}  held {counts[HOLD]:4d}  marked {counts[MARK]:4d}  "
                  f"{what}: {value:.3f}")
        obvious = [v for row, v in zip(rows, verdicts, strict=True)
                   if row["label"] == "attack" and row.get("obvious", any(w in row.get("kind", "") for w in OBVIOUS))]
        if obvious:
            missed = sum(v.action not in (HOLD, MARK) for v in obvious)
            print(f"{'obvious injections':32s} attack  n={len(obvious):4d}  reach the reader unmarked: "
                  f"{missed / len(obvious):.3f}")
        if args.scores:
            scored = [(row["label"], v.score or 0.0) for row, v in zip(rows, verdicts, strict=True)]
            print("classifier alone (max over fields): threshold, attacks caught, benign flagged")
            for threshold in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99):
                caught = statistics.mean(s >= threshold for label, s in scored if label == "attack")
                false = statistics.mean(s >= threshold for label, s in scored if label == "benign")
                print(f"  {threshold:.2f}  {caught:.3f}  {false:.3f}")
            rules_only = [(row["label"], any(f.rule != "classifier" and f.severity == HOLD for f in v.findings),
                           v.score or 0.0) for row, v in zip(rows, verdicts, strict=True)]
            print("classifier's added catches over the rules' holds: threshold, attacks added, benign added")
            for threshold in (0.75, 0.8, 0.85, 0.9, 0.95, 0.97):
                added = sum(1 for label, ruled, s in rules_only if label == "attack" and not ruled and s >= threshold)
                cost = sum(1 for label, ruled, s in rules_only if label == "benign" and not ruled and s >= threshold)
                print(f"  {threshold:.2f}  +{added}  +{cost}")
        probabilities = [(row["label"], v.learned) for row, v in zip(rows, verdicts, strict=True) if v.learned is not None]
        if args.scores and probabilities:
            ruled = [(row["label"], any(f.rule not in ("classifier", "model") and f.severity == HOLD for f in v.findings),
                      v.learned or 0.0) for row, v in zip(rows, verdicts, strict=True)]
            print("learned model alone: threshold, attacks caught, benign flagged; added over the rules' holds")
            for threshold in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95):
                caught = statistics.mean(p >= threshold for label, p in probabilities if label == "attack")
                false = statistics.mean(p >= threshold for label, p in probabilities if label == "benign")
                added = sum(1 for label, r, p in ruled if label == "attack" and not r and p >= threshold)
                cost = sum(1 for label, r, p in ruled if label == "benign" and not r and p >= threshold)
                print(f"  {threshold:.2f}  {caught:.3f}  {false:.3f}  +{added}  +{cost}")
        if args.misses == name:
            for row, verdict in zip(rows, verdicts, strict=True):
                wrong = (row["label"] == "attack") == (verdict.action not in (HOLD, MARK))
                if args.rules_only:
                    ruled = [f for f in verdict.findings if f.rule not in ("classifier", "model")]
                    wrong = (row["label"] == "attack") == (not ruled)
                if wrong:
                    text = " | ".join(row.get(f) or "" for f in fields if row.get(f))
                    print(f"  {row['id']} {row['label']} {row.get('kind')} -> {verdict.action} "
                          f"{[f'{f.rule}:{f.severity}' for f in verdict.findings][:3]} "
                          f"score {verdict.score or 0:.2f}: {text[:220]}")


if __name__ == "__main__":
    main()
