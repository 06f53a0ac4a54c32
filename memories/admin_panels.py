"""Panels the apps above this one add to the memory page (the clusters' changes that moved the
memory, each with Undo): every automatic decision about a memory can be undone from its page,
without the memory service knowing the apps that decide them.

An app registers ``render(request, memory_id)`` in its ``AppConfig.ready()``; it returns safe
HTML (its own forms: the panels sit after the page's form, which they must not nest in), or ""
when it has nothing about that memory. It reads within the page's spaces itself."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

_PANELS: dict[str, tuple[str, Callable[[HttpRequest, Any], str]]] = {}


def memory_page_panel_register(name: str, title: str, render: Callable[[HttpRequest, Any], str]) -> None:
    """Add a panel named ``name`` (its HTML id) with heading ``title`` to the memory page."""
    _PANELS[name] = (title, render)


def memory_page_panels(request: HttpRequest, object_id: Any) -> list[dict[str, Any]]:
    """The registered panels with something to show about memory ``object_id`` (the page's id,
    not checked yet: a malformed one has no panels; the page itself answers it)."""
    try:
        memory_id = uuid.UUID(str(object_id))
    except ValueError:
        return []
    panels = []
    for name, (title, render) in _PANELS.items():
        html = render(request, memory_id)
        if html:
            panels.append({"name": name, "title": title, "html": html})
    return panels


def edit_changes(edit: Any) -> str:
    """One history row's changed fields, before → after (the memory page's edit history)."""
    rows = []
    # A field only in "before" was kept so that the change can be undone (a merge keeps the text it
    # replaced), not changed: only what the entry changed is listed.
    for name in sorted(set(edit.after) if edit.after else set(edit.before)):
        rows.append(format_html("<em>{}</em>: {} → {}", name, _short(edit.before.get(name)), _short(edit.after.get(name))))
    if edit.note:
        rows.append(format_html('<span class="hub-muted">{}</span>', edit.note))
    return format_html_join(mark_safe("<br>"), "{}", ((row,) for row in rows))


def _short(value: Any) -> str:
    text = ", ".join(value) if isinstance(value, list) else ("—" if value in (None, "") else str(value))
    return text if len(text) <= 300 else text[:297] + "…"
