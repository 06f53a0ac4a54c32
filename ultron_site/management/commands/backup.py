from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.spaces import HubWideCommand
from ultron_site.backup import BackupError, database_backup, describe


class Command(HubWideCommand, BaseCommand):
    help = (
        "Back up the hub's whole database (embedded or DATABASE_URL) to FILE as a pg_dump "
        "custom-format archive. FILE appears only once the dump is complete."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options):
        try:
            result = database_backup(path=file)
        except BackupError as exc:
            raise CommandError(f"backup failed: {exc}") from None
        self.stdout.write(
            f"backed up to {result.path} ({result.size / 1e6:.1f} MB) in {result.seconds:.1f} s with {describe(result)}"
        )
