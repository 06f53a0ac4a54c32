"""The walk of one plain-text ingestion, module by module: how often its path returns to a
module it already passed through (a reader's measure of how much jumping around one change of
rule costs).

    .venv/bin/python bench/walk.py [--json]

It runs ``ingestion.services.text.text_ingest`` once on a short text (offline provider, a
throw-away database) under a profiler and records, in order, the *layer modules* the work is in
(services, judgements, selectors and the redaction policy: where rules live; models, providers,
detectors and utilities below them are not counted). Consecutive calls in one module are one
visit. Two counts:

- *re-entries*: a call into a module the path already left, from another module (the path
  bounces: services → selectors → judgements → selectors);
- *returns*: every visit to a module already visited, including control coming back to the
  caller after each call (the strictest reading: how often a reader goes back up).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, bench_database, django_setup, write_results  # noqa: E402

TEXT = ("Our CI builds failed with 'ModuleNotFoundError: No module named yaml' after the base image "
        "update. Adding PyYAML to requirements.txt fixed it. Lesson: pin every runtime dependency "
        "explicitly instead of relying on what the image happens to ship.")

# Where a rule lives: a service, a judgement, a selector, the redaction policy.
LAYER = re.compile(r"^(?:[a-z_]+)/(?:services|judgements|selectors)(?:/|\.py$)|^memories/redaction/policy\.py$")


def walk(run) -> tuple[list[str], list[str]]:
    """The layer modules ``run()`` passes through (consecutive repeats joined), and the modules
    entered by a call from another module, in order (repeats from one caller joined)."""
    visits: list[str] = []
    entries: list[str] = []
    stack: list[str | None] = []

    def module_of(frame) -> str | None:
        path = Path(frame.f_code.co_filename)
        try:
            rel = path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return None
        return rel if LAYER.match(rel) else None

    def current() -> str | None:
        return next((m for m in reversed(stack) if m), None)

    def note() -> None:
        here = current()
        if here and (not visits or visits[-1] != here):
            visits.append(here)

    def profile(frame, event, arg):
        if event == "call":
            caller = current()
            stack.append(module_of(frame))
            here = current()
            if here and here != caller and (not entries or entries[-1] != here):
                entries.append(here)
            note()
        elif event == "return" and stack:
            stack.pop()
            note()

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return visits, entries


def returns(visits: list[str]) -> int:
    seen: set[str] = set()
    count = 0
    for module in visits:
        count += module in seen
        seen.add(module)
    return count


def text_ingest_walk() -> tuple[list[str], list[str]]:
    from ingestion.services.text import text_ingest

    text_ingest(agent=None, text=TEXT)  # warm: models loaded, caches filled, the space adopted
    return walk(lambda: text_ingest(agent=None, text=TEXT + " (again, with a different ending)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django_setup()
    with bench_database():
        visits, entries = text_ingest_walk()
    print("entered by calls: " + " -> ".join(entries))
    print(f"\nmodules: {len(set(visits))}, re-entries by a call: {returns(entries)}, "
          f"returns counting each return to the caller: {returns(visits)}")
    write_results("walk", {"visits": visits, "entries": entries, "reentries": returns(entries),
                           "returns": returns(visits)}, as_json=args.json)


if __name__ == "__main__":
    main()
