from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from agents.selectors import agent_by_name
from ingestion import services


class Command(BaseCommand):
    help = ("Ingest session files (.jsonl, .json, .traj, .md) or directories (admins, at the console) "
            "for an agent.")

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--agent", required=True, help="the agent the sessions belong to")
        parser.add_argument("--process", action="store_true",
                            help="segment, score and extract now instead of waiting for the pipeline")

    def handle(self, *args, paths: list[str], agent: str, process: bool, **options):
        owner = agent_by_name(name=agent)
        if owner is None:
            raise CommandError(f"no agent named {agent!r} (create it with create_agent)")
        try:
            # No ingest roots at the console: an admin there reads any path they can (flow.md#session-files).
            collected = services.paths_collect(paths, roots=None)
        except services.IngestError as exc:
            raise CommandError(exc.message) from None
        if not collected:
            raise CommandError("no session files found (.jsonl, .traj, .aider.chat.history.md, or .json that holds a session)")
        results = []
        for identity, path in tqdm(collected, desc="ingesting", unit="file", disable=None):
            _, [result] = services.files_ingest(agent=owner, files=[(identity, path.read_bytes())])
            results.append(result)
            # Only a new or changed file has anything to segment: nothing was queued for the others.
            if process and result.session_id and result.status in ("new", "changed"):
                services.session_process(session_id=result.session_id)
        counts: dict[str, int] = {}
        for result in results:
            counts[result.status] = counts.get(result.status, 0) + 1
        self.stdout.write(json.dumps({"files": len(results), **counts}, sort_keys=True))
        for result in results:
            if result.reason or result.malformed:
                self.stdout.write(f"  {result.name}: {result.status} {result.reason} malformed={result.malformed}")
