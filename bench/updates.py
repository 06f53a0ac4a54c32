"""Knowledge that changes: the supersession judgement on labelled pairs of memories.

    .venv/bin/python bench/updates.py [--json]

``tests/data/update_pairs.jsonl``: 337 pairs (old memory, new memory uploaded after it) labelled
supersedes / conflict / compatible / refinement / duplicate / unrelated, split into ``dev``
(what the rules were looked at with) and ``heldout`` (different stacks and tools, looked at only
for the figures; since issue 35's second round of rules both halves have been looked at).
``tests/data/update_pairs_fresh.jsonl``: 160 more (set ``fresh``), written afterwards by someone
who had not seen the rules, with phrasings and sentence shapes of their own: the honest measure of
how the rules do on text new to them. The two time fields (``gap_days``: days between the two
recordings) are given to the judgement as an upload's would be. For each pair both texts are
embedded as an upload's are; the pair is "on one topic" when their similarity reaches the embedding model's cluster threshold and "near-duplicates" at its soft
duplicate threshold, and ``memories.judgements.supersede.change_decide`` decides: supersedes
(the hub decides alone), conflict (a curator decides), or none.

Printed per set:
- automatic supersession precision (target >= 0.97) and recall, and recall by what says the
  order (explicit words, a version, a date, nothing);
- where the true supersessions went: decided, sent to a curator, left alone;
- conflict routing: true conflicts sent to a curator (never superseded: the hub must not guess);
- non-updates (compatible, refinement, duplicate, unrelated): left alone, sent to a curator,
  wrongly superseded;
- the retrieval check, offline: every pair's memories in one store, the pair's query against
  all of them by cosine, the hub's superseded memories left out (as search leaves them out);
  for each true supersession, the current memory above the old one and the old one out of the
  top 3 (target >= 0.95).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, django_setup, print_table, write_results  # noqa: E402

CASES = ROOT / "tests" / "data" / "update_pairs.jsonl"
# Written afterwards without sight of the rules (set "fresh"): what they do on cases new to them.
FRESH = ROOT / "tests" / "data" / "update_pairs_fresh.jsonl"
NON_UPDATES = ("compatible", "refinement", "duplicate", "unrelated")


def _ratio(n: int, d: int) -> str:
    return f"{n / d:.3f} ({n}/{d})" if d else "n/a"


def judge(rows: list[dict]) -> list[dict]:
    """Each pair with its similarity and the judgement's verdict."""
    from memories.judgements.supersede import change_decide
    from memories.providers.embeddings import get_embedder
    from memories.text import embedding_text, memory_body
    from memories.thresholds import model_thresholds

    embedder = get_embedder()
    texts = [embedding_text(m["content"], m.get("context", ""), m.get("resolution", ""))
             for row in rows for m in (row["old"], row["new"])]
    vectors = np.array(embedder.embed(texts), dtype=np.float32)
    limits = model_thresholds()
    for i, row in enumerate(rows):
        old, new = row["old"], row["new"]
        row["similarity"] = float(vectors[2 * i] @ vectors[2 * i + 1])
        verdict = change_decide(old=memory_body(old["content"], old.get("context", ""), old.get("resolution", "")),
                                new=memory_body(new["content"], new.get("context", ""), new.get("resolution", "")),
                                related=row["similarity"] >= limits.cluster, close=row["similarity"] >= limits.soft,
                                apart_days=row["gap_days"], old_content=old["content"], new_content=new["content"])
        row["verdict"], row["order_seen"], row["evidence"] = verdict.kind, verdict.order, verdict.evidence
        row["_old_vector"], row["_new_vector"] = vectors[2 * i], vectors[2 * i + 1]
    return rows


