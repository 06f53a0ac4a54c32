from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from core.spaces import HubWideCommand
from memories.services import embedding_space_forget
from ultron_site.backup import BackupError, database_restore, describe


class Command(HubWideCommand, BaseCommand):
    help = (
        "Restore the hub's database from FILE (made by `manage.py backup`), then migrate it to "
        "this version. Refuses a database that already holds hub data unless --force."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--force", action="store_true",
                            help="replace the data the database holds now")

    def handle(self, *args, file: Path, force: bool, **options):
        try:
            result = database_restore(path=file, force=force)
        except BackupError as exc:
            raise CommandError(f"restore failed: {exc}") from None
        embedding_space_forget()  # what this process believed about the old data no longer holds
        replaced = ", ".join(f"{label}: {n}" for label, n in result.replaced.items())
        self.stdout.write(
            f"restored {file} in {result.seconds:.1f} s with {describe(result)}"
            + (f"; replaced {replaced}" if replaced else "")
        )
        if result.dropped:
            self.stdout.write(f"dropped tables the backup predates: {', '.join(result.dropped)}")
        self.stdout.write("migrating the restored database to this version:")
        # An older backup's schema is brought up to this version; tables it predates were dropped by the restore.
        call_command("migrate", interactive=False, verbosity=max(1, options["verbosity"]), stdout=self.stdout)
