"""The review queue (``admin/memories/memory/queue/``): one page for everything the hub decided
alone or could not decide, newest first — merge candidates, conflicts, supersessions, automatic
merges and types the classifier was unsure of — each with both sides, the words that differ, and
one-click actions (undo for what the hub did alone). Keys: j / k move, m merge or "newer is
current", d "different" or "both hold", u undo, c keep the classifier's type, s set its
runner-up, ? help (``ultron/queue.js``). The actions are those of the merge-review page and of
``admin_types``; type rows can be selected and set in bulk."""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from agents.admin_spaces import page_spaces
from core.admin_tools import HtmxHttpRequest
from memories.admin_review import _body, word_diff
from memories.models import MemoryType
from memories.selectors import review as reads

PER_PAGE = 25
KIND_NAMES = {"candidate": "Merge candidates", "conflict": "Conflicts", "supersession": "Supersessions",
              "merge": "Automatic merges", "type": "Types to confirm"}


def _action(label: str, key: str, url: str, primary: bool = False, **fields: str) -> dict[str, Any]:
    """A one-click button: a POST to ``url`` with ``fields``, pressed by ``key``."""
    return {"label": label, "key": key, "url": url, "primary": primary, "fields": fields}


def _item(kind: str, row: Any) -> dict[str, Any]:
    """A queue row: its two sides (older, newer), what differs, and its actions."""
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
    if kind == "type":
        url = reverse("admin:memories_memory_type_action", args=[row.pk, "set"])
        return {"kind": kind, "id": f"type-{row.pk}", "older": row.memory, "newer": None, "review": row,
                "diff": "", "when": row.created_at,
                "why": f"the classifier chose {row.chosen}, runner-up {row.runner_up}, margin {row.margin:.2f}",
                "actions": [_action(f"Keep {row.chosen}", "c", url, True, memory_type=row.chosen),
                            _action(f"Set {row.runner_up}", "s", url, memory_type=row.runner_up)],
                "choose": url}
    return {"kind": kind, "id": f"merge-{row.pk}", "older": row.memory, "newer": None, "upload": row,
            "diff": word_diff(_body(row.memory), _body(row)), "when": row.created_at,
            "why": f"{row.match_reason}, similarity {row.similarity:.3f}",
            "actions": [_action("Undo (split back)", "u",
                                reverse("admin:memories_memory_split", args=[row.pk]))]}


def queue_view(admin: Any, request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    kind = request.GET.get("kind") or None
    kind = kind if kind in reads.QUEUE_KINDS else None
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
        "pages": pages, "all_count": sum(counts.values()), "kinds": [{"kind": k, "name": KIND_NAMES[k], "count": counts[k]} for k in reads.QUEUE_KINDS],
        "types": MemoryType.values, "type_rows": any(name == "type" for name, _ in rows),
    }
    return TemplateResponse(request, "admin/memories/queue.html", context)
