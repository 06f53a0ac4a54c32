"""Spaces on the admin site: which spaces a person's pages cover, and the pieces every admin of
a space's data uses (the querysets scoped in code, the space column and filter).

A person works in the spaces where they are curator or admin (every space, for a hub-wide
admin), or in the one they chose in the header's space switcher (``SESSION_KEY``). The request
middleware opens those spaces in the database (the second wall, ``core/spaces.py``); the admin
pages filter their querysets to the same ids (the first wall), so a forgotten filter in either
place still shows nothing of another team.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404

from agents.models import Role
from agents.selectors import SpaceAccess, space_access, spaces_listed
from core.errors import FORBIDDEN, NOT_FOUND

SESSION_KEY = "ultron_space"


def page_access(request) -> SpaceAccess:
    """The person's roles by space, read once per request (the middleware reads it first)."""
    access = getattr(request, "space_access", None)
    if access is None:
        access = space_access(user=getattr(request, "user", None))
        request.space_access = access
    return access


def curated_spaces(request) -> list[int]:
    """Every space the person curates or administers, whatever the switcher says."""
    return page_access(request).ids(Role.CURATOR)


def space_admin_ids(request) -> list[int]:
    """The spaces whose members the person manages: those they administer (every space, for a
    hub-wide admin)."""
    return page_access(request).ids(Role.ADMIN)


def page_spaces(request) -> list[int]:
    """The ids the request's pages show and change: the switcher's choice when it is still one
    of the person's spaces, else all of them."""
    cached = getattr(request, "_page_spaces", None)
    if cached is not None:
        return cached
    ids = curated_spaces(request)
    chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    if chosen is not None and chosen in ids:
        ids = [chosen]
    request._page_spaces = ids
    return ids


def page_space_chosen(request) -> int | None:
    """The one space the switcher narrowed the pages to, if any (and still the person's)."""
    chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    return chosen if chosen is not None and chosen in curated_spaces(request) else None


def space_slug_of(request, space_id: int) -> str:
    return page_access(request).slugs.get(space_id, str(space_id))


def space_choices(request, ids: list[int]) -> list[dict[str, Any]]:
    """``ids`` as ``{"id", "slug"}`` for a menu, by slug (no query: the roles hold the slugs)."""
    pairs = sorted((space_slug_of(request, i), i) for i in ids)
    return [{"id": i, "slug": slug} for slug, i in pairs]


class SpaceFilter(admin.SimpleListFilter):
    """One of the spaces the pages cover (offered only when they cover more than one)."""

    title = "space"
    parameter_name = "space"

    def lookups(self, request, model_admin) -> list[tuple[str, str]]:
        return [(str(s["id"]), s["slug"]) for s in space_choices(request, page_spaces(request))]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        # Not one of the person's spaces (or not a number): nothing, never another team's rows.
        if not value.isdigit() or int(value) not in page_spaces(request):
            return queryset.none()
        return queryset.filter(space_id=int(value))


class SpaceScopedAdmin:
    """For the admin of a model with a ``space``: rows of the request's spaces only (a row of
    another space is missing, as if it never existed), a space column, and a space filter when
    the person's pages cover more than one space. Mixed in before the ModelAdmin base."""

    space_column = True  # False: scoped, but no column (a page whose rows say their space elsewhere)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)  # type: ignore[misc]
        return queryset.filter(space_id__in=page_spaces(request))

    def get_list_select_related(self, request) -> Any:
        # The column's space joins the list's own relations (the changelist applies these only
        # when get_queryset selected none itself, so the join is asked for here).
        related = super().get_list_select_related(request)  # type: ignore[misc]
        if related is True:
            return True
        return (*(related or ()), "space")

    def get_list_display(self, request) -> Any:
        display = list(super().get_list_display(request))  # type: ignore[misc]
        if self.space_column and "space_slug" not in display:
            display.insert(1, "space_slug")
        return display

    def get_fields(self, request, obj=None) -> Any:
        # A page that lists the model's own fields shows the space by its slug: the raw
        # relation would link to the spaces page, which only admins may open.
        fields = super().get_fields(request, obj)  # type: ignore[misc]
        return ["space_slug" if name == "space" else name for name in fields]

    def get_readonly_fields(self, request, obj=None) -> Any:
        return (*super().get_readonly_fields(request, obj), "space_slug")  # type: ignore[misc]

    def get_list_filter(self, request) -> Any:
        filters = list(super().get_list_filter(request))  # type: ignore[misc]
        if len(page_spaces(request)) > 1:
            filters.insert(0, SpaceFilter)
        return filters

    @admin.display(description="space", ordering="space__slug")
    def space_slug(self, obj: Any) -> str:
        return obj.space.slug


def promote_target(request) -> Any:
    """The space a promote form names (POST ``space``, an id), or 403: the promote services
    check the person curates it."""
    value = request.POST.get("space", "").strip()
    found = spaces_listed(ids=[int(value)]) if value.isdigit() else []
    if not found:
        raise PermissionDenied("You do not curate that space.")
    return found[0]


def promote_refused(request, error: Any, back: Any) -> Any:
    """A promote service's refusal as the page answers it: a source the person does not curate
    is missing (404), a target they do not curate forbidden (403), anything else a message on
    the page they came from (``back``)."""
    if error.code == NOT_FOUND:
        raise Http404 from None
    if error.code == FORBIDDEN:
        raise PermissionDenied(error.message) from None
    messages.error(request, error.message)
    return back
