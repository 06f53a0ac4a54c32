from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ultron_site.people import PersonError, password_reset


class Command(BaseCommand):
    help = ("Give a person of the admin site a new password good for one login (a forgotten one, "
            "or a one-time password already used); prints it. Lift a login lockout with "
            "axes_reset_username NAME.")

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name: str, **options):
        try:
            password = password_reset(username=name)
        except PersonError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"New password for '{name}' (shown only now, good for one login): {password}\n"
            "Log in at /admin/: the first page asks for a password of their own.\n"
        )
