"""Admin pages of the site itself: pipeline runs, and people (users and roles) in the theme."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin as BaseGroupAdmin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.models import Group, User
from unfold.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm

from core.admin_tools import HubAdmin, ReadOnlyAdmin
from ultron_site.models import StepRun

# Registered again below with the theme's forms and the hub's lookup rules (HubAdmin).
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class UserAdmin(BaseUserAdmin, HubAdmin):
    form = UserChangeForm
    add_form = UserCreationForm
    change_password_form = AdminPasswordChangeForm
    list_display = ("username", "is_staff", "is_superuser", "role_list", "last_login")

    def get_queryset(self, request):
        # Agents' users (agent:NAME) are managed under Agents and tokens, not here.
        return super().get_queryset(request).exclude(username__startswith="agent:").prefetch_related("groups")

    @admin.display(description="roles")
    def role_list(self, user: User) -> str:
        return ", ".join(g.name for g in user.groups.all()) or "—"


@admin.register(Group)
class GroupAdmin(BaseGroupAdmin, HubAdmin):
    pass


@admin.register(StepRun)
class StepRunAdmin(ReadOnlyAdmin):
    list_display = ("step", "started_at", "finished_at", "ok", "short_error")
    list_filter = ("step", "ok")

    @admin.display(description="error")
    def short_error(self, run: StepRun) -> str:
        return run.error[:120]
