from __future__ import annotations

from django.core.management.base import BaseCommand

from core.spaces import HubWideCommand
from memories.services import memories_merge_retry


class Command(HubWideCommand, BaseCommand):
    help = "Retry the LLM merge of memories marked merge_pending."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=100)

    def handle(self, *args, limit: int, **options):
        result = memories_merge_retry(limit=limit)
        self.stdout.write(" ".join(f"{k}={v}" for k, v in result.items()))
