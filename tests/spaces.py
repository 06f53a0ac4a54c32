"""Spaces in tests: people made by hand (not by ``person_create``) need a membership to see anything."""

from __future__ import annotations

from agents.models import Role
from agents.selectors import space_shared
from agents.services import membership_set


def curate_shared(user, role: str = Role.CURATOR) -> None:
    """``user`` curates the shared space, as every person created before spaces does."""
    membership_set(space=space_shared(), user=user, role=role)


def as_hub(function):
    """``function`` run as the hub's upkeep runs (past the spaces' row-level security): for a
    test's own threads, whose new connections start with no spaces at all."""
    from core.spaces import maintenance

    def run(*args, **kwargs):
        with maintenance():
            return function(*args, **kwargs)

    return run
