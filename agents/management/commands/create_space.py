from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.services import SpaceError, space_create


class Command(BaseCommand):
    help = "Create a space (one team's memories, sessions, clusters and skills), or rename one."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="letters, digits, '-' or '_' (how requests and URLs name it)")
        parser.add_argument("--name", default="", help="a name for people (default: the slug)")
        parser.add_argument("--description", default="")

    def handle(self, *args, slug: str, name: str, description: str, **options):
        try:
            space = space_create(slug=slug, name=name, description=description)
        except SpaceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Space '{space.slug}' ({space.name}).\n")
