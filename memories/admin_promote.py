"""The memory page's space panel: which space the memory is in, and a copy of it promoted to
another space the curator curates (``memory_promote``, the service the API would call too)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from agents.admin_spaces import curated_spaces, promote_refused, promote_target, space_choices
from memories.services import PromoteError, memory_promote


def panel_context(admin: Any, request: HttpRequest) -> dict[str, Any]:
    """For the memory page's template: every space the person curates (the memory's own is
    left out there) and whether they may promote at all. No query: the roles are read."""
    return {"promote_spaces": space_choices(request, curated_spaces(request)), "can_promote": admin.has_change_permission(request)}


def promote_view(admin: Any, request: HttpRequest, memory_id: Any) -> HttpResponse:
    """POST ``space`` (an id): copy the memory there, then back to the memory's page."""
    if not admin.has_change_permission(request):
        raise PermissionDenied
    memory = admin.get_object(request, str(memory_id))
    if memory is None:  # another space's memory is missing here, like one that never existed
        raise Http404
    target = promote_target(request)
    back = HttpResponseRedirect(reverse("admin:memories_memory_change", args=[memory.pk]))
    try:
        result = memory_promote(memory_id=memory.pk, target=target, user=request.user)
    except PromoteError as exc:
        return promote_refused(request, exc, back)
    url = reverse("admin:memories_memory_change", args=[result.memory.pk])
    if result.merged:
        messages.info(request, format_html('Space {} already had this memory: the copy was merged into '
                                           '<a class="hub-link" href="{}">its memory</a>.', target.slug, url))
    else:
        messages.success(request, format_html('Promoted to space {}: <a class="hub-link" href="{}">the copy</a>.',
                                              target.slug, url))
    return back
