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
before a judge) and how many distinct pairs become candidates. Then the values ``manage.py
calibrate``'s rules (``memories.calibration``) give on these sets, STS included (calibrate
itself reads only the sets the repository ships).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import django_setup, eval_path, print_table, write_results  # noqa: E402


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
    from memories.calibration import pair_sets

    sets: dict[str, list[tuple[str, str, bool]]] = {}
    for split in ("dev", "test"):
        pairs = sts_pairs(split)
        if pairs:
            sets[f"sts-{split}"] = pairs
    return {**sets, **pair_sets()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    from memories.calibration import ScoredPairs, fit_duplicate, fit_soft
    from memories.providers.embeddings import get_embedder
    from memories.thresholds import model_thresholds

    embedder = get_embedder()
    limits = model_thresholds()
    scored = {name: ScoredPairs(pairs, embedder.embed) for name, pairs in labelled_sets().items()}
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
    # What calibrate's rules give on every set here (STS included).
    duplicate = fit_duplicate(scored)
    soft = fit_soft(scored, duplicate.value)
    # The lowest duplicate threshold that keeps automatic precision on every set (the table's value must
    # not be below it), and the rule's value, which adds its margin.
    figures["calibrated_duplicate"] = duplicate.basis["lowest_safe"]
    figures["calibrate_duplicate"] = duplicate.value
    figures["calibrated_soft"] = soft.value
    rows.append(("calibrate's duplicate rule on these sets", f"{duplicate.value:.3f} ({duplicate.rule})"))
    rows.append(("calibrate's soft rule on these sets", f"{soft.value:.3f} ({soft.rule})"))
    print_table("Duplicate rule on labelled pairs", rows)
    write_results("dedup", figures, as_json=args.json)


if __name__ == "__main__":
    main()