def retrieval(rows: list[dict]) -> tuple[int, int]:
    """For each true supersession: is the current memory above the old one, and the old one out
    of the top 3, searching every pair's memories (the superseded ones left out)?"""
    from memories.providers.embeddings import get_embedder

    store = []  # (vector, pair id, which)
    for row in rows:
        store.append((row["_new_vector"], row["id"], "new"))
        if row["verdict"] != "supersedes":  # a superseded memory is not served
            store.append((row["_old_vector"], row["id"], "old"))
    matrix = np.stack([v for v, _, _ in store])
    wanted = [row for row in rows if row["label"] == "supersedes"]
    queries = np.array(get_embedder().embed([row["query"] for row in wanted]), dtype=np.float32)
    good = 0
    for row, query in zip(wanted, queries, strict=True):
        order = np.argsort(-(matrix @ query))
        ranked = [(store[i][1], store[i][2]) for i in order]
        new_at = ranked.index((row["id"], "new"))
        old_at = ranked.index((row["id"], "old")) if (row["id"], "old") in ranked else len(ranked)
        good += new_at < old_at and old_at >= 3
    return good, len(wanted)


def figures(rows: list[dict]) -> dict:
    out: dict = {}
    decided = [r for r in rows if r["verdict"] == "supersedes"]
    true = [r for r in rows if r["label"] == "supersedes"]
    right = sum(1 for r in decided if r["label"] == "supersedes")
    out["precision"] = right / len(decided) if decided else None
    out["recall"] = right / len(true) if true else None
    out["rows"] = [
        ("automatic supersession precision (target >= 0.97)", _ratio(right, len(decided))),
        ("automatic supersession recall", _ratio(right, len(true))),
    ]
    for order in ("explicit", "version", "date", "none"):
        group = [r for r in true if r["order"] == order]
        out["rows"].append((f"  recall, order said by: {order}",
                            _ratio(sum(r["verdict"] == "supersedes" for r in group), len(group))))
    where = Counter(r["verdict"] for r in true)
    out["rows"].append(("true supersessions: decided / to a curator / left alone",
                        f"{where['supersedes']} / {where['conflict']} / {where['none']}"))
    conflicts = [r for r in rows if r["label"] == "conflict"]
    routed = Counter(r["verdict"] for r in conflicts)
    out["conflicts_routed"] = routed["conflict"] / len(conflicts) if conflicts else None
    out["rows"].append(("true conflicts: to a curator / superseded (a guess) / left alone",
                        f"{routed['conflict']} / {routed['supersedes']} / {routed['none']} of {len(conflicts)}"))
    non = [r for r in rows if r["label"] in NON_UPDATES]
    flagged = Counter(r["verdict"] for r in non)
    out["rows"].append(("non-updates: left alone / to a curator / wrongly superseded",
                        f"{flagged['none']} / {flagged['conflict']} / {flagged['supersedes']} of {len(non)}"))
    good, total = retrieval(rows)
    out["retrieval"] = good / total if total else None
    out["rows"].append(("retrieval: current above the old, old out of the top 3 (target >= 0.95)", _ratio(good, total)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", action="store_true", help="list the wrong automatic supersessions")
    args = parser.parse_args()
    django_setup()
    from memories.thresholds import model_thresholds

    rows = judge([json.loads(line) for path in (CASES, FRESH) for line in path.read_text().splitlines()
                  if line.strip()])
    results: dict = {"cluster_threshold": model_thresholds().cluster, "soft_threshold": model_thresholds().soft}
    for split in ("dev", "heldout", "fresh", "all"):
        part = [r for r in rows if split == "all" or r["set"] == split]
        found = figures(part)
        limits = model_thresholds()
        print_table(f"Supersession, {split} ({len(part)} pairs; one topic at similarity >= "
                    f"{limits.cluster:.2f}, near-duplicates >= {limits.soft:.2f})", found.pop("rows"))
        results[split] = found
        if args.show:
            for r in part:
                if r["verdict"] == "supersedes" and r["label"] != "supersedes":
                    print(f"  wrong: {r['id']} ({r['label']}, {r['similarity']:.2f}): {r['evidence']}")
    write_results("updates", results, as_json=args.json)


if __name__ == "__main__":
    main()
