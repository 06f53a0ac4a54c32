"""The merge-review page (``admin/memories/memory/merge-review/``): memories waiting for their
contributions to be merged (each contribution beside the memory, with a word-level diff),
merge candidates (doubtful pairs the duplicate check recorded instead of merging) and recent
automatic merges. Every action is a POST behind ``memories.review_merges`` that calls a service;
with htmx the changed block is re-rendered in place, without it the page reloads."""

from __future__ import annotations

import datetime
import difflib
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents.admin_tools import HtmxHttpRequest
from memories.models import CandidateStatus, Memory, MemoryContribution, MergeCandidate, Status
from memories.services import MemoryInputError
from memories.services.candidates import (
    memory_fold,
    merge_candidate_accept,
    merge_candidate_dismiss,
)
from memories.services.edit import memory_history_record
from memories.services.review import contribution_split, contributions_accept, memory_merge_write

PER_PAGE = 10


def word_diff(before: str, after: str) -> SafeString:
    """Words removed from ``before`` in <del>, words added in ``after`` in <ins> (escaped)."""
    old, new = before.split(), after.split()
    parts: list[str] = []
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


def _pending_entry(memory: Memory, form: MergedTextForm | None = None) -> dict[str, Any]:
    contributions = [
        {"item": c, "diff": word_diff(_body(memory), _body(c))}
        for c in memory.contributions.filter(merged_at__isnull=True).select_related("agent").order_by("created_at")
    ]
    initial = {"content": memory.content, "context": memory.context, "resolution": memory.resolution}
    return {"memory": memory, "contributions": contributions, "form": form or MergedTextForm(initial=initial)}


def review_view(admin: Any, request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    pending = Paginator(Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).defer("embedding")
                        .order_by("-updated_at"), PER_PAGE).get_page(request.GET.get("page"))
    candidates = (MergeCandidate.objects.filter(status=CandidateStatus.OPEN, memory__status=Status.ACTIVE,
                                                duplicate_of__status=Status.ACTIVE)
                  .select_related("memory", "duplicate_of").defer("memory__embedding", "duplicate_of__embedding")
                  .order_by("-similarity")[:20])
    since = timezone.now() - datetime.timedelta(days=7)
    automatic = (MemoryContribution.objects.filter(created_at__gte=since, match_reason__in=["exact", "similar", "llm"])
                 .select_related("memory", "agent").defer("memory__embedding").order_by("-created_at")[:20])
    context = {
        **admin.admin_site.each_context(request), "opts": admin.opts, "title": "Merge review",
        "pending": pending, "entries": [_pending_entry(m) for m in pending],
        "candidates": [{"candidate": c, "diff": word_diff(_body(c.duplicate_of), _body(c.memory))} for c in candidates],
        "automatic": automatic,
    }
    return TemplateResponse(request, "admin/memories/merge_review.html", context)


def _done(request: HtmxHttpRequest, message: str, level: int = messages.SUCCESS, *,
          entry: dict[str, Any] | None = None) -> HttpResponse:
    """htmx: the re-rendered block (or nothing when it is settled) plus a toast event;
    otherwise back to the page with a message."""
    if request.htmx:
        if entry is not None and entry["contributions"]:
            response: HttpResponse = TemplateResponse(request, "admin/memories/_review_entry.html", {"entry": entry})
        else:
            response = HttpResponse(f'<div class="hub-card hub-settled">{escape(message)}</div>')
        response["HX-Trigger"] = "merge-reviewed"
        return response
    messages.add_message(request, level, message)
    return HttpResponseRedirect(reverse("admin:memories_memory_merge_review"))


def review_action(admin: Any, request: HtmxHttpRequest, memory_id: Any, action: str) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in ("accept", "write"):
        raise PermissionDenied(f"unknown review action {action!r}")
    editor = request.user.get_username()
    memory = get_object_or_404(Memory.objects.defer("embedding"), pk=memory_id)
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
    contribution = get_object_or_404(MemoryContribution.objects.select_related("memory"), pk=contribution_id)
    memory = contribution.memory
    try:
        new = contribution_split(contribution_id=contribution.pk, editor=request.user.get_username())
    except MemoryInputError as exc:
        return _done(request, exc.message, messages.ERROR, entry=_pending_entry(memory))
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
    except MergeCandidate.DoesNotExist:
        return _done(request, "That candidate no longer exists.", messages.ERROR)
    return _done(request, "Merged: the newer memory is now a contribution of the older." if action == "merge"
                 else "Dismissed: this pair will not be proposed again.")


def merge_pair_view(admin: Any, request: HtmxHttpRequest, memory_id: Any, other_id: Any) -> HttpResponse:
    """Merge two memories by hand: GET shows both, POST folds the newer into the older
    (the survivor keeps hits and contributions; the other is archived)."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    pair = {m.pk: m for m in Memory.objects.defer("embedding").filter(pk__in=[memory_id, other_id])}
    if len(pair) != 2:
        messages.error(request, "One of the two memories no longer exists.")
        return HttpResponseRedirect(reverse("admin:memories_memory_changelist"))
    first, second = pair[memory_id], pair[other_id]
    if request.method == "POST":
        if first.status != Status.ACTIVE or second.status != Status.ACTIVE:
            messages.error(request, "Both memories must be active to merge.")
            return HttpResponseRedirect(reverse("admin:memories_memory_change", args=[memory_id]))
        keep, drop = sorted((first, second), key=lambda m: (m.created_at, str(m.pk)))
        memory_fold(keep_id=keep.pk, drop_id=drop.pk, similarity=1.0, reason="curator")
        memory_history_record(memory_id=keep.pk, editor=request.user.get_username(), action="merge",
                              after={"merged": str(drop.pk)}, note="merged by hand")
        messages.success(request, "Merged: the older memory keeps the hits and contributions.")
        return HttpResponseRedirect(reverse("admin:memories_memory_change", args=[keep.pk]))
    context = {**admin.admin_site.each_context(request), "first": first, "pair": [first, second],
               "title": "Merge two memories", "opts": admin.opts}
    return TemplateResponse(request, "admin/memories/merge.html", context)
