"""Django's ``flush`` (empties every table; the test runner's clean-up between database tests),
run as the tables' owner (``core.spaces.maintenance``): the hub's role may not truncate."""

from __future__ import annotations

from django.core.management.commands import flush

from core.spaces import maintenance


class Command(flush.Command):
    def handle(self, *args, **options):
        with maintenance():
            return super().handle(*args, **options)
