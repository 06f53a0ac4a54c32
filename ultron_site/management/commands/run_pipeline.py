from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from ultron_site import pipeline


class Command(BaseCommand):
    help = "Run the scheduled pipeline now: every step in order (--all) or one (--step NAME)."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--step", choices=pipeline.step_names())
        group.add_argument("--all", action="store_true")

    def handle(self, *args, step: str | None, all: bool, **options):
        if all:
            results = pipeline.run_pipeline()
        else:
            try:
                assert step is not None
                results = {step: pipeline.run_step(step)}
            except KeyError as exc:
                raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(results, indent=2, default=str))
