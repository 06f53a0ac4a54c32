"""Retrieval quality on LoCoMo: every conversation turn is a memory, every question a search.

    .venv/bin/python bench/locomo.py [--conversations 10] [--split all|tune|held] [--json]

Each turn goes through the real upload funnel (redaction, classification, embedding, dedup)
with its session date as context and a tag per conversation. Each question with evidence
(categories 1-4) is redacted and embedded as the search service does it, then searched — within
its conversation (the tag filter) and over the whole pool — in the three modes; recall@1/5/10
and MRR of the evidence turns are reported per category and overall, and R@10 separately for
the tuning half (conversations 0-4, where ranking choices are made) and the held-out half (5-9,
where they are checked). ``--split`` asks only one half's questions (all turns are loaded either
way). No LLM is involved. Searches go through the selector, so they record no hits; they apply the
embedding space's relevance floor as the search service does (``--floor F`` another, -1 none).
Reference (plain turns, per conversation): MiniLM dense ≈ 0.50 recall@10, BM25 0.57, RRF 0.60.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import bench_database, django_setup, eval_path, print_table, skip, write_results  # noqa: E402

MODES = ("semantic", "keyword", "hybrid")
# Ranking choices are made on the first five conversations and checked on the other five.
HALVES = {"tune": range(0, 5), "held": range(5, 10)}


def upload_turns(data: list[dict], rows: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Every turn through the upload funnel, tagged with its conversation; turn -> memory id."""
    from agents.services import agent_create
    from memories.services import memory_upload

    agent = agent_create(name="bench")
    turn_memory: dict[tuple[str, str], str] = {}
    started = time.perf_counter()
    turns = 0
    for sample in data:
        conversation = sample["conversation"]
        tag = f"conv-{sample['sample_id']}"
        for key, session in conversation.items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            date = conversation.get(f"{key}_date_time", "")
            for turn in session:
                text = turn.get("text", "").strip()
                if not text:
                    continue
                result = memory_upload(content=f"{turn['speaker']}: {text}", context=f"session date: {date}",
                                       tags=[tag], agent=agent)
                turn_memory[(sample["sample_id"], turn["dia_id"])] = str(result.memory.pk)
                turns += 1
    upload_s = time.perf_counter() - started
    rows.append(("turns uploaded", f"{turns} in {upload_s:.0f}s ({turns / upload_s:.0f}/s), "
                                   f"{len(set(turn_memory.values()))} memories after dedup"))
    return turn_memory


