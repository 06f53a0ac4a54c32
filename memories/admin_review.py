"""The merge-review page (``admin/memories/memory/merge-review/``): memories waiting for their
contributions to be merged (each contribution beside the memory, with a word-level diff),
merge candidates (doubtful pairs the duplicate check recorded instead of merging) and recent
automatic merges. Every action is a POST behind ``memories.review_merges`` that calls a service;
with htmx the changed block is re-rendered in place, without it the page reloads."""

from __future__ import annotations

import difflib
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents.admin_spaces import page_spaces
from core.admin_tools import HtmxHttpRequest
from memories.selectors import review as reads
from memories.services import ChangeError, MemoryInputError, conflict_decide, supersession_undo
from memories.services.candidates import (
    memories_merge_by_hand,
    merge_candidate_accept,
    merge_candidate_dismiss,
)
from memories.services.review import contribution_split, contributions_accept, memory_merge_write

PER_PAGE = 10


def word_diff(before: str, after: str) -> SafeString:
    """Words removed from ``before`` in <del>, words added in ``after`` in <ins> (escaped)."""
    old, new = before.split(), after.split()
    parts: list[str] = []
    # autojunk off: on texts of 200 words or more difflib would skip frequent words and mark them changed.
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(escape(" ".join(old[a1:a2])))
            continue
        if a2 > a1:
            parts.append(f"<del>{escape(' '.join(old[a1:a2]))}</del>")
        if b2 > b1:
            parts.append(f"<ins>{escape(' '.join(new[b1:b2]))}</ins>")
    return mark_safe(" ".join(parts))  # noqa: S308 - every piece above is escaped


def _body(item: Any) -> str:
    return "\n".join(part for part in (item.content, item.context, item.resolution) if part)


class MergedTextForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))
    context = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    resolution = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


def _pending_entry(memory: Any, form: MergedTextForm | None = None) -> dict[str, Any]:
    contributions = [{"item": c, "diff": word_diff(_body(memory), _body(c))}
                     for c in reads.contributions_open(memory=memory)]
    initial = {"content": memory.content, "context": memory.context, "resolution": memory.resolution}
    return {"memory": memory, "contributions": contributions, "form": form or MergedTextForm(initial=initial)}


