from __future__ import annotations

import contextlib
import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from agents.services import SpaceError, space_get
from core.spaces import HubWideCommand, space_scope
from ultron_site.portable import export_write


class Command(HubWideCommand, BaseCommand):
    help = (
        "Export memories (with their embeddings), contributions, clusters and skills as JSON lines "
        "to FILE, or to standard output with '-'. Read back with import_memories."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="where to write, or - for standard output")
        parser.add_argument("--space", action="append", default=[], metavar="SLUG",
                            help="export this space only (repeatable; default: every space)")

    def handle(self, *args, file: str, space: list[str], **options):
        try:
            ids = [space_get(slug=slug).pk for slug in space]
        except SpaceError as exc:
            raise CommandError(str(exc)) from None
        # Read through the database's scope: the rows of the spaces asked for, nothing else.
        with space_scope(read=ids) if ids else contextlib.nullcontext():
            self._export(file)

    def _export(self, file: str) -> None:
        if file == "-":
            counts = export_write(self.stdout)  # each line ends in a newline: nothing is added
            self.stderr.write(_summary(counts, "standard output"))
            return
        path = Path(file).expanduser().absolute()
        if not path.parent.is_dir():
            raise CommandError(f"cannot write {path}: the directory {path.parent} does not exist")
        partial = path.with_name(path.name + ".partial")
        try:
            # Memories are redacted but still the hub's knowledge: readable by the owner only.
            fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as out:
                counts = export_write(out)
            # Renamed only once complete: a failed export leaves no file under the name asked for.
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
        self.stdout.write(_summary(counts, str(path)))


def _summary(counts: dict[str, int], where: str) -> str:
    return f"exported to {where}: " + ", ".join(f"{kind}: {n}" for kind, n in counts.items())
