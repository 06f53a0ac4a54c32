"""Spaces and their members on the admin site.

Hub-wide admins (superusers) list, create and edit spaces; the admin of a space sees it and
manages its members: who may read, write, curate or administer it, and how far the hub trusts
what each writes (``trusted``, or ``reviewed``: everything it writes is held for a curator). A
space's form also sets the trust new members get and the hosts its memories may link to. Every
change goes through the agents' services (``space_create``, ``space_edit``, ``membership_set``,
``membership_remove``), which keep their rules (an agent is a reader or a writer, never more; a
new member takes the space's default trust)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from agents.admin_spaces import space_admin_ids
from agents.models import Membership, Space, Trust
from agents.services import (
    SpaceError,
    membership_remove,
    membership_role_check,
    membership_set,
    space_create,
    space_edit,
    space_hosts_clean,
    space_slug_clean,
)
from core.admin_tools import HubAdmin


def _hub_admin(request) -> bool:
    return bool(request.user.is_active and request.user.is_superuser)


class HostsField(forms.CharField):
    """Host names, one a line (a list in the model)."""

    widget = forms.Textarea(attrs={"rows": 4})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list | tuple) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        try:
            return space_hosts_clean(text.replace(",", "\n").splitlines())
        except SpaceError as exc:
            raise forms.ValidationError(str(exc)) from None


class SpaceForm(forms.ModelForm):
    allowed_hosts = HostsField(
        required=False, label="Allowed hosts",
        help_text="One host a line (docs.example.com). Its memories may link to these besides the hub's own list; "
                  "a host allows its subdomains. A link elsewhere that asks the reader to fetch or send is held.")

    class Meta:
        model = Space
        fields = ("slug", "name", "description", "default_trust", "allowed_hosts")
        help_texts = {"slug": "How agents and the API name the space: letters, digits, '-' and '_'. "
                              "It never changes once the space exists.",
                      "default_trust": "The trust a new member gets: reviewed holds everything it writes until "
                                       "a curator approves it. Existing members keep theirs."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "default_trust" in self.fields:  # left out (a form of before trust existed): trusted
            self.fields["default_trust"].required = False

    def clean_slug(self) -> str:
        try:
            return space_slug_clean(self.cleaned_data["slug"])
        except SpaceError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(Space)
class SpaceAdmin(HubAdmin):
    form = SpaceForm
    list_display = ("slug", "name", "members", "default_trust", "hosts", "created_at")
    search_fields = ("slug", "name")

    def get_queryset(self, request):
        spaces = super().get_queryset(request).annotate(member_count=Count("memberships"))
        return spaces if _hub_admin(request) else spaces.filter(pk__in=space_admin_ids(request))

    def get_readonly_fields(self, request, obj=None) -> Any:
        return ("slug",) if obj is not None else ()

    def has_module_permission(self, request) -> bool:
        return bool(space_admin_ids(request))

    def has_view_permission(self, request, obj=None) -> bool:
        ids = space_admin_ids(request)
        return bool(ids) if obj is None else obj.pk in ids

    def has_add_permission(self, request) -> bool:
        return _hub_admin(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return _hub_admin(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a space's memories, sessions and skills would go with it: not a click

    @admin.display(description="members", ordering="member_count")
    def members(self, space: Any) -> str:
        url = reverse("admin:agents_membership_changelist") + f"?space__id__exact={space.pk}"
        return format_html('<a class="hub-link" href="{}">{}</a>', url, space.member_count)

    @admin.display(description="allowed hosts")
    def hosts(self, space: Space) -> str:
        return ", ".join(space.allowed_hosts) or "—"

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        trust: str = data.get("default_trust") or Trust.TRUSTED
        hosts: list[str] = data.get("allowed_hosts") or []
        if change:
            space_edit(space=obj, name=data["name"], description=data["description"], default_trust=trust,
                       allowed_hosts=hosts)
            return
        created = space_create(slug=data["slug"], name=data["name"], description=data["description"])
        space_edit(space=created, name=created.name, description=created.description, default_trust=trust,
                   allowed_hosts=hosts)
        obj.pk, obj.created_at = created.pk, created.created_at  # the page links and logs the stored row


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("space", "user", "role", "trust")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "trust" in self.fields:
            # A new member takes its space's default trust unless one is chosen here; left out of a
            # change, a member keeps its own.
            new = not self.instance.pk
            self.fields["trust"] = forms.TypedChoiceField(
                choices=[("", "the space's default"), *Trust.choices] if new else Trust.choices, required=False,
                empty_value=None, initial=None if new else self.instance.trust,
                help_text="reviewed: everything this member writes is held until a curator approves it.")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        user = data.get("user") or (self.instance.user if self.instance.pk else None)
        if user is not None and data.get("role"):
            try:
                membership_role_check(user=user, role=data["role"])
            except SpaceError as exc:
                self.add_error("role", str(exc))
        return data


class AdministeredSpaceFilter(admin.RelatedFieldListFilter):
    """The spaces whose members the person manages, not every space of the hub."""

    def field_choices(self, field, request, model_admin):
        ids = space_admin_ids(request)
        return [(space.pk, space.slug) for space in Space.objects.filter(pk__in=ids).order_by("slug")]


@admin.register(Membership)
class MembershipAdmin(HubAdmin):
    form = MembershipForm
    list_display = ("user", "kind", "space", "role", "trust", "created_at")
    list_editable = ("trust",)
    list_filter = (("space", AdministeredSpaceFilter), "role", "trust")
    list_select_related = ("space", "user", "user__agent")
    search_fields = ("user__username",)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(space_id__in=space_admin_ids(request))

    def get_fields(self, request, obj=None) -> Any:
        # A membership's space and user are shown as text once it exists: links would lead to
        # pages (people, spaces) its viewer may not open.
        return ("space_slug", "member", "role", "trust") if obj is not None else ("space", "user", "role", "trust")

    def get_readonly_fields(self, request, obj=None) -> Any:
        return ("space_slug", "member") if obj is not None else ()

    @admin.display(description="space")
    def space_slug(self, membership: Membership) -> str:
        return membership.space.slug

    @admin.display(description="user")
    def member(self, membership: Membership) -> str:
        return membership.user.get_username()

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "space":
            kwargs["queryset"] = Space.objects.filter(pk__in=space_admin_ids(request)).order_by("slug")
        elif db_field.name == "user":
            kwargs["queryset"] = get_user_model().objects.filter(is_active=True).order_by("username")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def _manages(self, request, obj) -> bool:
        ids = space_admin_ids(request)
        return bool(ids) if obj is None else obj.space_id in ids

    def has_module_permission(self, request) -> bool:
        return bool(space_admin_ids(request))

    def has_view_permission(self, request, obj=None) -> bool:
        return self._manages(request, obj)

    def has_add_permission(self, request) -> bool:
        return self._manages(request, None)

    def has_change_permission(self, request, obj=None) -> bool:
        return self._manages(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._manages(request, obj)

    @admin.display(description="kind")
    def kind(self, membership: Membership) -> str:
        return "agent" if hasattr(membership.user, "agent") else "person"

    def save_model(self, request, obj, form, change):
        # A new member without a chosen trust takes the space's default (the service's rule); the
        # list's trust column edits existing members through here too.
        trust = form.cleaned_data.get("trust") if "trust" in form.cleaned_data else obj.trust
        stored = membership_set(space=obj.space, user=obj.user, role=obj.role, trust=trust or None)
        obj.pk, obj.created_at, obj.trust = stored.pk, stored.created_at, stored.trust

    def delete_model(self, request, obj):
        membership_remove(space=obj.space, user=obj.user)

    def delete_queryset(self, request, queryset):
        # One by one through the service, never the admin's own bulk delete.
        for membership in queryset.select_related("space", "user"):
            membership_remove(space=membership.space, user=membership.user)
