"""Django's ``shell``, run as the tables' owner (``core.spaces.maintenance``): an operator's
console sees every space, as ``psql`` with the hub's login would. Code that should see one
space opens it: ``with agents.scoping.in_space(space_id): ...``."""

from __future__ import annotations

from django.core.management.commands import shell

from core.spaces import HubWideCommand


class Command(HubWideCommand, shell.Command):
    pass
