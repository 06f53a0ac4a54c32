"""What the offline pipeline learns from sessions, against hand-made labels.

    .venv/bin/python bench/sessions.py [--set real|written|heldout|plain|all] [--show] [--json]

Two labelled sets (tests/data/README.md): ``real`` — the Claude Code session exports under
../shared/eval/transcripts/claude_code (labels: tests/data/session_boundaries_agent.jsonl,
tests/data/session_lessons.jsonl), ``written`` — sessions written by hand in the shapes of
real agent exports (tests/data/sessions_written/), and ``heldout`` — a second hand-written set
(tests/data/sessions_heldout/) made after the offline rules were tuned on the first two, and
never used to tune them, and ``plain`` — sessions of the plainest lessons (a fix the user confirmed in
plain chat or by a passing rerun, a confirmed how-to, a lasting preference) and of their negative
controls, in OpenAI, Anthropic and Claude Code shapes, some uploaded in two growing parts
(tests/data/sessions_plain/, labels per file: memories expected, by type, and memories that must
not appear), and ``plain-heldout`` — the same shapes in other domains and wordings
(tests/data/sessions_plain_heldout/), written after the rules were tuned on ``plain``. Every file
goes through the real ingestion
service and pipeline (redaction, segmentation, scoring, extraction, the upload funnel) with the
offline provider, then:

- task boundaries: a predicted cut (the first line of every segment but the first) is right when
  it falls inside a labelled boundary's window, each window matched once; precision, recall, F1;
- lessons: a lesson is found when a memory extracted from its file contains, for every keyword
  group of the label, one of the group's alternatives (case-insensitive); recall over lessons,
  precision over extracted memories (a memory that states no labelled lesson of its file is a
  miss — labels list every lesson a careful engineer saw, so this is the strict reading);
- plain: an expected memory is found when a memory of its type holds, for every keyword group, one
  of its words; a forbidden one is learned when a memory of its type holds all its words. Recall
  over expected memories; forbidden ones learned; memories that are neither expected nor
  forbidden are listed with ``--show`` (the plain labels name only the lessons of each shape).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import bench_database, django_setup, eval_path, print_table, write_results  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _types(value: str | list[str]) -> set[str]:
    return {value} if isinstance(value, str) else set(value)


def run_plain(folder: Path, name: str) -> tuple[dict, list, list]:
    """The plain set: each session uploaded part by part under one name, the pipeline run after
    each part, and that part's label checked against the memories its session has then."""
    import re

    from agents.services import agent_create
    from ingestion import services
    from ingestion.models import SegmentMemory
    from memories.models import Status

    labels = json.loads((folder / "labels.json").read_text())
    agent = agent_create(name=f"bench-{name}")
    expected = found = forbidden = learned = 0
    missed: list[str] = []
    wrong: list[str] = []
    started = time.perf_counter()
    for label in sorted(labels, key=lambda item: item["file"]):
        identity = re.sub(r"\.v\d+(?=\.jsonl$)", "", label["file"])
        services.files_ingest(agent=agent, files=[(identity, (folder / label["file"]).read_bytes())])
        for step in (services.sessions_segment, services.segments_score, services.segments_extract):
            while step(limit=100)["claimed"]:
                pass
        links = SegmentMemory.objects.filter(segment__session__agent=agent, segment__session__identity=identity,
                                             memory__status=Status.ACTIVE).select_related("memory")
        memories = [(link.memory.memory_type, f"{link.memory.content} {link.memory.context} "
                                              f"{link.memory.resolution}".lower()) for link in links]
        for item in label["expected"]:
            expected += 1
            if any(kind in _types(item["type"]) and all(any(w in text for w in group) for group in item["any_of_keywords"])
                   for kind, text in memories):
                found += 1
            else:
                missed.append(f"{label['file']} [{item['type']}] {item['any_of_keywords']}")
        for item in label["forbidden"]:
            forbidden += 1
            hits = [text for kind, text in memories if kind in _types(item["type"])
                    and all(w in text for w in item["keywords"])]
            if hits:
                learned += 1
                wrong.append(f"{label['file']} [{item['type']}] {hits[0][:150]}")
    figures = {"files": len(labels), "seconds": time.perf_counter() - started, "expected": expected,
               "found": found, "recall": found / expected if expected else 0.0, "forbidden": forbidden,
               "learned": learned}
    return figures, missed, wrong


def label_sets(which: str) -> list[dict]:
    sets = []
    real = eval_path("transcripts", "claude_code")
    if which in ("real", "all") and real is not None:
        sets.append({"name": "real", "dir": real, "boundaries": _read(DATA / "session_boundaries_agent.jsonl"),
                     "lessons": _read(DATA / "session_lessons.jsonl")})
    for name in ("written", "heldout"):
        folder = DATA / f"sessions_{name}"
        if which in (name, "all") and (folder / "lessons.jsonl").exists():
            sets.append({"name": name, "dir": folder, "boundaries": _read(folder / "boundaries.jsonl"),
                         "lessons": _read(folder / "lessons.jsonl")})
    return sets


def matches(text: str, keywords: list[list[str]]) -> bool:
    lowered = text.lower()
    return all(any(alt.lower() in lowered for alt in group) for group in keywords)


