"""The duplicate rule on labelled pairs: automatic merges, merge candidates, and calibration.

    .venv/bin/python bench/dedup.py [--json]

Pair sets (each pair labelled duplicate or distinct):

- STS Benchmark dev and test (``../shared/eval/paraphrase``): pairs scored ≥ 4 are duplicates,
  ≤ 2 distinct, the rest left out;
- ``tests/data/dedup_pairs.jsonl``: hard negatives (two memories that differ in one number,
  version, name, negation, direction or actor; all distinct), pairs built from real Claude
  Code sessions (the same lesson reworded / another lesson on the same topic) and from the
  LoCoMo conversations (the same personal fact reworded / another fact).

Each text is embedded the way the hub embeds a memory; the duplicate check looks across types
(the type is a judgement two reports of one lesson may not share). The hub's rule, with the thresholds of the configured embedding model
(``memories/thresholds.py``):

- **automatic merge**: similarity ≥ the duplicate threshold and no conflicting details;
- **merge candidate**: similarity ≥ the soft threshold otherwise (the LLM or a curator decides).

Printed per set: automatic precision and recall, candidate recall (duplicates merged or put
before a judge) and how many distinct pairs become candidates. Then the calibration: the
lowest duplicate threshold whose automatic precision is ≥ 0.97 on every set, and the highest
soft threshold whose candidate recall on STS test is ≥ 0.80 — the table's values should not
be below / above those.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, django_setup, eval_path, print_table, write_results  # noqa: E402

PAIRS_FILE = ROOT / "tests" / "data" / "dedup_pairs.jsonl"
AUTO_PRECISION_TARGET = 0.97
CANDIDATE_RECALL_TARGET = 0.80


def sts_pairs(split: str) -> list[tuple[str, str, bool]]:
    base = eval_path("paraphrase", "stsbenchmark")
    if base is None:
        return []
    pairs = []
    for line in (base / f"sts-{split}.csv").read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 7:
            score = float(parts[4])
            if score >= 4 or score <= 2:
                pairs.append((parts[5].strip(), parts[6].strip(), score >= 4))
    return pairs


def labelled_sets() -> dict[str, list[tuple[str, str, bool]]]:
    sets: dict[str, list[tuple[str, str, bool]]] = {}
    for split in ("dev", "test"):
        pairs = sts_pairs(split)
        if pairs:
            sets[f"sts-{split}"] = pairs
    for line in PAIRS_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            sets.setdefault(row["set"], []).append((row["a"], row["b"], bool(row["duplicate"])))
    return sets


class Scored:
    """One set's pairs as the hub sees them: similarity, same type, conflicts."""

    def __init__(self, pairs: list[tuple[str, str, bool]], embedder) -> None:
        from memories.judgements.same_subject import details_conflicts
        from memories.text import embedding_text

        first = embedder.embed([embedding_text(a, "", "") for a, _, _ in pairs])
        second = embedder.embed([embedding_text(b, "", "") for _, b, _ in pairs])
        self.truth = np.array([dup for _, _, dup in pairs])
        self.similarity = (first * second).sum(axis=1)
        self.clean = np.array([not details_conflicts(a, b) for a, b, _ in pairs])

    def automatic(self, duplicate: float) -> np.ndarray:
        return (self.similarity >= duplicate) & self.clean

    def judged(self, soft: float) -> np.ndarray:
        """Merged automatically or put before a judge (the LLM or a curator)."""
        return self.similarity >= soft

    def precision(self, chosen: np.ndarray) -> float:
        return float((chosen & self.truth).sum() / chosen.sum()) if chosen.sum() else 1.0

    def recall(self, chosen: np.ndarray) -> float:
        return float((chosen & self.truth).sum() / self.truth.sum()) if self.truth.sum() else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from memories.providers.embeddings import get_embedder
    from memories.thresholds import model_thresholds

    embedder = get_embedder()
    limits = model_thresholds()
    scored = {name: Scored(pairs, embedder) for name, pairs in labelled_sets().items()}
    rows: list[tuple[str, str]] = [
        ("model", f"{embedder.model}: duplicate {limits.duplicate}, soft {limits.soft} ({limits.calibration})"),
    ]
    figures: dict = {"model": embedder.model, "duplicate": limits.duplicate, "soft": limits.soft, "sets": {}}
    for name, data in scored.items():
        auto = data.automatic(limits.duplicate)
        judged = data.judged(limits.soft)
        candidates = judged & ~auto
        distinct = ~data.truth
        result = {
            "pairs": len(data.truth), "duplicates": int(data.truth.sum()),
            "auto_precision": data.precision(auto), "auto_recall": data.recall(auto),
            "auto_wrong": int((auto & distinct).sum()),
            "candidate_recall": data.recall(judged),
            "candidates": int(candidates.sum()),
            "candidates_distinct": int((candidates & distinct).sum()),
        }
        figures["sets"][name] = result
        rows.append((
            f"[{name}] {result['pairs']} pairs, {result['duplicates']} duplicates",
            f"automatic P {result['auto_precision']:.3f} R {result['auto_recall']:.3f} "
            f"({result['auto_wrong']} wrong) · candidate recall {result['candidate_recall']:.3f} · "
            f"{result['candidates']} candidates ({result['candidates_distinct']} distinct)",
        ))
    # Calibration over a grid: the thresholds the data supports for this model.
    grid = np.round(np.arange(0.70, 0.991, 0.005), 3)
    safe = [t for t in grid if all(d.precision(d.automatic(t)) >= AUTO_PRECISION_TARGET for d in scored.values())]
    if safe:
        lowest = float(min(safe))
        figures["calibrated_duplicate"] = lowest
        rows.append((f"lowest duplicate threshold with automatic P ≥ {AUTO_PRECISION_TARGET} on every set",
                     f"{lowest:.3f}" + "".join(f" · {n} R {d.recall(d.automatic(lowest)):.3f}"
                                               for n, d in scored.items() if d.truth.any())))
    if "sts-test" in scored:
        test = scored["sts-test"]
        reach = [t for t in grid if test.recall(test.judged(t)) >= CANDIDATE_RECALL_TARGET]
        if reach:
            highest = float(max(reach))
            figures["calibrated_soft"] = highest
            rows.append((f"highest soft threshold with candidate recall ≥ {CANDIDATE_RECALL_TARGET} on sts-test",
                         f"{highest:.3f}"))
    print_table("Duplicate rule on labelled pairs", rows)
    write_results("dedup", figures, as_json=args.json)


if __name__ == "__main__":
    main()
