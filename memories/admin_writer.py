"""Taking a writer back, from the agent's admin page (docs/flow.md#screening): hold everything
one agent wrote (since a time, optionally revoking its tokens), list the memories its uploads
were merged into, undo a batch."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse

from agents.admin import agent_page_panel_register
from agents.admin_spaces import page_spaces, space_admin_ids, space_slug_of
from agents.models import Agent
from agents.selectors import agents_within_spaces
from memories.models import MemoryHold
from memories.selectors import review as reads
from memories.services.holds import (
    HoldError,
    writer_hold,
    writer_hold_undo,
)

# The fields a reason's span may point into, in the order a curator reads them.
FIELDS = ("content", "context", "resolution", "tags")
# A longer field is shown as excerpts around what was matched.
FULL_UP_TO = 700
AROUND = 160
MARK_AT_MOST = 400
HOLD_ACTIONS = ("approve", "reject", "undo")


# --- taking a writer back (the agent's page) -------------------------------------------------------

class WriterHoldForm(forms.Form):
    since = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Only what it wrote from then on (empty: everything).")
    revoke_tokens = forms.BooleanField(required=False, label="Also revoke its tokens",
                                       help_text="It can no longer call the API until it is given a new token.")


def writer_hold_allowed(request: HttpRequest) -> bool:
    """Space admins and hub admins take a writer's memories back (they also manage its tokens)."""
    return bool(space_admin_ids(request)) and request.user.has_perm("agents.change_apitoken") \
        and request.user.has_perm("memories.change_memory")


def _writer_spaces(request: HttpRequest) -> list[int]:
    """The spaces a writer is taken back in: those the person administers that the page covers
    (a hub admin: every space, unless the switcher narrows it)."""
    covered = set(page_spaces(request))
    return sorted(i for i in space_admin_ids(request) if i in covered)


def _agent(request: HttpRequest, agent_id: int) -> Agent:
    if not writer_hold_allowed(request):
        raise PermissionDenied
    agents = Agent.objects.all() if request.user.is_superuser else agents_within_spaces(
        space_ids=space_admin_ids(request))
    found = agents.filter(pk=agent_id).first()
    if found is None:
        raise Http404  # an agent of other spaces is missing here, like one that never existed
    return found


def writer_panel(request: HttpRequest, agent: Agent) -> str:
    """The agent's page: a button to hold everything it wrote (asking first), and the batches
    taken back before, each with Undo."""
    if not writer_hold_allowed(request):
        return ""
    spaces = _writer_spaces(request)
    return render_to_string("admin/agents/agent/_writer_hold_panel.html", {
        "agent": agent, "form": WriterHoldForm(), "batches": reads.writer_batches(agent_id=agent.pk, space_ids=spaces),
        "spaces": [space_slug_of(request, i) for i in spaces]}, request=request)


agent_page_panel_register("agent-writer-hold", "Take this agent's memories back", writer_panel)


def writer_hold_view(admin: Any, request: HttpRequest, agent_id: int) -> HttpResponse:
    """GET: what holding everything the agent wrote would hold, and a button to do it; POST: hold
    them (``writer_hold``) and show what was held, the tokens revoked and the memories its
    uploads were merged into (other writers' too: a curator splits them back), with Undo."""
    agent = _agent(request, agent_id)
    spaces = _writer_spaces(request)
    form = WriterHoldForm(request.POST if request.method == "POST" else request.GET or None)
    context: dict[str, Any] = {
        **admin.admin_site.each_context(request), "opts": Agent._meta, "agent": agent, "form": form,
        "title": f"Hold everything {agent.name} wrote", "spaces": [space_slug_of(request, i) for i in spaces],
        "agent_url": reverse("admin:agents_agent_change", args=[agent.pk]),
    }
    if form.is_bound and form.is_valid():
        since, revoke = form.cleaned_data["since"], form.cleaned_data["revoke_tokens"]
        if request.method == "POST" and request.POST.get("confirmed"):
            done = writer_hold(agent=agent, by=request.user.get_username(), since=since, revoke_tokens=revoke,
                               space_ids=spaces)
            context.update(title=f"Held everything {agent.name} wrote", done=done,
                           held=reads.memories_briefly(ids=done.held[:200]),
                           merged_into=reads.memories_briefly(ids=done.merged_into[:200]))
            return TemplateResponse(request, "admin/agents/agent/writer_hold.html", context)
        context.update(confirm=True, since=since, revoke=revoke, tokens=agent.tokens.active().count(),
                       count=reads.writer_memories_count(agent_id=agent.pk, since=since, space_ids=spaces))
    return TemplateResponse(request, "admin/agents/agent/writer_hold.html", context)


def writer_hold_undo_view(admin: Any, request: HttpRequest, batch: uuid.UUID) -> HttpResponse:
    """Put back what one "hold everything" held and no curator decided since."""
    if not writer_hold_allowed(request):
        raise PermissionDenied
    first = (MemoryHold.objects.filter(batch=batch, space_id__in=_writer_spaces(request))
             .select_related("memory").only("memory__agent_id").first())
    if first is None:
        raise Http404
    try:
        count = writer_hold_undo(batch=batch, user=request.user.get_username())
    except HoldError as exc:
        messages.error(request, f"{exc.message[0].upper()}{exc.message[1:]}.")
    else:
        messages.success(request, f"Put back {count} memor{'y' if count == 1 else 'ies'}; "
                                  "those a curator decided meanwhile keep the decision.")
    agent_page = (reverse("admin:agents_agent_change", args=[first.memory.agent_id]) if first.memory.agent_id
                  else reverse("admin:agents_agent_changelist"))
    back = request.POST.get("next", "")
    return HttpResponseRedirect(back if back.startswith(reverse("admin:index")) and "//" not in back else agent_page)
