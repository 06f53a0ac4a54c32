from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from core.spaces import HubWideCommand
from ultron_site import pipeline


class Command(HubWideCommand, BaseCommand):
    help = (
        "Run the scheduled pipeline now: every step in order (--all) or one (--step NAME). "
        "Exits non-zero, naming the failed steps, when any step failed."
    )

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--step", choices=pipeline.step_names())
        group.add_argument("--all", action="store_true")

    def handle(self, *args, step: str | None, all: bool, **options):
        if all:
            results = pipeline.run_pipeline()
        else:
            assert step is not None
            try:
                function_result = pipeline.run_step(step)
            except Exception as exc:
                raise CommandError(f"pipeline step failed: {step}: {type(exc).__name__}: {exc}") from exc
            results = {step: function_result}
        self.stdout.write(json.dumps(results, indent=2, default=str))
        # The JSON goes out first either way; a cron job or a script reads the exit status.
        failed = pipeline.failed_steps(results)
        if failed:
            raise CommandError(f"pipeline steps failed: {', '.join(failed)}")
