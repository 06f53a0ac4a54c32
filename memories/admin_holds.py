"""Held memories on the admin site (docs/flow.md#screening): a held memory's text with what the
screen matched marked, why it was held, and what a curator decides — in the review queue's
*Held for review* tab (``memories.admin_queue``), on the memory's page (its holds, each with
Approve / Reject / Undo) and on an agent's page (take back everything it wrote, and put it back).

Every decision goes through ``memories.services.holds``; each row is looked up within the
page's spaces first (another space's hold answers as one that never existed)."""

from __future__ import annotations

import unicodedata
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from agents.admin_spaces import page_spaces
from memories.models import ChangeState, HoldDecision, HoldOrigin, Memory, MemoryHold, Status
from memories.selectors import review as reads
from memories.services.holds import (
    HoldError,
    hold_approve,
    hold_reject,
    hold_undo,
)

# The fields a reason's span may point into, in the order a curator reads them.
FIELDS = ("content", "context", "resolution", "tags")
# A longer field is shown as excerpts around what was matched.
FULL_UP_TO = 700
AROUND = 160
MARK_AT_MOST = 400
HOLD_ACTIONS = ("approve", "reject", "undo")


# --- the memory's text, with what the screen matched marked ------------------------------------

def _field_text(memory: Memory, name: str) -> str:
    if name == "tags":  # the screen read the tags one a line (memories.screening._fields)
        return "\n".join(memory.tags or [])
    return str(getattr(memory, name, "") or "")


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _spans(reasons: list[dict], name: str, length: int) -> list[tuple[int, int, list[str]]]:
    """The marked spans of field ``name`` (clamped to its text, overlapping ones joined), each
    with the labels of the reasons that point at it."""
    found = []
    for reason in reasons:
        if not isinstance(reason, dict) or reason.get("field") != name:
            continue
        start, end = max(0, min(_int(reason.get("start")), length)), max(0, min(_int(reason.get("end")), length))
        if end > start:
            found.append((start, end, str(reason.get("label") or reason.get("rule") or "")))
    found.sort()
    merged: list[tuple[int, int, list[str]]] = []
    for start, end, label in found:
        if merged and start <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2] + ([label] if label not in last[2] else []))
        else:
            merged.append((start, end, [label]))
    return merged


def _visible(text: str) -> str:
    """``text`` escaped, each character that draws nothing (zero-width, bidirectional controls,
    tag characters) shown as its code point: a curator sees what the screen saw, and a bidi
    override cannot reorder the page."""
    out: list[str] = []
    plain: list[str] = []
    for char in text:
        if unicodedata.category(char) == "Cf":
            out.append(escape("".join(plain)))
            plain = []
            out.append(f'<span class="hub-invisible" title="an invisible character">U+{ord(char):04X}</span>')
        else:
            plain.append(char)
    out.append(escape("".join(plain)))
    return "".join(out)


def _marked(text: str, spans: list[tuple[int, int, list[str]]]) -> str:
    """``text`` (escaped) with each span in a ``<mark>``; a long text as excerpts around them."""
    if len(text) <= FULL_UP_TO:
        windows = [(0, len(text))]
    elif spans:
        windows = []
        for start, end, _ in spans:
            low, high = max(0, start - AROUND), min(len(text), end + AROUND)
            if windows and low <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(windows[-1][1], high))
            else:
                windows.append((low, high))
    else:
        windows = [(0, FULL_UP_TO)]
    pieces = []
    for low, high in windows:
        piece = ["…" if low > 0 else ""]
        at = low
        for start, end, labels in spans:
            if end <= low or start >= high:
                continue
            start, end = max(start, low), min(end, high)
            piece.append(_visible(text[at:start]))
            inner = text[start:end]
            shown = _visible(inner[:MARK_AT_MOST]) + ("…" if len(inner) > MARK_AT_MOST else "")
            piece.append(f'<mark class="hub-mark" title="{escape("; ".join(labels))}">{shown}</mark>')
            at = end
        piece.append(_visible(text[at:high]))
        piece.append("…" if high < len(text) else "")
        pieces.append("".join(piece))
    return " ".join(pieces)


def marked_fields(memory: Memory, reasons: list[dict]) -> list[dict[str, Any]]:
    """The memory's fields as a curator reviews them: the content always, the others when
    something in them was matched; each ``{"name", "html", "marks"}`` (safe HTML)."""
    shown = []
    for name in FIELDS:
        text = _field_text(memory, name)
        spans = _spans(reasons, name, len(text))
        if name == "content" or spans:
            shown.append({"name": name, "html": mark_safe(_marked(text, spans)), "marks": len(spans)})
    return shown


