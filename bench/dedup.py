"""Choosing the duplicate threshold from data: STS Benchmark pairs as duplicates or not.

    .venv/bin/python bench/dedup.py [--split test|dev|both] [--json]

Pairs scored ≥ 4 are duplicates, ≤ 2 distinct (the rest are left out). For each pair both
sentences are embedded the way the hub embeds a memory (type prefix + text; the type from the
offline classifier, and only same-type pairs can merge) and, for comparison, as plain text.
Prints precision and recall of the ≥ 0.85 rule and of the 0.75-0.85 band, and the curve over
thresholds. A merge of two distinct memories destroys knowledge: precision comes first.
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
    names = {"test": ["sts-test.csv"], "dev": ["sts-dev.csv"], "both": ["sts-dev.csv", "sts-test.csv"]}[split]
    pairs = []
    for name in names:
        for line in (base / name).read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 7:
                score = float(parts[4])
                if score >= 4 or score <= 2:
                    pairs.append((parts[5].strip(), parts[6].strip(), score))
    return pairs


def pr(predicted: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = int((predicted & truth).sum())
    return (tp / predicted.sum() if predicted.sum() else float("nan")), tp / truth.sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="test", choices=["test", "dev", "both"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if eval_path("paraphrase", "stsbenchmark") is None:
        skip("../shared/eval/paraphrase/stsbenchmark not found")
    django_setup()
    from django.conf import settings

    from memories.providers.embeddings import get_embedder
    from memories.text import classify_offline, embedding_text

    pairs = load(args.split)
    embedder = get_embedder()
    types_a = [classify_offline(a) for a, _, _ in pairs]
    types_b = [classify_offline(b) for _, b, _ in pairs]
    typed_a = embedder.embed([embedding_text(t, a, "", "") for t, (a, _, _) in zip(types_a, pairs, strict=True)])
    typed_b = embedder.embed([embedding_text(t, b, "", "") for t, (_, b, _) in zip(types_b, pairs, strict=True)])
    plain_a = embedder.embed([a for a, _, _ in pairs])
    plain_b = embedder.embed([b for _, b, _ in pairs])
    truth = np.array([score >= 4 for _, _, score in pairs])
    same_type = np.array([a == b for a, b in zip(types_a, types_b, strict=True)])
    typed = (typed_a * typed_b).sum(axis=1)
    plain = (plain_a * plain_b).sum(axis=1)
    threshold = settings.ULTRON_DUPLICATE_THRESHOLD
    soft = settings.ULTRON_DUPLICATE_SOFT_THRESHOLD
    rows = [("pairs", f"{len(pairs)} ({int(truth.sum())} duplicates, {int((~truth).sum())} distinct), split {args.split}")]
    figures: dict = {"pairs": len(pairs), "threshold": threshold}
    for name, cosine in (("hub (type prefix)", typed), ("plain text", plain)):
        precision, recall = pr((cosine >= threshold) & same_type, truth)
        band = (cosine >= soft) & (cosine < threshold) & same_type
        band_dup = float(truth[band].mean()) if band.any() else float("nan")
        rows.append((f"{name}: ≥ {threshold}", f"precision {precision:.3f}  recall {recall:.3f}"))
        rows.append((f"{name}: band {soft}-{threshold}", f"{int(band.sum())} pairs, {band_dup:.2f} of them duplicates "
                                                         "(the LLM decides these)"))
        curve = []
        for t in np.arange(0.70, 0.97, 0.02):
            p, r = pr((cosine >= t) & same_type, truth)
            curve.append(f"{t:.2f}:{p:.3f}/{r:.2f}")
        rows.append((f"{name}: curve t:P/R", " ".join(curve)))
        if name.startswith("hub"):
            figures.update(precision=precision, recall=recall)
            best = max((t for t in np.arange(0.70, 0.99, 0.005) if pr((cosine >= t) & same_type, truth)[0] >= 0.98),
                       default=None, key=lambda t: -t)
            if best is not None:
                p, r = pr((cosine >= best) & same_type, truth)
                rows.append((f"{name}: lowest threshold with P ≥ 0.98", f"{best:.3f} → recall {r:.3f}"))
                figures["threshold_for_p98"] = float(best)
                figures["recall_at_p98"] = r
        else:
            figures["plain_precision"], figures["plain_recall"] = pr((cosine >= threshold) & same_type, truth)
    print_table("Duplicate detection on STS Benchmark", rows)
    write_results("dedup", figures, as_json=args.json)


if __name__ == "__main__":
    main()
