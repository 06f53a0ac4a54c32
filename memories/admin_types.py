"""Types to confirm, in the admin site (docs/flow.md#the-review-queue): setting or undoing one
type decision (the memory page's undo button), and the memory list's bulk "set type" with its
intermediate page. The review queue decides its type rows through ``queue/decide/``
(``memories.admin_queue``). Every change goes through ``memories.services.types``."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from agents.admin_spaces import page_spaces
from core.admin_tools import HtmxHttpRequest
from memories.admin_review import _done
from memories.models import ChangeState, MemoryType
from memories.selectors import review as reads
from memories.services.types import (
    TypeChangeError,
    memory_types_set,
    type_change_undo,
    type_review_decide,
)

TYPE_ACTIONS = ("set", "undo")


def _answer(request: HtmxHttpRequest, message: str, level: int = messages.SUCCESS) -> HttpResponse:
    """htmx: the settled row (``admin_review._done``); otherwise back where the action came from
    (a page of the memory list: the queue, a memory page), with a message."""
    if request.htmx:
        return _done(request, message, level)
    messages.add_message(request, level, message)
    back = request.POST.get("next", "")
    home = reverse("admin:memories_memory_changelist")
    return HttpResponseRedirect(back if back.startswith(home) and "//" not in back else
                                reverse("admin:memories_memory_queue"))


def type_outcome(change: Any) -> str:
    """What a curator's type decision did, in a sentence."""
    if change.memory_type == change.chosen:
        return f"Kept {change.memory_type}."
    return f"Set to {change.memory_type} (was {change.chosen})."


def type_action(admin: Any, request: HtmxHttpRequest, type_change_id: int, action: str) -> HttpResponse:
    """``set``: answer a type review with the POSTed ``memory_type`` (its current type: keep
    it); ``undo``: revert a decided type change."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in TYPE_ACTIONS:
        raise PermissionDenied(f"unknown type action {action!r}")
    if not reads.type_change_in_spaces(change_id=type_change_id, space_ids=page_spaces(request)):
        raise Http404  # another space's review is missing here, like one that never existed
    user = request.user.get_username()
    try:
        if action == "undo":
            change = type_change_undo(change_id=type_change_id, user=user)
            return _answer(request, f"Undone: the memory's type is {change.chosen} again.")
        change = type_review_decide(review_id=type_change_id, memory_type=request.POST.get("memory_type", ""),
                                    user=user)
    except TypeChangeError as exc:
        return _answer(request, exc.message, messages.ERROR)
    return _answer(request, type_outcome(change))


def set_type_selected(admin: Any, request: Any, queryset: Any) -> TemplateResponse | None:
    """The memory list's bulk action: first a page to choose the type, then each selected memory
    gets it (``memory_types_set``: one undoable decision each)."""
    memory_type = request.POST.get("memory_type", "")
    if request.POST.get("apply") and memory_type in MemoryType.values:
        done = memory_types_set(memory_ids=list(queryset.values_list("pk", flat=True)), memory_type=memory_type,
                                user=request.user.get_username())
        admin.message_user(request, f"Set the type of {done} memor{'y' if done == 1 else 'ies'} to {memory_type}.",
                           messages.SUCCESS)
        return None
    context = {
        **admin.admin_site.each_context(request), "opts": admin.opts, "title": "Set the type of memories",
        "memories": list(queryset.select_related(None).only("pk", "summary_l0", "content", "memory_type")[:200]),
        "selected": list(queryset.values_list("pk", flat=True)), "types": MemoryType.values,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME, "select_across": request.POST.get("select_across", "0"),
    }
    return TemplateResponse(request, "admin/memories/memory/set_type.html", context)


def type_history(memory: Any) -> str:
    """The memory page's type decisions: what the classifier chose, who decided, who undid, with
    an undo button for a decision still in force (it submits the page's form to the undo view)."""
    changes = reads.type_changes_of(memory_id=memory.pk)
    if not changes:
        return "The type was never reviewed."
    here = reverse("admin:memories_memory_change", args=[memory.pk])

    def line(change: Any) -> tuple[Any, ...]:
        origin = (format_html("the classifier chose {} (runner-up {}, margin {})", change.chosen, change.runner_up,
                              f"{change.margin:.2f}") if change.margin is not None
                  else format_html("the type was {}", change.chosen))
        if change.state == ChangeState.OPEN:
            verdict = format_html('<a class="hub-link" href="{}?kind=type">waiting in the review queue</a>',
                                  reverse("admin:memories_memory_queue"))
        else:
            verdict = format_html("set to {} by {} on {}", change.memory_type, change.decided_by,
                                  f"{change.decided_at:%Y-%m-%d %H:%M}" if change.decided_at else "?")
        if change.state == ChangeState.UNDONE:
            verdict = format_html("{} · undone by {} on {}", verdict, change.undone_by,
                                  f"{change.undone_at:%Y-%m-%d %H:%M}" if change.undone_at else "?")
        button = ""
        if change.state == ChangeState.DONE and change.memory_type == memory.memory_type:
            button = format_html(
                ' <button class="hub-button hub-button-quiet" type="submit" formaction="{}" formnovalidate '
                'name="next" value="{}">Undo</button>',
                reverse("admin:memories_memory_type_action", args=[change.pk, "undo"]), here)
        return origin, verdict, button

    return format_html_join("", '<div class="hub-history-item">{} · {}{}</div>', (line(c) for c in changes))
