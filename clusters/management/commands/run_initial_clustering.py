from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from clusters.services import clusters_rebuild
from core.spaces import HubWideCommand


class Command(HubWideCommand, BaseCommand):
    help = "Rebuild every cluster from the active memories (deterministic; also the repair tool)."

    def handle(self, *args, **options):
        started = time.monotonic()
        result = clusters_rebuild()
        self.stdout.write(f"{result['memories']} memories in {result['clusters']} clusters "
                          f"({time.monotonic() - started:.1f}s)")
