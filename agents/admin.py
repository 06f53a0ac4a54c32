"""Agents and their API tokens (admins): create an agent, issue a token (shown once, on the
page that issued it — never in a message or a log), revoke one token or all of them.

Apps above this one add panels to an agent's page (``agent_page_panel_register``: the memory
service's "hold everything this agent wrote"), without this app knowing them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from agents import admin_members  # noqa: F401  (registers the spaces and members pages)
from agents.admin_spaces import page_space_chosen, space_admin_ids, space_choices
from agents.models import Agent, ApiToken, Role, Space
from agents.selectors import agents_within_spaces
from agents.services import agent_create, token_issue, token_lifetime, token_revoke
from core.admin_tools import HubAdmin, ReadOnlyTabularInline, ViewerLinks, linked

AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")

# Panels apps above this one add to an agent's page: name -> (heading, render(request, agent)).
_PANELS: dict[str, tuple[str, Callable[[HttpRequest, Agent], str]]] = {}


def agent_page_panel_register(name: str, title: str, render: Callable[[HttpRequest, Agent], str]) -> None:
    """Add a panel named ``name`` (its HTML id) with heading ``title`` to the agent's page:
    ``render`` returns safe HTML (its own forms: the panel sits after the page's form), or ""
    when it has nothing to show that person. It checks the person's rights itself."""
    _PANELS[name] = (title, render)


def agent_page_panels(request: HttpRequest, agent: Agent) -> list[dict[str, Any]]:
    panels = []
    for name, (title, render) in _PANELS.items():
        html = render(request, agent)
        if html:
            panels.append({"name": name, "title": title, "html": html})
    return panels


class ApiTokenInline(ReadOnlyTabularInline):
    model = ApiToken
    fields = ("prefix", "label", "created_at", "last_used_at", "expires_at", "revoked_at", "revoke")
    readonly_fields = fields

    @admin.display(description="")
    def revoke(self, token: ApiToken) -> str:
        if token.revoked_at:
            return "revoked"  # the button below submits a form outside the agent's page form
        return format_html('<button type="submit" class="hub-button hub-button-quiet" form="revoke-{}">Revoke</button>',
                           token.pk)


class AgentForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Letters, digits and . _ - @; unique.")
    label = forms.CharField(max_length=100, required=False, help_text="What the first token is for (optional).")
    staff = forms.BooleanField(required=False, label="Curator rights in the API",
                               help_text="May list archived memories and ingest for other agents.")

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not AGENT_NAME.match(name):
            raise forms.ValidationError("Use letters, digits and . _ - @ only, starting with a letter or digit.")
        if Agent.objects.filter(name=name).exists():
            raise forms.ValidationError(f"An agent named {name!r} already exists.")
        return name


@admin.register(Agent)
class AgentAdmin(ViewerLinks, HubAdmin):
    list_display = ("name", "is_staff", "created_at", "active_tokens")
    search_fields = ("name",)
    readonly_fields = ("name", "user_account", "created_at")
    fields = readonly_fields
    inlines = [ApiTokenInline]
    actions = ["issue_token", "revoke_tokens"]
    change_form_template = "admin/agents/agent/change_form.html"

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # nothing on an agent is edited here; its tokens have their own actions

    def get_queryset(self, request):
        # A space's admin sees (and gives tokens to) the agents that work in their spaces only:
        # a token opens every space of its agent. Hub-wide admins see every agent.
        agents = super().get_queryset(request)
        if request.user.is_superuser:
            return agents
        return agents.filter(pk__in=agents_within_spaces(space_ids=space_admin_ids(request)).values("pk"))

    @admin.display(description="user account")
    def user_account(self, agent: Agent) -> str:
        return linked(agent, "auth.view_user", "admin:auth_user_change", agent.user_id, agent.user.username)

    def has_token_permission(self, request) -> bool:
        return request.user.has_perm("agents.add_apitoken") and request.user.has_perm("agents.change_apitoken")

    @admin.display(description="active tokens")
    def active_tokens(self, agent: Agent) -> int:
        # Revoked and expired tokens no longer open the API (agents/auth.py): neither counts as active.
        return agent.tokens.active().count()

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None) -> HttpResponse:
        agent = self.get_object(request, object_id)
        panels = agent_page_panels(request, agent) if agent is not None and self.has_view_permission(request, agent) else []
        return super().change_view(request, object_id, form_url, {"agent_panels": panels, **(extra_context or {})})

    def get_urls(self):
        return [
            path("token/<int:token_id>/revoke/", self.admin_site.admin_view(require_POST(self.revoke_view)),
                 name="agents_apitoken_revoke"),
            *super().get_urls(),
        ]

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context=None) -> HttpResponse:
        """Create an agent and its first token; the token is shown on this response only."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = AgentForm(request.POST or None)
        # Every agent is made in a space it writes to, chosen here: a space's admin among their own
        # spaces, a hub admin among all, starting from the one the header's switcher is on (an agent
        # made while another team's space is shown used to land in the shared space unseen).
        ids = list(Space.objects.values_list("pk", flat=True)) if request.user.is_superuser else space_admin_ids(request)
        spaces = space_choices(request, ids)
        if spaces:
            form.fields["space"] = forms.TypedChoiceField(
                coerce=int, required=False, empty_value=None, choices=[(s["id"], s["slug"]) for s in spaces],
                initial=page_space_chosen(request) or (spaces[0]["id"] if len(spaces) == 1 else None),
                help_text="The agent writes to this space (its default); add other spaces under Members.",
                error_messages={"invalid_choice": "Choose one of your spaces."})
        if request.method == "POST" and form.is_valid() and spaces and form.cleaned_data["space"] is None:
            if len(spaces) == 1:  # nothing to choose
                form.cleaned_data["space"] = spaces[0]["id"]
            else:
                form.add_error("space", "Choose the space the agent writes to.")
        context = {**self.admin_site.each_context(request), "opts": self.opts, "title": "Add an agent", "form": form}
        if request.method == "POST" and form.is_valid():
            space = form.cleaned_data.get("space")
            agent = agent_create(name=form.cleaned_data["name"], staff=form.cleaned_data["staff"],
                                 spaces=[(Space.objects.get(pk=space), Role.WRITER)] if space else None)
            label = form.cleaned_data["label"] or f"admin:{request.user.get_username()}"
            issued = token_issue(agent=agent, label=label, lifetime=token_lifetime())
            return TemplateResponse(request, "admin/agents/token_issued.html",
                                    {**context, "title": "Agent created", "issued": [issued]})
        return TemplateResponse(request, "admin/agents/agent_add.html", context)

    def revoke_view(self, request: HttpRequest, token_id: int) -> HttpResponse:
        if not self.has_token_permission(request):
            raise PermissionDenied
        token = get_object_or_404(ApiToken, pk=token_id, agent__in=self.get_queryset(request))
        token_revoke(token=token)
        messages.success(request, f"Token {token.prefix}… revoked; it no longer opens the API.")
        return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[token.agent_id]))

    @admin.action(description="Issue a new token (shown once)", permissions=["token"])
    def issue_token(self, request, queryset):
        # Shown on this page only, never in a message: messages are stored (cookie or session) until shown.
        issued = [token_issue(agent=agent, label=f"admin:{request.user.get_username()}", lifetime=token_lifetime())
                  for agent in queryset]
        context = {**self.admin_site.each_context(request), "opts": self.opts, "title": "Tokens issued",
                   "issued": issued}
        return TemplateResponse(request, "admin/agents/token_issued.html", context)

    @admin.action(description="Revoke all tokens", permissions=["token"])
    def revoke_tokens(self, request, queryset):
        count = 0
        # One by one through token_revoke, the same service the revoke button uses, not a bulk update.
        for token in ApiToken.objects.filter(agent__in=queryset, revoked_at__isnull=True):
            token_revoke(token=token)
            count += 1
        self.message_user(request, f"revoked {count} token(s)")
