"""Django's ``migrate``, run as the tables' owner (``core.spaces.maintenance``): connections
otherwise run as the hub's role, which may not change the schema."""

from __future__ import annotations

from django.core.management.commands import migrate

from core.spaces import maintenance


class Command(migrate.Command):
    def handle(self, *args, **options):
        with maintenance():
            return super().handle(*args, **options)
