from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from agents.scoping import in_space
from agents.selectors import agent_by_name
from agents.services import SpaceError, space_get
from core.spaces import HubWideCommand
from ingestion import services


class Command(HubWideCommand, BaseCommand):
    help = ("Ingest session files (.jsonl, .json, .traj, .md) or directories (admins, at the console) "
            "for an agent.")

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--agent", required=True, help="the agent the sessions belong to")
        parser.add_argument("--space", default=None,
                            help="the space the sessions go to (default: the agent's default space)")
        parser.add_argument("--process", action="store_true",
                            help="segment, score and extract now instead of waiting for the pipeline")

    def handle(self, *args, paths: list[str], agent: str, process: bool, space: str | None, **options):
        owner = agent_by_name(name=agent)
        if owner is None:
            raise CommandError(f"no agent named {agent!r} (create it with create_agent)")
        try:
            target = space_get(slug=space) if space else owner.default_space
        except SpaceError as exc:
            raise CommandError(str(exc)) from None
        if target is None:
            raise CommandError(f"agent {agent!r} has no default space: name one with --space")
        try:
            # No ingest roots at the console: an admin there reads any path they can (flow.md#session-files).
            collected = services.paths_collect(paths, roots=None)
        except services.IngestError as exc:
            raise CommandError(exc.message) from None
        if not collected:
            raise CommandError("no session files found (.jsonl, .traj, .aider.chat.history.md, or .json that holds a session)")
        results = []
        for identity, path in tqdm(collected, desc="ingesting", unit="file", disable=None):
            with in_space(target.pk):  # the space's rows only, as an API ingest
                _, [result] = services.files_ingest(agent=owner, files=[(identity, path.read_bytes())], space=target)
            results.append(result)
            # Only a new or changed file has anything to segment: nothing was queued for the others.
            if process and result.session_id and result.status in ("new", "changed"):
                with in_space(target.pk):
                    services.session_process(session_id=result.session_id)
        counts: dict[str, int] = {}
        for result in results:
            counts[result.status] = counts.get(result.status, 0) + 1
        self.stdout.write(json.dumps({"files": len(results), **counts}, sort_keys=True))
        for result in results:
            if result.reason or result.malformed:
                self.stdout.write(f"  {result.name}: {result.status} {result.reason} malformed={result.malformed}")
