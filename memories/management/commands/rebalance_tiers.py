from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from core.spaces import HubWideCommand
from memories.services import tiers_rebalance


class Command(HubWideCommand, BaseCommand):
    help = "Re-tier active memories by hits (HOT/WARM/COLD) and archive stale COLD ones."

    def handle(self, *args, **options):
        started = time.monotonic()
        result = tiers_rebalance()
        self.stdout.write(
            f"hot={result.hot} warm={result.warm} cold={result.cold} "
            f"changed={result.changed} archived={result.archived} "
            f"in {time.monotonic() - started:.2f}s"
        )