def lesson_scores(memories: dict[str, list[dict]], lessons: list[dict]) -> tuple[dict, list, list]:
    by_file: dict[str, list[dict]] = defaultdict(list)
    for lesson in lessons:
        by_file[lesson["file"]].append(lesson)
    found, missed, stray = set(), [], []
    extracted = real = 0
    for file, items in memories.items():
        for memory in items:
            extracted += 1
            text = " ".join([memory["content"], memory["context"], memory["resolution"]])
            hit = [lesson["id"] for lesson in by_file.get(file, []) if matches(text, lesson["keywords"])]
            found.update(hit)
            if hit:
                real += 1
            else:
                stray.append((file, memory))
    missed = [lesson for lesson in lessons if lesson["id"] not in found]
    figures = {"lessons": len(lessons), "found": len(found), "recall": len(found) / len(lessons) if lessons else 0.0,
               "memories": extracted, "real": real, "precision": real / extracted if extracted else 0.0}
    return figures, missed, stray


def run_set(label_set: dict) -> tuple[dict, list, list]:
    from agents.services import agent_create
    from ingestion import services
    from ingestion.calibration import boundary_scores
    from ingestion.models import SegmentMemory, TaskSegment

    files = sorted({label["file"] for label in label_set["boundaries"]} | {x["file"] for x in label_set["lessons"]})
    payload = [(name, (label_set["dir"] / name).read_bytes()) for name in files if (label_set["dir"] / name).exists()]
    agent = agent_create(name=f"bench-{label_set['name']}")
    started = time.perf_counter()
    services.files_ingest(agent=agent, files=payload)
    for step in (services.sessions_segment, services.segments_score, services.segments_extract):
        while step(limit=100)["claimed"]:
            pass
    seconds = time.perf_counter() - started
    predicted: dict[str, list[int]] = defaultdict(list)
    for segment in TaskSegment.objects.filter(session__agent=agent).order_by("session_id", "index"):
        if segment.index > 0 and segment.messages:
            predicted[segment.session.identity].append(segment.messages[0]["line"])
    memories: dict[str, list[dict]] = defaultdict(list)
    links = SegmentMemory.objects.filter(segment__session__agent=agent).select_related("memory", "segment__session")
    for link in links:
        memory = link.memory
        memories[link.segment.session.identity].append(
            {"content": memory.content, "context": memory.context, "resolution": memory.resolution,
             "type": memory.memory_type})
    figures = {"files": len(payload), "seconds": seconds,
               "segments": TaskSegment.objects.filter(session__agent=agent).count(),
               **{f"boundary_{k}": v for k, v in boundary_scores(predicted, label_set["boundaries"]).items()}}
    lesson_figures, missed, stray = lesson_scores(memories, label_set["lessons"])
    figures.update({f"lesson_{k}": v for k, v in lesson_figures.items()})
    return figures, missed, stray


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=["real", "written", "heldout", "plain", "plain-heldout", "all"],
                        default="all")
    parser.add_argument("--show", action="store_true", help="list missed lessons and stray memories")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sets = label_sets(args.set)
    plain_sets = [(name, DATA / folder) for name, folder in (("plain", "sessions_plain"),
                                                             ("plain-heldout", "sessions_plain_heldout"))
                  if args.set in (name, "all") and (DATA / folder / "labels.json").exists()]
    if not sets and not plain_sets:
        print("no labelled session set found (../shared/eval/transcripts or tests/data/sessions_written)")
        return
    django_setup()
    results = {}
    with bench_database():
        for label_set in sets:
            figures, missed, stray = run_set(label_set)
            results[label_set["name"]] = figures
            print_table(f"Sessions — {label_set['name']} ({figures['files']} files, {figures['seconds']:.0f} s)", [
                ("segments", str(figures["segments"])),
                ("boundaries P / R / F1", f"{figures['boundary_precision']:.2f} / {figures['boundary_recall']:.2f} / "
                                          f"{figures['boundary_f1']:.2f}  ({figures['boundary_right']} right of "
                                          f"{figures['boundary_cuts']} cuts, {figures['boundary_boundaries']} labelled)"),
                ("lessons recall", f"{figures['lesson_recall']:.2f} ({figures['lesson_found']} of "
                                   f"{figures['lesson_lessons']})"),
                ("memories precision", f"{figures['lesson_precision']:.2f} ({figures['lesson_real']} of "
                                       f"{figures['lesson_memories']})"),
            ])
            if args.show:
                print("\nmissed lessons:")
                for lesson in missed:
                    print(f"- {lesson['id']} [{lesson['type']}] {lesson['lesson'][:150]}")
                print("\nmemories that state no labelled lesson:")
                for file, memory in stray:
                    print(f"- {file[:12]} [{memory['type']}] {memory['content'][:120]} | {memory['resolution'][:100]}")
        for name, folder in plain_sets:
            figures, missed_items, wrong = run_plain(folder, name)
            results[name] = figures
            print_table(f"Sessions — {name} ({figures['files']} files, {figures['seconds']:.0f} s)", [
                ("expected memories found", f"{figures['recall']:.2f} ({figures['found']} of {figures['expected']})"),
                ("forbidden memories learned", f"{figures['learned']} of {figures['forbidden']}"),
            ])
            if args.show:
                print("\nmissed:")
                print("\n".join(f"- {line}" for line in missed_items) or "- none")
                print("\nlearned what it should not:")
                print("\n".join(f"- {line}" for line in wrong) or "- none")
    write_results("sessions", results, as_json=args.json)


if __name__ == "__main__":
    main()
