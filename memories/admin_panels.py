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
