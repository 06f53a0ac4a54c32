from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.spaces import HubWideCommand
from memories.services import EmbeddingSpaceMismatch, embedding_space_ensure


class Command(HubWideCommand, BaseCommand):
    help = "Stop with a clear message if stored vectors and the configured embedder disagree."

    def handle(self, *args, **options):
        try:
            embedding_space_ensure()
        except EmbeddingSpaceMismatch as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("embedding space ok")