def reason_labels(reasons: list[dict]) -> list[str]:
    """What the hold's reasons say, each once, in their order."""
    labels = [str(r.get("label") or r.get("rule") or "") for r in reasons if isinstance(r, dict)]
    return list(dict.fromkeys(label for label in labels if label))


def origin_text(hold: MemoryHold, writer: str) -> str:
    """Why the memory is held, as a person reads it."""
    if hold.origin == HoldOrigin.SCREEN:
        return "flagged by the screen"
    if hold.origin == HoldOrigin.WRITER:
        return "its writer is reviewed"
    if hold.origin == HoldOrigin.RECALL:
        return f"taken back from writer {writer}" + (f" by {hold.held_by}" if hold.held_by else "")
    return "the screen failed: held until a curator looks"


def _writer(memory: Memory) -> str:
    return memory.agent.name if memory.agent_id and memory.agent else "an unknown writer"


def held_text(memory: Memory, reasons: list[dict]) -> SafeString:
    """The held memory's fields with the matched spans marked (``_held_text.html``)."""
    return mark_safe(render_to_string("admin/memories/_held_text.html",
                                      {"fields": marked_fields(memory, reasons)}))


# --- the review queue's rows ---------------------------------------------------------------------

def held_item(hold: MemoryHold) -> dict[str, Any]:
    """A queue row of kind ``held``: the memory's text marked, the reasons' labels, why and where."""
    memory = hold.memory
    page = reverse("admin:memories_memory_change", args=[memory.pk])
    about = format_html('<a class="hub-link" href="{}">{}</a>{}', page, "open the memory",
                        held_text(memory, hold.reasons or []))
    labels = reason_labels(hold.reasons or [])
    what = (format_html('<ul class="hub-list">{}</ul>', format_html_join("", "<li>{}</li>", ((label,) for label in labels)))
            if labels else format_html('<span class="hub-muted">{}</span>', "no reason recorded"))
    why = f"{origin_text(hold, _writer(memory))} · written by {_writer(memory)} · space {hold.space.slug}"
    return {"kind": "held", "id": f"hold-{hold.pk}", "token": f"hold:{hold.pk}", "when": hold.created_at,
            "why": why, "cells": (about, what), "badge": "held",
            "actions": [{"label": "Approve", "key": "m", "action": "approve", "primary": True, "fields": {}},
                        {"label": "Reject", "key": "d", "action": "reject", "primary": False, "fields": {}}]}


# What each bulk action does to a held row.
BULK = {"accept": "approve", "merge": "approve", "different": "reject", "undo": "undo"}


def hold_decide(hold_id: int, action: str, user: str, *, bulk: bool = False) -> str | None:
    """Apply ``action`` (``approve``, ``reject``, ``undo`` or a bulk action) to one hold: the
    outcome's sentence, or None when it does not apply (a bulk undo of a hold still open)."""
    action = BULK.get(action, action)
    if action == "approve":
        hold_approve(hold_id=hold_id, user=user)
        return "Approved: the memory is served, marked verified."
    if action == "reject":
        hold_reject(hold_id=hold_id, user=user)
        return "Rejected: the memory is kept out."
    if action == "undo":
        if bulk and reads.hold_state(hold_id=hold_id) == ChangeState.OPEN:
            return None
        hold_undo(hold_id=hold_id, user=user)
        return "Undone: the memory is held again and waits for a curator."
    return None


# --- the memory's page -----------------------------------------------------------------------------

def _when(moment: Any) -> str:
    return f"{moment:%Y-%m-%d %H:%M}" if moment else "?"


def _button(label: str, hold: MemoryHold, action: str, here: str, primary: bool = False) -> SafeString:
    """A button of the memory page's form that posts it to the hold's action (the panel sits
    inside the page's form, which it must not nest a form in)."""
    return format_html(
        '<button class="hub-button{}" type="submit" formaction="{}" formnovalidate name="next" value="{}">{}</button>',
        "" if primary else " hub-button-quiet", reverse("admin:memories_memory_hold_action", args=[hold.pk, action]),
        here, label)


