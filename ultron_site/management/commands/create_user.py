from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from agents.services import SpaceError, parse_space_roles
from ultron_site.people import PersonError, person_create
from ultron_site.roles import ROLE_GROUPS


class Command(BaseCommand):
    help = ("Create a person who logs in to the admin site, as a curator or an admin; prints a "
            "password good for one login (or takes their own with --password-stdin).")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--role", required=True, choices=sorted(ROLE_GROUPS))
        parser.add_argument(
            "--space", action="append", default=[], metavar="SLUG[:ROLE]",
            help="a space they work in, with a role there (reader, writer, curator, admin; default: "
                 "the --role); repeatable. Without it: the shared space.")
        parser.add_argument(
            "--password-stdin", action="store_true",
            help="Read the person's own password from the first line of standard input (at least "
                 "12 characters, not a common or all-numeric one, not like the name) instead of "
                 "printing a one-time password.")

    def handle(self, *args, name: str, role: str, password_stdin: bool, space: list[str], **options):
        try:
            spaces = parse_space_roles(space, role) if space else None
        except SpaceError as exc:
            raise CommandError(str(exc)) from None
        password = None
        if password_stdin:
            # Only the line ending goes: spaces may belong to the password.
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password-stdin: standard input held no password")
        try:
            person = person_create(username=name, role=role, password=password, spaces=spaces)
        except PersonError as exc:
            raise CommandError(str(exc)) from None
        if password is not None:
            self.stdout.write(f"Created {person.role} '{person.username}' with the password given.\n")
            return
        self.stdout.write(
            f"Created {person.role} '{person.username}'.\n"
            f"Password (shown only now, good for one login): {person.password}\n"
            "Log in at /admin/: the first page asks you to choose your own password.\n"
        )
