from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from core.spaces import HubWideCommand
from memories.services import embedding_space_calibrate
from memories.thresholds import MODEL_THRESHOLDS, VALUES


class Command(HubWideCommand, BaseCommand):
    help = ("Fit the configured embedding space's thresholds (automatic merge, merge candidate, cluster join "
            "and merge, segmentation shift, search relevance floor) on the labelled sets in tests/data, print "
            "what each is expected to give per set, and store them for the space.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="print the fitted values, store nothing")

    def handle(self, *args, dry_run: bool, **options):
        started = time.monotonic()
        outcome = embedding_space_calibrate(store=not dry_run)
        provider, model, dimensions, text_format = outcome.space
        row = MODEL_THRESHOLDS.get(model)
        self.stdout.write(f"Embedding space {provider}:{model}, {dimensions} dimensions, text format {text_format}")
        for name in VALUES:
            fitted = outcome.calibration.fitted[name]
            table = f" (table: {getattr(row, name):.3f})" if row is not None else ""
            warning = "" if fitted.reached else "  [target not reached: the nearest value]"
            self.stdout.write(f"\n{name} = {fitted.value:.3f}{table}{warning}\n  rule: {fitted.rule}")
            for result in fitted.sets:
                self.stdout.write(f"  [{result.name}] {result.line}")
        values = " ".join(f"{name}={outcome.calibration.fitted[name].value:.3f}" for name in VALUES)
        where = "nothing stored (--dry-run)" if dry_run else "stored for this embedding space"
        self.stdout.write(f"\n{values}\n{where}; {time.monotonic() - started:.0f} s")
