"""The review queue (``admin/memories/memory/queue/``): one page for everything the hub decided
alone or could not decide, newest first — merge candidates, conflicts, supersessions and
automatic merges — each with both sides, the words that differ, and one-click actions (undo for
what the hub did alone). Keys: j / k move, m merge or "newer is current", d "different" or "both
hold", u undo, ? help (``ultron/queue.js``). The actions are those of the merge-review page.
Apps above this one add kinds of their own (the clusters' changes and merge suggestions) with
``reads.review_queue_kind_register`` and ``queue_item_register``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from agents.admin_spaces import page_spaces
from core.admin_tools import HtmxHttpRequest
from memories.admin_review import _body, word_diff
from memories.selectors import review as reads

PER_PAGE = 25
KIND_NAMES = {"candidate": "Merge candidates", "conflict": "Conflicts", "supersession": "Supersessions",
              "merge": "Automatic merges"}


# Rows of the kinds other apps add (``reads.review_queue_kind_register``): kind -> (tab name, row builder).
_REGISTERED: dict[str, tuple[str, Callable[[Any], dict[str, Any]]]] = {}


def queue_item_register(kind: str, name: str, item: Callable[[Any], dict[str, Any]]) -> None:
    """The page side of a kind another app adds to the queue: its tab's ``name``, and ``item``,
    which turns one of its rows into the page's row — ``kind``, ``id`` (the row's HTML id; an
    action's htmx answer replaces the row's cells), ``when``, ``why``, ``actions`` (``queue_action``)
    and ``cells``: the two middle cells (what the row is about, and what changed), as safe HTML."""
    _REGISTERED[kind] = (name, item)


def queue_action(label: str, key: str, url: str, primary: bool = False) -> dict[str, Any]:
    """One button of a queue row: a POST to ``url``; ``key`` presses it from the keyboard."""
    return {"label": label, "key": key, "url": url, "primary": primary}


_action = queue_action


def _kind_name(kind: str) -> str:
    return KIND_NAMES.get(kind) or _REGISTERED[kind][0]


def _item(kind: str, row: Any) -> dict[str, Any]:
    """A queue row: its two sides (older, newer), what differs, and its actions."""
    if kind in _REGISTERED:
        return _REGISTERED[kind][1](row)
    change = "admin:memories_memory_change_action"
    if kind == "candidate":
        return {"kind": kind, "id": f"candidate-{row.pk}", "older": row.duplicate_of, "newer": row.memory,
                "diff": word_diff(_body(row.duplicate_of), _body(row.memory)), "when": row.created_at,
                "why": "; ".join(row.conflicts) or f"similarity {row.similarity:.3f}", "actions": [
                    _action("Merge", "m", reverse("admin:memories_memory_candidate_action", args=[row.pk, "merge"]), True),
                    _action("Different", "d", reverse("admin:memories_memory_candidate_action", args=[row.pk, "dismiss"]))]}
    if kind == "conflict":
        return {"kind": kind, "id": f"change-{row.pk}", "older": row.old, "newer": row.new,
                "diff": word_diff(_body(row.old), _body(row.new)), "when": row.created_at, "why": row.evidence,
                "actions": [_action("Newer is current", "m", reverse(change, args=[row.pk, "new"]), True),
                            _action("Older is current", "o", reverse(change, args=[row.pk, "old"])),
                            _action("Both hold", "d", reverse(change, args=[row.pk, "both"]))]}
    if kind == "supersession":
        return {"kind": kind, "id": f"change-{row.pk}", "older": row.old, "newer": row.new,
                "diff": word_diff(_body(row.old), _body(row.new)), "when": row.created_at,
                "why": f"{row.order}: {row.evidence} (decided by {row.decided_by})",
                "actions": [_action("Undo", "u", reverse(change, args=[row.pk, "undo"]))]}
    return {"kind": kind, "id": f"merge-{row.pk}", "older": row.memory, "newer": None, "upload": row,
            "diff": word_diff(_body(row.memory), _body(row)), "when": row.created_at,
            "why": f"{row.match_reason}, similarity {row.similarity:.3f}",
            "actions": [_action("Undo (split back)", "u",
                                reverse("admin:memories_memory_split", args=[row.pk]))]}


def queue_view(admin: Any, request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    kind = request.GET.get("kind") or None
    kind = kind if kind in reads.queue_kinds() else None
    try:
        page = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        page = 1
    rows, counts = reads.review_queue(kind=kind, page=page, per_page=PER_PAGE, space_ids=page_spaces(request))
    total = counts[kind] if kind else sum(counts.values())
    pages = max(1, math.ceil(total / PER_PAGE))
    context = {
        **admin.admin_site.each_context(request), "opts": admin.opts, "title": "Review queue",
        "items": [_item(name, row) for name, row in rows], "kind": kind, "total": total, "page": page,
        "pages": pages, "all_count": sum(counts.values()), "kinds": [{"kind": k, "name": _kind_name(k), "count": counts[k]} for k in reads.queue_kinds()],
    }
    return TemplateResponse(request, "admin/memories/queue.html", context)
