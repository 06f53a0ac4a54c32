"""Choosing the duplicate rule from data: STS Benchmark pairs as duplicates or not.

    .venv/bin/python bench/dedup.py [--split test|dev] [--json]

Pairs scored ≥ 4 are duplicates, ≤ 2 distinct (the rest are left out). Both sentences of a pair
are embedded the way the hub embeds a memory (type prefix + text; the type from the offline
classifier, and only same-type pairs can merge) and, for comparison, as plain text. The hub's
rule is similarity ≥ the threshold *and* no conflicting details (``details_conflict``:
different numbers/versions/dates, one side negated, opposite words); the bare threshold is shown
next to it. Prints precision and recall, the 0.75-0.85 band, and the curve over thresholds, on
the chosen split and on the other one (the rule was tuned looking at dev; test is held out).
A merge of two distinct memories destroys knowledge: precision comes first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import django_setup, eval_path, print_table, skip, write_results  # noqa: E402


def load(split: str) -> list[tuple[str, str, float]]:
    base = eval_path("paraphrase", "stsbenchmark")
    pairs = []
    for line in (base / f"sts-{split}.csv").read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 7:
            score = float(parts[4])
            if score >= 4 or score <= 2:
                pairs.append((parts[5].strip(), parts[6].strip(), score))
    return pairs


def pr(predicted: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = int((predicted & truth).sum())
    return (tp / predicted.sum() if predicted.sum() else float("nan")), tp / truth.sum()


def evaluate(split: str, embedder) -> dict:
    from memories.judgements.classify import classify_offline
    from memories.judgements.same_subject import details_conflict
    from memories.text import embedding_text

    pairs = load(split)
    types_a = [classify_offline(a) for a, _, _ in pairs]
    types_b = [classify_offline(b) for _, b, _ in pairs]
    typed_a = embedder.embed([embedding_text(t, a, "", "") for t, (a, _, _) in zip(types_a, pairs, strict=True)])
    typed_b = embedder.embed([embedding_text(t, b, "", "") for t, (_, b, _) in zip(types_b, pairs, strict=True)])
    plain_a = embedder.embed([a for a, _, _ in pairs])
    plain_b = embedder.embed([b for _, b, _ in pairs])
    return {
        "pairs": pairs,
        "truth": np.array([score >= 4 for _, _, score in pairs]),
        "same_type": np.array([a == b for a, b in zip(types_a, types_b, strict=True)]),
        "agree": np.array([details_conflict(a, b) is None for a, b, _ in pairs]),
        "typed": (typed_a * typed_b).sum(axis=1),
        "plain": (plain_a * plain_b).sum(axis=1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="test", choices=["test", "dev"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if eval_path("paraphrase", "stsbenchmark") is None:
        skip("../shared/eval/paraphrase/stsbenchmark not found")
    django_setup()
    from django.conf import settings

    from memories.providers.embeddings import get_embedder

    embedder = get_embedder()
    threshold = settings.ULTRON_DUPLICATE_THRESHOLD
    soft = settings.ULTRON_DUPLICATE_SOFT_THRESHOLD
    other = "dev" if args.split == "test" else "test"
    rows: list[tuple[str, str]] = []
    figures: dict = {"threshold": threshold}
    for split in (args.split, other):
        data = evaluate(split, embedder)
        truth, same, agree = data["truth"], data["same_type"], data["agree"]
        rows.append((f"[{split}] pairs", f"{len(truth)} ({int(truth.sum())} duplicates, {int((~truth).sum())} distinct); "
                                         f"details conflict in {1 - agree[truth].mean():.3f} of duplicates, "
                                         f"{1 - agree[~truth].mean():.3f} of distinct pairs"))
        rules = {
            "hub rule (typed, ≥ t, no conflict)": (data["typed"], agree),
            "typed embedding, ≥ t alone": (data["typed"], np.ones_like(agree)),
            "plain text, ≥ t, no conflict": (data["plain"], agree),
            "plain text, ≥ t alone": (data["plain"], np.ones_like(agree)),
        }
        for name, (cosine, guard) in rules.items():
            precision, recall = pr((cosine >= threshold) & same & guard, truth)
            rows.append((f"[{split}] {name}, t={threshold}", f"precision {precision:.3f}  recall {recall:.3f}"))
            if split == args.split and name.startswith("hub"):
                figures.update(precision=precision, recall=recall, pairs=len(truth))
                band = (cosine >= soft) & same & ~((cosine >= threshold) & guard)
                rows.append((f"[{split}] left to the LLM (band {soft}-{threshold} or a conflict above)",
                             f"{int(band.sum())} pairs, {truth[band].mean():.2f} of them duplicates"))
                curve = " ".join(
                    "{:.3f}:{:.3f}/{:.2f}".format(t, *pr((cosine >= t) & same & guard, truth))
                    for t in np.arange(0.75, 0.951, 0.025)
                )
                rows.append((f"[{split}] hub rule curve t:P/R", curve))
                reach = [t for t in np.arange(0.70, 0.99, 0.005) if pr((cosine >= t) & same & guard, truth)[0] >= 0.98]
                if reach:
                    best = float(min(reach))
                    rows.append((f"[{split}] lowest t with precision ≥ 0.98",
                                 f"{best:.3f} → recall {pr((cosine >= best) & same & guard, truth)[1]:.3f}"))
                    figures["threshold_for_p98"] = best
            if split == args.split and name == "typed embedding, ≥ t alone":
                figures["unguarded_precision"], figures["unguarded_recall"] = precision, recall
            if split == other and name.startswith("hub"):
                figures[f"{other}_precision"], figures[f"{other}_recall"] = precision, recall
    print_table("Duplicate detection on STS Benchmark", rows)
    write_results("dedup", figures, as_json=args.json)


if __name__ == "__main__":
    main()
