"""Admin building blocks every app's admin uses. They live in the bottom app so that any app
may import them without importing upwards."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails
from unfold.admin import ModelAdmin, TabularInline


class ReadOnlyAdmin(ModelAdmin):
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
