"""``ultron watch DIR``: re-upload session files as they grow.

Every ``interval`` seconds the directory is walked (the same files ``ingest`` takes) and each
file's size and modification time compared with what was last uploaded. A file that changed is
sent once it has stayed the same for ``settle`` seconds, so an agent writing a session line by
line causes one upload per pause, not one per line. The hub keeps the segments that did not
change and processes only the new ones; the same bytes again are ``unchanged``. Polling needs
nothing beyond the standard library and works on every file system.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ultron import sessions
from ultron.client import Ultron
from ultron.models import IngestResult

Signature = tuple[int, int]  # (mtime in ns, size)


@dataclass
class Watcher:
    client: Ultron
    directory: str
    settle: float = 5.0
    agent: str | None = None
    uploaded: dict[str, Signature] = field(default_factory=dict)
    pending: dict[str, tuple[Signature, float]] = field(default_factory=dict)

    def poll(self, now: float) -> list[tuple[sessions.LocalFile, Signature]]:
        """The files whose change has settled, with the signature they will be uploaded at."""
        due = []
        for item in sessions.collect([self.directory]):
            try:
                stat = os.stat(item.path)
            except FileNotFoundError:
                continue
            signature = (stat.st_mtime_ns, stat.st_size)
            if self.uploaded.get(item.name) == signature:
                self.pending.pop(item.name, None)
                continue
            seen = self.pending.get(item.name)
            if seen is None or seen[0] != signature:
                self.pending[item.name] = seen = (signature, now)
            if now - seen[1] >= self.settle:
                due.append((item, signature))
        return due

    def upload(self, due: list[tuple[sessions.LocalFile, Signature]]) -> IngestResult:
        result = self.client.ingest([str(item.path) for item, _ in due], agent_id=self.agent)
        for item, signature in due:
            self.uploaded[item.name] = signature
            self.pending.pop(item.name, None)
        return result

    def run(self, *, interval: float, once: bool, report: Callable[[IngestResult], None]) -> None:
        """Poll until interrupted; with ``once``, until every file present has been uploaded."""
        while True:
            due = self.poll(time.monotonic())
            if due:
                report(self.upload(due))
            elif once and not self.pending:
                return
            time.sleep(interval)
