from __future__ import annotations

from django.core.management.base import BaseCommand

from core.spaces import HubWideCommand
from ultron_site.pipeline import SCHEDULE_NAME, schedule_register


class Command(HubWideCommand, BaseCommand):
    help = "Register (or update) the scheduled pipeline in django-q2. Safe to run repeatedly."

    def handle(self, *args, **options):
        schedule_register()
        self.stdout.write(f"schedule {SCHEDULE_NAME!r} registered")
