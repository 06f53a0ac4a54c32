"""The offline type judgement on a labelled set it was not built from.

    .venv/bin/python bench/classify.py [--json]

``tests/data/memory_types.jsonl``: a few hundred memories labelled with one of the six types
(error, security, correction, pattern, preference, life), from real Claude Code sessions, the
design documents' examples and written cases, many without the obvious cue words. The hub's
prototypes (``memories/data/type_prototypes.jsonl``) were written separately and share no
text with it.

Printed: accuracy of the offline classifier (trained on the prototypes), of cue words alone
(the previous classifier) and of the nearest prototypes by embedding alone; per-type precision and recall; the
confusion matrix (rows: label, columns: predicted); accuracy on English and Chinese items.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, django_setup, print_table, write_results  # noqa: E402

CASES = ROOT / "tests" / "data" / "memory_types.jsonl"
TARGET = 0.90


def is_chinese(text: str) -> bool:
    return sum(1 for c in text if "\u3400" <= c <= "\u9fff") >= 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    import numpy as np

    from memories.judgements import prototypes
    from memories.judgements.classify import _PRIORITY, classify_by_cues, classify_offline
    from memories.models import MemoryType
    from memories.providers.embeddings import get_embedder
    from memories.text import embedding_text

    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    bodies = [(c["content"], c.get("context", ""), c.get("resolution", "")) for c in cases]
    vectors = get_embedder().embed([embedding_text(*body) for body in bodies])
    truth = [c["type"] for c in cases]

    protos = prototypes.prototype_examples()
    proto_vectors = get_embedder().embed([text for _, text in protos])

    def nearest_prototypes(vector) -> str:
        """The earlier idea, for comparison: mean similarity of the 5 nearest prototypes per type."""
        similarities = proto_vectors @ vector
        best = {t: float(np.sort(similarities[[i for i, (u, _) in enumerate(protos) if u == t]])[-5:].mean())
                for t in _PRIORITY}
        return max(_PRIORITY, key=lambda t: (best[t], -_PRIORITY.index(t)))

    methods = {
        "hub (trained on prototypes)": [classify_offline(*b, vector=v) for b, v in zip(bodies, vectors, strict=True)],
        "nearest prototypes (embedding only)": [nearest_prototypes(v) for v in vectors],
        "cue words alone (before)": [classify_by_cues(*b) for b in bodies],
    }
    types = list(MemoryType.values)
    rows: list[tuple[str, str]] = [("cases", f"{len(cases)}: " + ", ".join(f"{t} {n}" for t, n in Counter(truth).items()))]
    figures: dict = {"cases": len(cases)}
    chinese = [is_chinese(b[0]) for b in bodies]
    for name, predicted in methods.items():
        right = [p == t for p, t in zip(predicted, truth, strict=True)]
        accuracy = sum(right) / len(right)
        zh = [r for r, c in zip(right, chinese, strict=True) if c]
        en = [r for r, c in zip(right, chinese, strict=True) if not c]
        rows.append((f"{name}: accuracy", f"{accuracy:.3f} (English {sum(en) / len(en):.3f} of {len(en)}, "
                                          f"Chinese {sum(zh) / max(len(zh), 1):.3f} of {len(zh)})"))
        figures[name] = accuracy
    predicted = methods["hub (trained on prototypes)"]
    figures["accuracy"] = figures["hub (trained on prototypes)"]
    for memory_type in types:
        tp = sum(1 for p, t in zip(predicted, truth, strict=True) if p == t == memory_type)
        precision = tp / max(sum(1 for p in predicted if p == memory_type), 1)
        recall = tp / max(sum(1 for t in truth if t == memory_type), 1)
        rows.append((f"hub: {memory_type}", f"precision {precision:.3f}  recall {recall:.3f}"))
    confusion = Counter(zip(truth, predicted, strict=True))
    header = "label \\ predicted " + " ".join(f"{t[:5]:>6}" for t in types)
    print_table("Offline memory-type judgement", rows)
    print(header)
    for label in types:
        print(f"{label:<18}" + " ".join(f"{confusion[(label, p)]:>6}" for p in types))
    figures["confusion"] = {label: {p: confusion[(label, p)] for p in types} for label in types}
    figures["target"] = TARGET
    write_results("classify", figures, as_json=args.json)


if __name__ == "__main__":
    main()
