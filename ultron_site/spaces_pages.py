"""The spaces a person works in on the admin site: those where they are curator or admin
(every space, for a hub-wide admin), narrowed to one by the header's space switcher."""

from __future__ import annotations

from agents.models import Role
from agents.selectors import space_access

SESSION_KEY = "ultron_space"


def page_spaces(request) -> list[int]:
    """The ids the request's pages show and change."""
    access = space_access(user=request.user)
    ids = access.ids(Role.CURATOR)
    request.space_access = access
    chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    if chosen is not None and chosen in ids:
        return [chosen]
    return ids
