from __future__ import annotations

import datetime
import shlex
import uuid

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from agents.selectors import agent_by_name
from core.spaces import HubWideCommand
from memories.services.holds import HoldError, writer_hold, writer_hold_undo

BY = "manage.py hold_writer"


def _since(value: str) -> datetime.datetime:
    """An ISO date-time (a naive one read in the hub's time zone) or a date (its midnight)."""
    moment = parse_datetime(value)
    if moment is None:
        day = parse_date(value)
        if day is None:
            raise ValueError(value)
        moment = datetime.datetime.combine(day, datetime.time())
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


class Command(HubWideCommand, BaseCommand):
    help = (
        "Take back everything one agent wrote (in every space; since --since): its served and superseded "
        "memories are held, served to nobody but it until a curator decides. --revoke-tokens also revokes "
        "its API tokens. Prints the batch id; --undo BATCH puts that batch back."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", help="the agent's name (not needed with --undo)")
        parser.add_argument("--since", help="only what it wrote from this ISO date-time (or date) on")
        parser.add_argument("--revoke-tokens", action="store_true", help="also revoke the agent's API tokens")
        parser.add_argument("--undo", metavar="BATCH", help="put back what the hold with this batch id held")

    def handle(self, *args, name: str | None, since: str | None, revoke_tokens: bool, undo: str | None, **options):
        if undo is not None:
            self._undo(undo, name=name, since=since, revoke_tokens=revoke_tokens)
            return
        if not name:
            raise CommandError("name the agent whose memories to hold (or --undo BATCH)")
        agent = agent_by_name(name=name)
        if agent is None:
            raise CommandError(f"no agent named {name!r}")
        try:
            start = _since(since) if since else None
        except ValueError:
            raise CommandError(f"--since {since!r} is not an ISO date-time (e.g. 2026-11-27T09:30:00+00:00)") from None
        result = writer_hold(agent=agent, by=BY, since=start, revoke_tokens=revoke_tokens)
        scope = f" since {start.isoformat()}" if start else ""
        self.stdout.write(f"Held {len(result.held)} memories {agent.name} wrote{scope}.")
        if revoke_tokens:
            self.stdout.write(f"Revoked {result.tokens_revoked} API tokens.")
        self.stdout.write(f"Batch: {result.batch}")
        self.stdout.write(f"Undo with: manage.py hold_writer {shlex.quote(agent.name)} --undo {result.batch}")
        if result.merged_into:
            self.stdout.write(f"Its uploads were merged into {len(result.merged_into)} memories of other writers, "
                              "still served (split its contributions back out of them in the admin):")
            for memory_id in result.merged_into:
                self.stdout.write(f"  {memory_id}")

    def _undo(self, batch: str, *, name: str | None, since: str | None, revoke_tokens: bool) -> None:
        if since or revoke_tokens:
            raise CommandError("--undo takes no --since or --revoke-tokens (revoked tokens stay revoked)")
        if name and agent_by_name(name=name) is None:
            raise CommandError(f"no agent named {name!r}")
        try:
            batch_id = uuid.UUID(batch)
        except ValueError:
            raise CommandError(f"--undo {batch!r} is not a batch id (a UUID, as the hold printed it)") from None
        try:
            restored = writer_hold_undo(batch=batch_id, user=BY)
        except HoldError as exc:
            raise CommandError(f"batch {batch_id}: {exc}") from None
        self.stdout.write(f"Put back {restored} memories of batch {batch_id} "
                          "(those a curator decided since stay as decided; revoked tokens stay revoked).")
