"""The spaces a person works in on the admin site: those where they are curator or admin
(every space, for a hub-wide admin), narrowed to one by the header's space switcher.

The rule itself lives beside the space models (``agents.admin_spaces``), where every app's admin
pages read it; this module is the site's side of it: the switcher in the header and the view
that stores its choice in the person's session."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import BadRequest, PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from agents.admin_spaces import (
    SESSION_KEY,
    curated_spaces,
    page_space_chosen,
    page_spaces,
    space_choices,
    space_slug_of,
)

__all__ = ["SESSION_KEY", "page_spaces", "space_switch", "switcher_context"]


def switcher_context(request: HttpRequest) -> dict[str, Any]:
    """What the header's switcher shows: the person's spaces (none when they have only one, and
    the switcher is not shown) and the current choice. No query: the middleware read the roles."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {"hub_spaces": []}
    ids = curated_spaces(request)
    if len(ids) < 2:
        return {"hub_spaces": []}
    chosen = page_space_chosen(request)
    return {"hub_spaces": space_choices(request, ids), "hub_space_chosen": chosen,
            "hub_space_label": space_slug_of(request, chosen) if chosen is not None else "All my spaces"}


def space_switch(request: HttpRequest) -> HttpResponse:
    """Store the switcher's choice (POST ``space``: a space id, or empty for all the person's
    spaces) and go back to ``next``. A space the person does not curate is refused (403) and
    the choice is left as it was."""
    value = request.POST.get("space", "").strip()
    if value:
        if not value.isdigit():
            raise BadRequest("space: a space id, or empty for all your spaces")
        if int(value) not in curated_spaces(request):
            raise PermissionDenied("You do not curate that space.")
        request.session[SESSION_KEY] = int(value)
    else:
        request.session.pop(SESSION_KEY, None)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        back = reverse("admin:index")
    return HttpResponseRedirect(back)
