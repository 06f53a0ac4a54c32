"""Admin building blocks every app's admin uses (the hub's ModelAdmin base, read-only admins and
inlines, links to a row's page that respect permissions). They live in ``core``, below every
app, so that any app's admin may import them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django_htmx.middleware import HtmxDetails
from unfold.admin import ModelAdmin, TabularInline

# Fields a query string may not filter on: their values are not typed text (an array, a JSON
# document, a vector), so "?tags=node" would reach the database as a malformed literal and fail
# there. A list filter declared for such a field (a tag filter) still works: it reads its own
# parameter before this check.
_UNFILTERABLE = ("ArrayField", "JSONField", "VectorField", "SearchVectorField", "HalfVectorField")


class HubAdmin(ModelAdmin):
    """The hub's admin pages: query-string lookups only on fields whose values are plain
    (an unknown or untyped one answers 400, never 500)."""

    def lookup_allowed(self, lookup, value, request=None) -> bool:
        name = lookup.split("__", 1)[0]
        try:
            field = self.model._meta.get_field(name)
        except Exception:  # not a field: Django's own rules decide
            return super().lookup_allowed(lookup, value, request)
        if type(field).__name__ in _UNFILTERABLE:
            return False
        return super().lookup_allowed(lookup, value, request)

    def history_view(self, request, object_id, extra_context=None):
        # Django looks the row up before asking whether the person may see the model at all, so a
        # person without the right learnt which ids exist (403) and which do not (redirect).
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return super().history_view(request, object_id, extra_context)


class ReadOnlyAdmin(HubAdmin):
    """Browse only: changes go through the service functions (redaction, re-embedding, dedup),
    which a plain admin form would bypass."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyTabularInline(TabularInline):
    """Rows shown under their parent, never added, changed or deleted there."""

    extra = 0
    can_delete = False
    per_page = 20  # the theme paginates inline rows: a memory with 1,000 contributions stays one page
    hide_title = True  # each row says what it is; the row object's name above it is noise

    def get_readonly_fields(self, request, obj=None):
        return self.fields or ()

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware (for type checking views)."""

    htmx: HtmxDetails


def viewer_keep(request: HttpRequest, obj: Any) -> Any:
    """Remember on the object (one per request) who is looking, for ``linked``: admin display
    methods get only the object, and the admin class itself is shared by every thread."""
    if obj is not None:
        obj.hub_viewer = request.user
    return obj


class ViewerLinks:
    """For admin pages whose display methods link related pages with ``linked``: the object
    shown remembers who is looking."""

    def get_object(self, request, object_id, from_field=None):
        return viewer_keep(request, super().get_object(request, object_id, from_field))  # type: ignore[misc]


def linked(obj: Any, permission: str, url_name: str, pk: Any, text: str) -> str:
    """A link to a related admin page if the person looking at ``obj`` may open it, else the
    plain text: a page never shows a link that answers 403 to whoever sees it."""
    if pk is None:
        return "—"
    viewer = getattr(obj, "hub_viewer", None)
    if viewer is None or not viewer.has_perm(permission):
        return text
    return format_html('<a class="hub-link" href="{}">{}</a>', reverse(url_name, args=[pk]), text)
