from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand

from core.spaces import HubWideCommand
from memories.services import memories_reembed


class Command(HubWideCommand, BaseCommand):
    help = "Re-embed every memory with the configured embedding model (after changing it)."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=256)

    def handle(self, *args, batch_size: int, **options):
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            sys.stderr.write(f"\r  re-embedded {done}/{total}")
            sys.stderr.flush()

        count = memories_reembed(batch_size=batch_size, progress=progress)
        sys.stderr.write("\n")
        self.stdout.write(f"re-embedded {count} memories in {time.monotonic() - started:.1f}s")
