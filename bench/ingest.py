"""Ingestion over the real sessions in ../shared/eval/transcripts/: speed and what comes out.

    .venv/bin/python bench/ingest.py [--json] [--samples 6]

Reports MB/s and lines/s for the request side (parse + archive + session record), then the
time of each pipeline step (segmentation incl. redaction, metrics, extraction incl. the upload
funnel) with the offline provider, the segments produced, and a few extracted memories.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import bench_database, django_setup, eval_path, print_table, skip, write_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--max-file-mb", type=float, default=None, help="only files up to this size")
    args = parser.parse_args()
    base = eval_path("transcripts")
    if base is None:
        skip("../shared/eval/transcripts not found")
    files = sorted(p for p in base.rglob("*.jsonl")
                   if args.max_file_mb is None or p.stat().st_size <= args.max_file_mb * 1e6)
    django_setup()
    from agents.services import agent_create
    from ingestion import services
    from ingestion.models import SegmentMemory, TaskSegment
    from memories.providers.embeddings import get_embedder
    from memories.redaction import redact

    get_embedder().embed(["warm-up"])
    redact("warm-up John Smith")
    payload = [(str(p.relative_to(base)), p.read_bytes()) for p in files]
    size = sum(len(data) for _, data in payload)
    lines = sum(data.count(b"\n") for _, data in payload)
    rows: list[tuple[str, str]] = [("files", f"{len(files)} ({size / 1e6:.1f} MB, {lines} lines)")]
    figures: dict = {"files": len(files), "bytes": size, "lines": lines}
    with bench_database():
        agent = agent_create(name="bench")
        started = time.perf_counter()
        _, results = services.files_ingest(agent=agent, files=payload)
        accept = time.perf_counter() - started
        rows.append(("accept (parse + archive + record)", f"{accept:.2f} s = {size / 1e6 / accept:.1f} MB/s, "
                                                          f"{lines / accept:,.0f} lines/s"))
        figures["accept_mb_per_s"] = size / 1e6 / accept
        figures["accept_lines_per_s"] = lines / accept
        steps = [("segmentation", services.sessions_segment), ("scoring", services.segments_score),
                 ("extraction", services.segments_extract)]
        for name, step in steps:
            started = time.perf_counter()
            while step(limit=100)["claimed"]:
                pass
            seconds = time.perf_counter() - started
            rows.append((f"step {name}", f"{seconds:.2f} s"))
            figures[f"{name}_s"] = seconds
        segments = TaskSegment.objects.count()
        eligible = TaskSegment.objects.filter(score__gte=0.7).count()
        links = SegmentMemory.objects.select_related("memory").order_by("pk")
        rows.append(("segments", f"{segments} ({eligible} eligible at score ≥ 0.7)"))
        rows.append(("memories extracted", str(links.count())))
        rows.append(("malformed lines", str(sum(sum(r.malformed.values()) for r in results))))
        figures.update(segments=segments, eligible=eligible, memories=links.count())
        print_table("Ingestion (offline LLM, local embeddings)", rows)
        print("\nsample memories:")
        for link in links[: args.samples]:
            memory = link.memory
            print(f"- [{memory.memory_type}] {memory.content[:160]}")
            if memory.resolution:
                print(f"    fix: {memory.resolution[:160]}")
    write_results("ingest", figures, as_json=args.json)


if __name__ == "__main__":
    main()
