"""The memory page's history: every change a person or the hub made to the memory, before → after,
and on each entry that changed its text, tags or type a Revert that gives the memory back what it
had before that entry (``services.unmerge.memory_revert``: an edit of its own, in the history too).
A merge's entry is split back from the merge panel (its contributions' Split back)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.errors import ApplicationError
from memories.admin_panels import edit_changes
from memories.models import Memory
from memories.services.unmerge import REVERTIBLE, memory_revert

HISTORY_SHOWN = 50


def history_html(memory: Memory) -> str:
    edits = list(memory.edits.all()[:HISTORY_SHOWN])
    if not edits:
        return "No edits yet."
    return format_html_join("", '<div class="hub-history-item"><strong>{}</strong> by {} · {}{}<br>{}</div>', (
        (e.action, e.editor, e.created_at.strftime("%Y-%m-%d %H:%M"), _revert_button(memory, e), edit_changes(e))
        for e in edits))


def _revert_button(memory: Memory, edit: Any) -> str:
    if not any(name in (edit.before or {}) for name in REVERTIBLE):
        return ""
    url = reverse("admin:memories_memory_revert", args=[memory.pk, edit.pk])
    return format_html(
        ' <button type="button" class="hub-button hub-button-quiet" hx-post="{}" hx-confirm="Give the memory '
        'back the text, tags and type it had before this {}?">Revert to before this</button>', url, edit.action)


def revert_view(admin: Any, request: HttpRequest, memory_id: Any, edit_id: int) -> HttpResponse:
    """POST (htmx): revert the memory to before history entry ``edit_id``; the page reloads with
    what happened."""
    if not admin.has_change_permission(request):
        raise PermissionDenied
    memory = admin.get_object(request, str(memory_id))
    if memory is None:  # another space's memory is missing here, like one that never existed
        raise Http404
    try:
        result = memory_revert(memory_id=memory.pk, edit_id=edit_id, editor=request.user.get_username())
    except ApplicationError as exc:
        messages.error(request, f"{exc.message[0].upper()}{exc.message[1:]}.")
    else:
        changed = ", ".join(result.changed) or "nothing (it already read so)"
        messages.success(request, f"Reverted: {changed} as before that change. The revert is in the history too.")
    response = HttpResponse(status=204)
    response["HX-Redirect"] = reverse("admin:memories_memory_change", args=[memory.pk])
    return response
