from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from agents.models import SHARED_SPACE
from agents.scoping import in_space
from agents.services import SpaceError, space_create, space_get
from core.spaces import HubWideCommand
from ultron_site.portable import ImportFailed, import_lines
from ultron_site.portable.codec import KINDS


class Command(HubWideCommand, BaseCommand):
    help = (
        "Import a file written by export_memories (or standard input with '-'). Idempotent: what "
        "the hub already holds is left as it is. Bad lines are reported by number and skipped; the "
        "exit status is non-zero when there were any."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the export, or - for standard input")
        parser.add_argument("--space", default=None,
                            help="the space everything goes to (default: shared); created if missing")

    def handle(self, *args, file: str, space: str | None, **options):
        try:
            target = space_create(slug=space) if space else space_get(slug=SHARED_SPACE)
        except SpaceError as exc:
            raise CommandError(str(exc)) from None
        try:
            # The target space only: what the import reads (is this memory here?) and writes.
            with in_space(target.pk):
                if file == "-":
                    report = import_lines(sys.stdin.buffer, space_id=target.pk)
                else:
                    path = Path(file).expanduser()
                    if not path.is_file():
                        raise CommandError(f"no such file: {path}")
                    with path.open("rb") as stream:
                        report = import_lines(stream, space_id=target.pk)
        except ImportFailed as exc:
            raise CommandError(f"import failed: {exc}") from None
        for kind in KINDS:
            self.stdout.write(f"{kind}: {report.added[kind]} added, {report.present[kind]} already there"
                              + (f", {report.extended[kind]} completed" if report.extended[kind] else ""))
        if report.reembedded:
            self.stdout.write(f"re-embedded {report.reembedded} memories with this hub's embedding model")
        if report.redacted:
            found = ", ".join(f"{tag}: {n}" for tag, n in sorted(report.redacted.items()))
            self.stdout.write(f"redacted on the way in: {found}")
        if report.agents_created:
            self.stdout.write(f"created agents (without tokens): {', '.join(report.agents_created)}")
        if report.clustered:
            self.stdout.write(f"put {report.clustered} memories the file left unclustered into clusters")
        for number, message in report.bad:
            self.stderr.write(f"line {number}: {message}")
        problems = []
        if report.bad:
            problems.append(f"{len(report.bad)} bad line(s) skipped (listed above); the other lines were imported")
        if not report.complete:
            problems.append("the file has no end line: it may have been cut short")
        if problems:
            raise CommandError("; ".join(problems))