def hold_panel(memory: Memory, holds: list[MemoryHold]) -> str:
    """The memory page's holds, newest first: why, the reasons, the decision and who undid it,
    with Approve / Reject on the open one and Undo on a decision in force; the newest hold's
    matched spans marked in the memory's text."""
    if not holds:
        return "Never held."
    here = reverse("admin:memories_memory_change", args=[memory.pk])
    writer = _writer(memory)
    entries = []
    for index, hold in enumerate(holds):
        buttons: str
        if hold.state == ChangeState.OPEN:
            verdict = format_html("<strong>{}</strong>", "waiting for a curator")
            buttons = format_html("{} {}", _button("Approve", hold, "approve", here, primary=True),
                                  _button("Reject", hold, "reject", here))
        elif hold.state == ChangeState.DONE:
            verdict = format_html("<strong>{}</strong> by {} on {}", HoldDecision(hold.decision).label.lower()
                                  if hold.decision in HoldDecision.values else hold.decision, hold.decided_by,
                                  _when(hold.decided_at))
            buttons = _button("Undo", hold, "undo", here)
        else:
            verdict = format_html("{} by {} on {}", "put back" if hold.batch else "undone", hold.undone_by,
                                  _when(hold.undone_at))
            buttons = ""
        if hold.undone_by and hold.state != ChangeState.UNDONE:
            verdict = format_html("{} (an earlier decision was undone by {} on {})", verdict, hold.undone_by,
                                  _when(hold.undone_at))
        labels = reason_labels(hold.reasons or [])
        reasons = format_html('<ul class="hub-list">{}</ul>',
                              format_html_join("", "<li>{}</li>", ((label,) for label in labels))) if labels else ""
        text = held_text(memory, hold.reasons or []) if index == 0 and any(
            isinstance(r, dict) and _int(r.get("end")) > _int(r.get("start")) for r in hold.reasons or []) else ""
        entries.append(format_html(
            '<div class="hub-history-item" id="hold-{}">Held {} — {} · {}<div class="hub-actions">{}</div>{}{}</div>',
            hold.pk, _when(hold.created_at), origin_text(hold, writer), verdict, buttons, reasons, text))
    return format_html("{}{}", mark_safe(render_to_string("admin/memories/_held_style.html")),
                       format_html_join("", "{}", ((entry,) for entry in entries)))


def _back(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    back = request.POST.get("next", "")
    home = reverse("admin:memories_memory_changelist")
    # Back to the memory list's pages the action came from (the memory page, the queue), never an outside URL.
    return HttpResponseRedirect(back if back.startswith(home) and "//" not in back else fallback)


def hold_action(admin: Any, request: HttpRequest, hold_id: int, action: str) -> HttpResponse:
    """The memory page's buttons: approve, reject or undo one hold, back to the page with the outcome."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    if action not in HOLD_ACTIONS:
        raise Http404
    if not reads.hold_in_spaces(hold_id=hold_id, space_ids=page_spaces(request)):
        raise Http404  # another space's hold is missing here, like one that never existed
    hold = MemoryHold.objects.only("memory_id").get(pk=hold_id)
    try:
        message = hold_decide(hold_id, action, request.user.get_username()) or "Nothing to do."
    except HoldError as exc:
        messages.error(request, f"{exc.message[0].upper()}{exc.message[1:]}.")
    else:
        messages.success(request, message)
    return _back(request, reverse("admin:memories_memory_change", args=[hold.memory_id]))


class HoldPanelMixin:
    """The memory page's "Held for review" panel (``MemoryAdmin``): a memory that was ever held
    shows its holds, with Approve / Reject / Undo."""

    def get_fieldsets(self, request, obj=None):
        # A memory that was ever held shows its holds (why, the reasons, the decision, with Approve /
        # Reject / Undo): first while it is held or rejected, after its text otherwise.
        fieldsets = list(super().get_fieldsets(request, obj))  # type: ignore[misc]  # the ModelAdmin it is mixed into
        if obj is None:
            return fieldsets
        holds = self._holds(obj)
        if holds:
            panel = ("Held for review" if obj.status in (Status.HELD, Status.REJECTED) else "Holds",
                     {"fields": ("hold_panel",)})
            fieldsets.insert(0 if obj.status in (Status.HELD, Status.REJECTED) else 1, panel)
        return fieldsets

    @staticmethod
    def _holds(memory: Memory) -> list:
        if not hasattr(memory, "_hold_rows"):
            from memories.selectors.review import holds_of

            memory._hold_rows = holds_of(memory_id=memory.pk)  # type: ignore[attr-defined]
        return memory._hold_rows  # type: ignore[attr-defined]

    @admin.display(description="why, and what was decided")
    def hold_panel(self, memory: Memory) -> str:
        return hold_panel(memory, self._holds(memory))
