from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ultron_site.people import PersonError, person_create
from ultron_site.roles import ROLE_GROUPS


class Command(BaseCommand):
    help = "Create a person who logs in to the admin site, as a curator or an admin; prints a one-time password."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--role", required=True, choices=sorted(ROLE_GROUPS))

    def handle(self, *args, name: str, role: str, **options):
        try:
            person = person_create(username=name, role=role)
        except PersonError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Created {person.role} '{person.username}'.\n"
            f"Password (shown only now): {person.password}\n"
            "Log in at /admin/: the first page asks you to choose your own password.\n"
        )