def review_view(admin: Any, request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    spaces = page_spaces(request)
    pending = reads.merge_pending_page(page=request.GET.get("page"), per_page=PER_PAGE, space_ids=spaces)
    automatic = reads.merges_automatic_recent(days=7, limit=20)
    context = {
        **admin.admin_site.each_context(request), "title": "Texts waiting for a merge",
        "content_title": "Review › Texts waiting for a merge",
        "pending": pending, "entries": [_pending_entry(m) for m in pending],
        "automatic": automatic,
        "supersessions": [{"change": c, "diff": word_diff(_body(c.old), _body(c.new))}
                          for c in reads.supersessions_recent(days=30, space_ids=spaces)],
    }
    return TemplateResponse(request, "admin/memories/merge_review.html", context)


# The ids of table rows an action settles in place (the review queue's, the merge-review page's tables).
_ROW_TARGETS = ("candidate-", "change-", "merge-", "type-")


def _done(request: HtmxHttpRequest, message: str, level: int = messages.SUCCESS, *,
          entry: dict[str, Any] | None = None) -> HttpResponse:
    """htmx: the re-rendered block (or nothing when it is settled) plus a toast event;
    otherwise back to the page with a message."""
    if request.htmx:
        target = request.htmx.target or ""
        if target.startswith(_ROW_TARGETS):  # a table row (the queue, the candidates): one cell across it
            cell = HttpResponse(f'<td colspan="6"><div class="hub-settled">{escape(message)}</div></td>')
            cell["HX-Trigger"] = "merge-reviewed"
            return cell
        if entry is not None and entry["contributions"]:
            response: HttpResponse = TemplateResponse(request, "admin/memories/_review_entry.html", {"entry": entry})
        else:
            response = HttpResponse(f'<div class="hub-card hub-settled">{escape(message)}</div>')
        response["HX-Trigger"] = "merge-reviewed"
        return response
    messages.add_message(request, level, message)
    back = request.POST.get("next", "")
    queue = reverse("admin:memories_memory_queue")
    # Back to the review queue when the action came from it (only that page: never an outside URL).
    return HttpResponseRedirect(back if back.startswith(queue) and "//" not in back else
                                reverse("admin:memories_memory_merge_review"))


def review_action(admin: Any, request: HtmxHttpRequest, memory_id: Any, action: str) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in ("accept", "write"):
        raise PermissionDenied(f"unknown review action {action!r}")
    editor = request.user.get_username()
    memory = reads.memory_for_review(memory_id=memory_id)
    if action == "accept":
        done = contributions_accept(memory_id=memory.pk, editor=editor)
        return _done(request, f"Accepted {done} contribution(s); the memory keeps its text.")
    form = MergedTextForm(request.POST)
    if not form.is_valid():
        return _done(request, "The merged text needs content.", messages.ERROR, entry=_pending_entry(memory, form))
    try:
        memory_merge_write(memory_id=memory.pk, editor=editor, **form.cleaned_data)
    except MemoryInputError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return _done(request, exc.message, messages.ERROR, entry=_pending_entry(memory, form))
    return _done(request, "Merged text saved; the memory was re-embedded.")


def split_action(admin: Any, request: HtmxHttpRequest, contribution_id: int) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    memory = reads.contribution_memory(contribution_id=contribution_id)
    try:
        new = contribution_split(contribution_id=contribution_id, editor=request.user.get_username())
    except MemoryInputError as exc:
        return _done(request, exc.message, messages.ERROR, entry=_pending_entry(memory))
    # The split changed the memory (its hit count, merge_pending): read again before it is shown.
    memory.refresh_from_db()
    return _done(request, f"Split out as a memory of its own ({new.pk}).", entry=_pending_entry(memory))


def candidate_action(admin: Any, request: HtmxHttpRequest, candidate_id: int, action: str) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in ("merge", "dismiss"):
        raise PermissionDenied(f"unknown candidate action {action!r}")
    decide = merge_candidate_accept if action == "merge" else merge_candidate_dismiss
    try:
        decide(candidate_id=candidate_id, decided_by=request.user.get_username())
    except MemoryInputError as exc:
        return _done(request, exc.message, messages.ERROR)
    except ObjectDoesNotExist:
        return _done(request, "That candidate no longer exists.", messages.ERROR)
    return _done(request, "Merged: the newer memory is now a contribution of the older." if action == "merge"
                 else "Dismissed: this pair will not be proposed again.")


CHANGE_ACTIONS = {"undo": "Undone: the older memory is current again.",
                  "new": "Settled: the newer memory is current; the older one is superseded.",
                  "old": "Settled: the older memory stays current; the newer one is superseded.",
                  "both": "Settled: both hold; nothing changed."}


def change_action(admin: Any, request: HtmxHttpRequest, change_id: int, action: str) -> HttpResponse:
    """Undo a supersession, or settle a conflict (``new``, ``old`` or ``both`` is current)."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in CHANGE_ACTIONS:
        raise PermissionDenied(f"unknown change action {action!r}")
    if not reads.change_in_spaces(change_id=change_id, space_ids=page_spaces(request)):
        raise Http404  # another space's change is missing here, like one that never existed
    user = request.user.get_username()
    try:
        if action == "undo":
            supersession_undo(change_id=change_id, user=user)
        else:
            conflict_decide(change_id=change_id, decision=action, user=user)
    except ChangeError as exc:
        return _done(request, exc.message, messages.ERROR)
    return _done(request, CHANGE_ACTIONS[action])


def merge_pair_view(admin: Any, request: HtmxHttpRequest, memory_id: Any, other_id: Any) -> HttpResponse:
    """Merge two memories by hand: GET shows both, POST folds the newer into the older
    (the survivor keeps hits and contributions; the other is archived)."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    pair = reads.memory_pair(first_id=memory_id, second_id=other_id)
    if pair is None:
        messages.error(request, "One of the two memories no longer exists.")
        return HttpResponseRedirect(reverse("admin:memories_memory_changelist"))
    first, second = pair
    if request.method == "POST":
        try:
            keep = memories_merge_by_hand(first_id=memory_id, second_id=other_id, editor=request.user.get_username())
        except MemoryInputError as exc:
            messages.error(request, f"{exc.message[0].upper()}{exc.message[1:]}.")
            return HttpResponseRedirect(reverse("admin:memories_memory_change", args=[memory_id]))
        messages.success(request, "Merged: the older memory keeps the hits and contributions.")
        return HttpResponseRedirect(reverse("admin:memories_memory_change", args=[keep.pk]))
    context = {**admin.admin_site.each_context(request), "first": first, "pair": [first, second],
               "title": "Merge two memories", "opts": admin.opts}
    return TemplateResponse(request, "admin/memories/merge.html", context)