def _recall(firsts: list[int | None], k: int = 10) -> float:
    return sum(1 for f in firsts if f and f <= k) / max(1, len(firsts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--split", choices=("all", *HALVES), default="all",
                        help="ask the questions of the tuning half (conversations 0-4), the held-out half (5-9) or all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--floor", type=float, default=None,
                        help="relevance floor (default: the embedding space's, as the search service; -1: none)")
    parser.add_argument("--keep-db", metavar="NAME",
                        help="reuse (or create and keep) this bench_* database; the turns are uploaded only once")
    args = parser.parse_args()
    path = eval_path("locomo", "locomo10.json")
    if path is None:
        skip("../shared/eval/locomo/locomo10.json not found")
    data = json.loads(path.read_text())[: args.conversations]
    half_of = {index: half for half, indexes in HALVES.items() for index in indexes}
    questions = [(sample["sample_id"], half_of.get(index, "held"), q) for index, sample in enumerate(data)
                 for q in sample["qa"] if q.get("evidence") and q.get("category") in (1, 2, 3, 4)
                 and args.split in ("all", half_of.get(index, "held"))]
    if not questions:
        skip(f"no questions in the {args.split} half of the first {len(data)} conversations")
    django_setup()
    from memories.redaction import redact_many
    from memories.selectors import memory_search, query_embedding_text
    from memories.services import embed_texts
    from memories.services.recall import relevance_floor

    rows: list[tuple[str, str]] = []
    figures: dict = {}
    with bench_database(args.keep_db):
        # The search service's floor: the bench database holds no calibration, so the model's row.
        floor = relevance_floor() if args.floor is None else (None if args.floor <= -1 else args.floor)
        rows.append(("relevance floor", "none" if floor is None else f"{floor:.3f}"))
        figures["floor"] = floor
        from django.conf import settings
        from django.db import connection

        from memories.models import Memory

        saved = Path(settings.ULTRON_DATA_DIR) / "bench" / f"locomo-turns-{args.keep_db}.json"
        if args.keep_db and saved.exists() and Memory.objects.exists():
            turn_memory = {tuple(k.split("|", 1)): v for k, v in json.loads(saved.read_text()).items()}
            rows.append(("turns", f"{len(turn_memory)} from the kept database {args.keep_db}"))
        else:
            turn_memory = upload_turns(data, rows)
            if args.keep_db:
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_text(json.dumps({"|".join(k): v for k, v in turn_memory.items()}))
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memories_memory")  # what autovacuum does after a load
        # As the search service does it: redacted, then embedded without the name placeholders.
        texts = [r.text for r in redact_many([q["question"] for _, _, q in questions])]
        vectors = embed_texts([query_embedding_text(text) for text in texts])
        results: dict[tuple[str, str], dict] = defaultdict(lambda: defaultdict(list))
        timings: dict[str, list[float]] = defaultdict(list)
        for (sample_id, half, question), text, vector in zip(questions, texts, vectors, strict=True):
            wanted = {turn_memory.get((sample_id, e)) for e in question["evidence"]} - {None}
            for scope in ("conversation", "pool"):
                tags = [f"conv-{sample_id}"] if scope == "conversation" else None
                for mode in MODES:
                    started = time.perf_counter()
                    hits = memory_search(vector=vector, limit=10, tags=tags, mode=mode, text=text, floor=floor)
                    timings[mode].append(time.perf_counter() - started)
                    ranks = [i for i, h in enumerate(hits, 1) if str(h.id) in wanted]
                    first = ranks[0] if ranks else None
                    for bucket in ("all", f"cat{question['category']}", half, f"{half}-cat{question['category']}"):
                        entry = results[(scope, mode)]
                        entry[bucket].append(first)
        for scope in ("conversation", "pool"):
            for mode in MODES:
                entry = results[(scope, mode)]
                firsts = entry["all"]
                r1, r5, r10 = (sum(1 for f in firsts if f and f <= k) / len(firsts) for k in (1, 5, 10))
                mrr = sum(1 / f for f in firsts if f) / len(firsts)
                per_cat = "  ".join(
                    f"c{c}:{sum(1 for f in entry[f'cat{c}'] if f and f <= 10) / max(1, len(entry[f'cat{c}'])):.2f}"
                    for c in (1, 2, 3, 4))
                rows.append((f"{scope:12s} {mode:8s}", f"R@1 {r1:.3f}  R@5 {r5:.3f}  R@10 {r10:.3f}  MRR {mrr:.3f}  "
                                                       f"[R@10 {per_cat}]"))
                prefix = "" if scope == "conversation" else "pool_"
                figures[f"{prefix}{mode}_recall_at_10"] = r10
                figures[f"{prefix}{mode}_mrr"] = mrr
                for half in HALVES:
                    if not entry[half]:
                        continue
                    half_r10 = _recall(entry[half])
                    cat3 = _recall(entry[f"{half}-cat3"])
                    rows.append((f"{scope:12s} {mode:8s} {half}", f"R@10 {half_r10:.3f}  category 3: {cat3:.3f} "
                                                                  f"({len(entry[half])} questions)"))
                    figures[f"{prefix}{mode}_{half}_recall_at_10"] = half_r10
                    figures[f"{prefix}{mode}_{half}_cat3_recall_at_10"] = cat3
        for mode in MODES:
            ordered = sorted(timings[mode])
            rows.append((f"latency {mode}", f"p50 {ordered[len(ordered) // 2] * 1000:.1f} ms, "
                                            f"p95 {ordered[int(0.95 * (len(ordered) - 1))] * 1000:.1f} ms"))
    figures["questions"] = len(questions)
    print_table("LoCoMo retrieval (top 10; evidence turn found)", rows)
    write_results("locomo", {
        "hybrid_recall_at_10": figures["hybrid_recall_at_10"],
        "semantic_recall_at_10": figures["semantic_recall_at_10"],
        "keyword_recall_at_10": figures["keyword_recall_at_10"],
        "hybrid_mrr": figures["hybrid_mrr"],
        "questions": figures["questions"],
        **figures,
    }, as_json=args.json)


if __name__ == "__main__":
    main()
