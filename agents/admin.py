from __future__ import annotations

from django.contrib import admin, messages
from unfold.admin import ModelAdmin

from agents.admin_tools import ReadOnlyTabularInline
from agents.models import Agent, ApiToken
from agents.services import token_issue, token_revoke


class ApiTokenInline(ReadOnlyTabularInline):
    model = ApiToken
    fields = ("prefix", "label", "created_at", "last_used_at", "revoked_at")


@admin.register(Agent)
class AgentAdmin(ModelAdmin):
    list_display = ("name", "is_staff", "created_at")
    search_fields = ("name",)
    readonly_fields = ("name", "user", "created_at")
    inlines = [ApiTokenInline]
    actions = ["issue_token", "revoke_tokens"]

    def has_add_permission(self, request) -> bool:
        return False  # agents are created with `manage.py create_agent`

    @admin.action(description="Issue a new token (shown once)")
    def issue_token(self, request, queryset):
        for agent in queryset:
            issued = token_issue(agent=agent, label=f"admin:{request.user.get_username()}")
            self.message_user(request, f"{agent.name}: {issued.token}  (shown only now)", messages.WARNING)

    @admin.action(description="Revoke all tokens")
    def revoke_tokens(self, request, queryset):
        count = 0
        for token in ApiToken.objects.filter(agent__in=queryset, revoked_at__isnull=True):
            token_revoke(token=token)
            count += 1
        self.message_user(request, f"revoked {count} token(s)")
