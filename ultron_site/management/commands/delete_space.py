from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.services import SpaceError, space_get
from core.spaces import HubWideCommand
from ultron_site.space_removal import space_contents, space_delete


class Command(HubWideCommand, BaseCommand):
    help = (
        "Delete a space with everything in it: memories, sessions, raw archives, jobs, clusters, skills, "
        "memberships. Without --yes it only says what would go. Export it first (export_memories --space)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--yes", action="store_true", help="delete (without it, nothing is changed)")

    def handle(self, *args, slug: str, yes: bool, **options):
        try:
            space = space_get(slug=slug)
            contents = space_delete(space=space) if yes else space_contents(space=space)
        except SpaceError as exc:
            raise CommandError(str(exc)) from None
        listed = "".join(f"  {table}: {count}\n" for table, count in contents.rows.items()) or "  no rows\n"
        verb = "Deleted" if yes else "Would delete"
        self.stdout.write(f"{verb} space '{contents.slug}': {contents.total} rows, {len(contents.spooled)} spooled "
                          f"archive files, {contents.members} memberships.\n{listed}")
        if not yes:
            self.stdout.write(f"Nothing changed. Run again with --yes to delete it "
                              f"(export_memories FILE --space {contents.slug} keeps a copy).\n")
