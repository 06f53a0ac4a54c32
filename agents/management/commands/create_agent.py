from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.services import SpaceError, agent_create, parse_space_roles, token_issue, token_lifetime


class Command(BaseCommand):
    help = "Create an agent (or reuse it) and print a new API token for it, once."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--staff", action="store_true", help="give the agent curator rights")
        parser.add_argument("--label", default="", help="a note stored with the token")
        parser.add_argument(
            "--space", action="append", default=[], metavar="SLUG[:ROLE]",
            help="a space the agent works in, with its role there (reader or writer, default writer); "
                 "repeatable; the first is where its writes go unless a request names another. "
                 "Without it: writer in the shared space.")
        parser.add_argument("--expires-days", type=int, default=None,
                            help="the token stops working after this many days "
                                 "(default: ULTRON_TOKEN_DAYS; 0: never)")

    def handle(self, *args, name: str, staff: bool, label: str, expires_days: int | None, space: list[str],
               **options):
        try:
            lifetime = token_lifetime(expires_days)
            spaces = parse_space_roles(space, "writer") if space else None
            agent = agent_create(name=name, staff=staff, spaces=spaces)
        except (ValueError, SpaceError) as exc:
            raise CommandError(str(exc)) from None
        issued = token_issue(agent=agent, label=label, lifetime=lifetime)
        expiry = f" It expires in {lifetime.days} day(s)." if lifetime else ""
        self.stderr.write(
            f"Agent {agent.name!r}{' (staff)' if agent.is_staff else ''}: new token below. "
            f"It is shown only this once; store it now.{expiry}"
        )
        self.stdout.write(issued.token)
