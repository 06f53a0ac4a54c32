from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from core.spaces import HubWideCommand
from ingestion import training


def _score(value: str) -> float:
    try:
        score = float(value)
    except ValueError:
        raise CommandError(f"--min-score: {value!r} is not a number") from None
    if not 0.0 <= score <= 1.0:
        raise CommandError("--min-score: must be between 0 and 1")
    return score


def _since(value: str) -> datetime:
    try:
        moment = parse_datetime(value)
        if moment is None:
            day = parse_date(value)
            moment = datetime(day.year, day.month, day.day) if day else None
    except ValueError:
        moment = None
    if moment is None:
        raise CommandError(f"--since: {value!r} is not an ISO 8601 date or date-time")
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


class Command(HubWideCommand, BaseCommand):
    help = ("Write the task segments scoring at least --min-score (default ULTRON_SFT_MIN_SCORE) as "
            "chat fine-tuning JSONL, redacted, one {\"messages\": [...]} per segment, to FILE ('-': standard "
            "output).")

    def add_arguments(self, parser):
        parser.add_argument("file", help="where to write the JSONL ('-' for standard output)")
        parser.add_argument("--min-score", help="lowest segment score exported (0 to 1)")
        parser.add_argument("--task-type", choices=training.TASK_TYPES, help="only segments of this task type")
        parser.add_argument("--since", help="only segments created at or after this ISO 8601 date or date-time "
                                            "(UTC if no zone)")

    def handle(self, *args, file: str, min_score: str | None, task_type: str | None, since: str | None, **options):
        lines = training.sft_lines(
            min_score=_score(min_score) if min_score is not None else settings.ULTRON_SFT_MIN_SCORE,
            task_type=task_type, since=_since(since) if since else None,
        )
        count = 0
        if file == "-":
            for line in lines:
                self.stdout.write(line, ending="")
                count += 1
        else:
            # Written beside the target and renamed at the end: a failed export leaves no half file.
            target = Path(file)
            partial = target.with_name(target.name + ".partial")
            with partial.open("w", encoding="utf-8") as out:
                for line in lines:
                    out.write(line)
                    count += 1
            partial.replace(target)
        self.stderr.write(f"{count} segment(s) exported")
