from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.spaces import HubWideCommand
from ultron_site.portable import export_write


class Command(HubWideCommand, BaseCommand):
    help = (
        "Export memories (with their embeddings), contributions, clusters and skills as JSON lines "
        "to FILE, or to standard output with '-'. Read back with import_memories."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="where to write, or - for standard output")

    def handle(self, *args, file: str, **options):
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
