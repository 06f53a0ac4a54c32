"""Reports of wrong or outdated memories in the review queue (docs/api.md#feedback): one row a
memory, every agent's vote and reason, Archive / Keep, and Undo once decided."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from agents.admin_spaces import page_spaces
from core.errors import ApplicationError
from memories.admin_holds import _back
from memories.models import ChangeState, Memory, MemoryFeedback, MemoryReport
from memories.services.feedback import report_decide, report_undo, votes_of

KIND = "reported"
NAME = "Reported by agents"
ACTIONS = {"archive": "archived", "keep": "kept"}


def open_reports(since: Any) -> Any:  # noqa: ARG001 - every open report shows, however old
    """The review queue's rows of this kind: the open reports, those more agents agree on first."""
    votes = MemoryFeedback.objects.select_related("agent").order_by("-updated_at")
    return (MemoryReport.objects.filter(state=ChangeState.OPEN).select_related("memory")
            .defer("memory__embedding", "memory__search_vector")
            .prefetch_related(Prefetch("memory__feedback_votes", queryset=votes))  # no query per row
            .order_by("-agents", "-created_at"))


def votes_html(votes: list[MemoryFeedback]) -> str:
    """A memory's votes: who said what, why."""
    if not votes:
        return format_html('<span class="hub-muted">{}</span>', "No votes yet.")
    return format_html('<ul class="hub-votes">{}</ul>', format_html_join(
        "", "<li><strong>{}</strong> — {}{}</li>",
        ((v.get_rating_display(), v.agent.name, format_html(": “{}”", v.reason) if v.reason else "") for v in votes)))


def report_item(report: MemoryReport) -> dict[str, Any]:
    from memories.admin_queue import queue_action  # the queue's module imports the page modules

    memory = report.memory
    link = format_html('<a class="hub-link" href="{}">{}</a>', reverse("admin:memories_memory_change", args=[memory.pk]),
                       (memory.summary_l0 or memory.content)[:160])
    votes = list(memory.feedback_votes.all())
    ratings = Counter(v.rating for v in votes if v.rating in ("wrong", "outdated"))
    said = ", ".join(f"{rating} ({count})" for rating, count in ratings.most_common())
    agree = f"{report.agents} agents agree" if report.agents > 1 else "1 agent"
    return {"kind": KIND, "id": f"report-{report.pk}", "token": f"report:{report.pk}", "when": report.created_at,
            "why": f"{agree}: {said or 'reported'}", "cells": [link, votes_html(votes)],
            "actions": [queue_action("Archive", "m", reverse("admin:memories_memory_report_action",
                                                             args=[report.pk, "archive"]), report.agents > 1),
                        queue_action("Keep", "d", reverse("admin:memories_memory_report_action",
                                                          args=[report.pk, "keep"]))]}


def report_action(admin: Any, request: HttpRequest, report_id: int, action: str) -> HttpResponse:  # noqa: ARG001
    """Archive or keep a reported memory, or undo that decision; back to where it came from."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in (*ACTIONS, "undo"):
        raise Http404
    spaces = page_spaces(request)
    if not MemoryReport.objects.filter(pk=report_id, space_id__in=spaces).exists():
        raise Http404  # another space's report is missing here, like one that never existed
    try:
        if action == "undo":
            report = report_undo(report_id=report_id, space_ids=spaces)
            message = "Decision undone: the report is open again."
        else:
            report = report_decide(report_id=report_id, outcome=ACTIONS[action], decided_by=request.user.get_username(),
                                   space_ids=spaces)
            message = f"Memory {ACTIONS[action]}."
    except ApplicationError as exc:
        messages.error(request, f"Refused: {exc.message}.")
        return _back(request, reverse("admin:memories_memory_queue") + f"?kind={KIND}")
    messages.success(request, message)
    return _back(request, reverse("admin:memories_memory_change", args=[report.memory_id]))


def report_bulk(pk: int, *, action: str, user: Any, space_ids: list[int]) -> str | None:
    """The queue's bulk buttons on report rows: accept archives, different keeps, undo undoes."""
    if action == "undo":
        report_undo(report_id=pk, space_ids=space_ids)
        return "report reopened"
    outcome = {"accept": "archived", "merge": "archived", "different": "kept"}.get(action)
    if outcome is None:
        return None
    report_decide(report_id=pk, outcome=outcome, decided_by=user.get_username(), space_ids=space_ids)
    return f"memory {outcome}"


def reports_in_spaces(ids: list[int], space_ids: list[int]) -> bool:
    return MemoryReport.objects.filter(pk__in=ids, space_id__in=space_ids).count() == len(set(ids))


class FeedbackPanelMixin:
    """The memory page's "Feedback from agents" panel (``MemoryAdmin``): every agent's vote with its
    reason, the net vote search ranks it by, and its reports with their decisions and Undo."""

    def get_fieldsets(self, request, obj=None):
        fieldsets = list(super().get_fieldsets(request, obj))  # type: ignore[misc]  # the ModelAdmin it is mixed into
        if obj is not None and (obj.feedback or any(self._feedback(obj))):
            fieldsets.insert(1, ("Feedback from agents", {"fields": ("feedback_panel",)}))
        return fieldsets

    @staticmethod
    def _feedback(memory: Memory) -> tuple[list[MemoryFeedback], list[MemoryReport]]:
        """Its votes and reports, read once per page (the fieldsets are asked for more than once)."""
        if not hasattr(memory, "_feedback_rows"):
            memory._feedback_rows = (votes_of(memory.pk),  # type: ignore[attr-defined]
                                     list(memory.reports.order_by("-created_at")))
        return memory._feedback_rows  # type: ignore[attr-defined]

    @admin.display(description="votes and reports")
    def feedback_panel(self, memory: Memory) -> str:
        votes, reports = self._feedback(memory)
        rows = format_html_join("", "<li>{}</li>", ((_report_line(r),) for r in reports))
        return format_html('<p>Net vote <strong>{}</strong> (helpful minus not helpful, one per agent, capped; '
                           'search ranks it by 1 + step × net).</p>{}{}',
                           f"{memory.feedback:+d}", votes_html(votes),
                           format_html('<ul class="hub-reports">{}</ul>', rows) if reports else "")


def _report_line(report: MemoryReport) -> str:
    agents = f"{report.agents} agent{'s' if report.agents != 1 else ''}"
    if report.state == ChangeState.OPEN:
        return format_html("Reported by {}, {} — waiting in the review queue.", agents,
                           report.created_at.strftime("%Y-%m-%d"))
    undo = reverse("admin:memories_memory_report_action", args=[report.pk, "undo"])
    here = reverse("admin:memories_memory_change", args=[report.memory_id])
    return format_html('Reported by {}: {} by {} on {}. <button class="hub-button hub-button-quiet" type="submit" '
                       'formaction="{}" formnovalidate name="next" value="{}">Undo</button>', agents,
                       report.get_outcome_display().lower(), report.decided_by or "a curator",
                       f"{report.decided_at:%Y-%m-%d}" if report.decided_at else "?", undo, here)
