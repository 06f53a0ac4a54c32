"""The review queue (``admin/memories/memory/queue/``): one page for everything the hub decided
alone or could not decide, newest first — merge candidates (grouped in families: pairs that share
a memory are one decision), conflicts, supersessions, automatic merges, types the classifier was
unsure of and held memories (``memories.admin_holds``) — each with both sides, the words that
differ, and one-click actions. Rows can be selected and decided together (bulk merge, different,
accept, set type). Keys: j / k move, m the row's main action, d different / both hold, o the older
text or memory, u undo, c keep the classifier's type, s set its runner-up, x select, ? help
(``ultron/queue.js``).

Every decision on the memory service's own rows, one row's or many, is a POST to ``queue/decide/``
naming the rows (``items``: ``family:<candidate ids>``, ``change:<id>``, ``contribution:<id>``,
``type:<id>``, ``hold:<id>``) and the ``action``; each row is looked up within the page's spaces
and decided by a service. Apps above this one add kinds of their own (the clusters' changes and
merge suggestions) with ``reads.review_queue_kind_register`` and ``queue_item_register``; their row
buttons post to their own URLs, and their rows are decided in bulk through ``queue/decide/`` too,
with the ``queue_decide_register``-ed token of each (``clusterchange:<id>``,
``clustersuggestion:<id>``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from agents.admin_spaces import page_spaces
from core.admin_tools import HtmxHttpRequest
from core.errors import ApplicationError
from memories import admin_queue_decide as deciding
from memories.admin_holds import held_item, hold_decide
from memories.admin_queue_decide import Outcome
from memories.admin_review import _body, word_diff
from memories.models import MemoryType
from memories.providers.llm import get_llm
from memories.selectors import review as reads

PER_PAGE = 25
KIND_NAMES = {"candidate": "Merge candidates", "conflict": "Conflicts", "supersession": "Supersessions",
              "merge": "Automatic merges", "type": "Types to confirm", "held": "Held for review"}
# What each bulk button does to each kind of row (a kind missing from an action's map is skipped).
BULK_ACTIONS = {"merge": "Merge", "different": "Different / both hold / not one topic / reject",
                "accept": "Accept / approve", "undo": "Undo"}
# ("accept" on a type row keeps the classifier's type; "set-type" sets the bar's chosen type; "undo"
# reverts a supersession, splits an automatic merge back, undoes a cluster change. On a held row
# "accept" and "merge" approve it, "different" rejects it, "undo" undoes a decision on it.)
_OWN_TOKENS = ("family", "change", "contribution", "type", "hold", "memory")
# The bulk bar of the Held tab: only what applies to held memories.
HELD_BULK_ACTIONS = {"accept": "Approve", "different": "Reject", "undo": "Undo"}


# Rows of the kinds other apps add (``reads.review_queue_kind_register``): kind -> (tab name, row builder).
_REGISTERED: dict[str, tuple[str, Callable[[Any], dict[str, Any]]]] = {}


def queue_item_register(kind: str, name: str, item: Callable[[Any], dict[str, Any]]) -> None:
    """The page side of a kind another app adds to the queue: its tab's ``name``, and ``item``,
    which turns one of its rows into the page's row — ``kind``, ``id`` (the row's HTML id; an
    action's htmx answer replaces the row's cells), ``when``, ``why``, ``actions`` (``queue_action``)
    and ``cells``: the two middle cells (what the row is about, and what changed), as safe HTML."""
    _REGISTERED[kind] = (name, item)


# Bulk decisions on those kinds: token prefix -> (whether every id is in the spaces, decide one).
_DECIDERS: dict[str, tuple[Callable[[list[int], list[int]], bool], Callable[..., str | None]]] = {}


def queue_decide_register(token: str, in_spaces: Callable[[list[int], list[int]], bool],
                          decide: Callable[..., str | None]) -> None:
    """Rows of a registered kind whose page row carries ``token:<id>`` become decidable in bulk:
    ``in_spaces(ids, space_ids)`` says whether each is in the page's spaces (else it answers as one
    that never existed); ``decide(pk, action=, user=, space_ids=)`` applies a bulk action
    (``BULK_ACTIONS``) to one, returning the outcome's sentence, or None when the action does not
    apply to that kind. It raises its app's ``ApplicationError`` to refuse; its rows are decided
    newest first (a later one may stand on an earlier one, as cluster changes do)."""
    _DECIDERS[token] = (in_spaces, decide)


def queue_action(label: str, key: str, url: str, primary: bool = False) -> dict[str, Any]:
    """One button of a queue row: a POST to ``url``; ``key`` presses it from the keyboard."""
    return {"label": label, "key": key, "url": url, "primary": primary}


def _kind_name(kind: str) -> str:
    return KIND_NAMES.get(kind) or _REGISTERED[kind][0]


def _action(label: str, key: str, action: str, primary: bool = False, **fields: str) -> dict[str, Any]:
    """A one-click button: a POST to ``queue/decide/`` with ``action`` and ``fields``, pressed by ``key``."""
    return {"label": label, "key": key, "action": action, "primary": primary, "fields": fields}


_PLAIN = {
    "values": "different numbers or versions: {} (older) vs {} (newer)",
    "opposites": "opposite words: {} vs {}",
    "substitution": "one term replaced: {} → {}",
}


def plain_differences(evidence: str | list[str]) -> str:
    """What the duplicate check saw, as a curator reads it: ``values: 1.26 / 2.0`` -> "different
    numbers or versions: 1.26 (older) vs 2.0 (newer)"."""
    parts = evidence if isinstance(evidence, list) else [p for p in evidence.split("; ") if p]
    out: list[str] = []
    for part in parts:
        kind, _, detail = part.partition(": ")
        sides = detail.split(" / ")
        if kind in _PLAIN and len(sides) == 2:
            out.append(_PLAIN[kind].format(*sides))
        elif kind == "negation":
            out.append("one of them says “not” where the other does not")
        elif kind == "order":
            out.append(f"the same words in another order ({detail})")
        else:
            out.append(part)
    return "; ".join(out)


def _family_item(family: reads.CandidateFamily, *, llm: bool) -> dict[str, Any]:
    oldest, newest = family.members[0], family.members[-1]
    pairs = len(family.candidate_ids)
    why = plain_differences(family.conflicts) or f"similarity {family.similarity:.3f}"
    if len(family.members) > 2:
        why = f"{len(family.members)} memories, {pairs} pairs (highest similarity {family.similarity:.3f})"
    if llm:  # the LLM writes one text from the members' afterwards
        actions = [_action("Merge", "m", "merge", True)]
    else:  # no LLM will write one: the curator says which text stays, and the merge is finished
        actions = [_action("Merge, keep newer text", "m", "keep-newer", True),
                   _action("Merge, keep older text", "o", "keep-older")]
    actions.append(_action("Different", "d", "different"))
    return {"kind": "candidate", "id": f"family-{family.pk}", "token": "family:" + ".".join(map(str, family.candidate_ids)),
            "older": oldest, "newer": newest, "middle": family.members[1:-1], "pairs": pairs,
            "family": family.pk if pairs > 1 else None,
            "diff": word_diff(_body(oldest), _body(newest)), "when": family.created_at, "why": why, "actions": actions}


# The row's kind as a person reads it, in the first column.
BADGES = {"candidate": "merge candidate", "merge": "automatic merge", "type": "type", "held": "held"}


def _badged(item: dict[str, Any]) -> dict[str, Any]:
    kind = item["kind"]
    item["badge"] = "family" if item.get("pairs", 1) > 1 else BADGES.get(kind, kind.replace("_", " "))
    return item


def _item(kind: str, row: Any, *, llm: bool) -> dict[str, Any]:
    """A queue row: its two sides (older, newer), what differs, and its actions."""
    if kind in _REGISTERED:
        return _REGISTERED[kind][1](row)
    if kind == "candidate":
        return _family_item(row, llm=llm)
    if kind == "held":
        return held_item(row)
    if kind == "conflict":
        return {"kind": kind, "id": f"change-{row.pk}", "token": f"change:{row.pk}", "older": row.old, "newer": row.new,
                "diff": word_diff(_body(row.old), _body(row.new)), "when": row.created_at,
                "why": plain_differences(row.evidence),
                "actions": [_action("Newer is current", "m", "new", True), _action("Older is current", "o", "old"),
                            _action("Both hold", "d", "both"), _action("Merge: one memory after all", "g", "merge")]}
    if kind == "supersession":
        return {"kind": kind, "id": f"change-{row.pk}", "token": f"change:{row.pk}", "older": row.old, "newer": row.new,
                "diff": word_diff(_body(row.old), _body(row.new)), "when": row.created_at,
                "why": f"{row.order}: {row.evidence} (decided by {row.decided_by})",
                "actions": [_action("Accept", "m", "accept", True), _action("Undo", "u", "undo")]}
    if kind == "type":
        return {"kind": kind, "id": f"type-{row.pk}", "token": f"type:{row.pk}", "older": row.memory, "newer": None,
                "review": row, "diff": "", "when": row.created_at,
                "why": f"the classifier chose {row.chosen}, runner-up {row.runner_up}, margin {row.margin:.2f}",
                "actions": [_action(f"Keep {row.chosen}", "c", "accept", True),
                            _action(f"Set {row.runner_up}", "s", "set-type", memory_type=row.runner_up)],
                "choose": True}
    return {"kind": kind, "id": f"merge-{row.pk}", "token": f"contribution:{row.pk}", "older": row.memory,
            "newer": None, "upload": row, "diff": word_diff(_body(row.memory), _body(row)), "when": row.created_at,
            "why": f"{row.match_reason}, similarity {row.similarity:.3f}",
            "actions": [_action("Accept", "m", "accept", True), _action("Undo (split back)", "u", "split")]}


def queue_view(admin: Any, request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    kind = request.GET.get("kind") or None
    kinds = reads.queue_kinds()
    kind = kind if kind in kinds else None
    try:
        page = max(1, int(request.GET.get("page", "1")))
        family = int(request.GET["family"]) if request.GET.get("family") else None
    except ValueError:
        page, family = 1, None
    if family is not None:
        kind = "candidate"
    if request.GET.get("part") == "counts":  # the tabs alone, refreshed after an htmx decision
        counts = reads.review_queue_counts(space_ids=page_spaces(request))
        return TemplateResponse(request, "admin/memories/_queue_counts.html",
                                _counts_context(request, counts, kinds, kind, family))
    rows, counts = reads.review_queue(kind=kind, page=page, per_page=PER_PAGE, space_ids=page_spaces(request),
                                      family=family)
    llm = get_llm().available
    counted = _counts_context(request, counts, kinds, kind, family)
    pages = max(1, math.ceil(counted["total"] / PER_PAGE))
    site = admin.admin_site.each_context(request)
    # Across several spaces (the switcher on "All my spaces"), each row names its space.
    spaces = {s["id"]: s["slug"] for s in site.get("hub_spaces", [])} if site.get("hub_space_chosen") is None else {}
    context = {
        # The page is the site's Review, not a page of the memory list: its header says so (no "opts").
        **site, "title": "Review", "content_title": _heading(kind), **counted,
        "items": [{**_badged(_item(name, row, llm=llm)), "space": spaces.get(_row_space(row))} for name, row in rows],
        "page": page,
        "pages": pages, "llm": llm, "bulk_actions": (HELD_BULK_ACTIONS if kind == "held" else BULK_ACTIONS).items(),
        "types": MemoryType.values,
    }
    return TemplateResponse(request, "admin/memories/queue.html", context)


def _row_space(row: Any) -> int | None:
    """The space a queue row belongs to (a family's is its members')."""
    if isinstance(row, reads.CandidateFamily):
        return row.members[0].space_id if row.members else None
    return getattr(row, "space_id", None)


def _heading(kind: str | None) -> str:
    return f"Review › {_kind_name(kind)}" if kind else "Review"


def queue_summary(space_ids: list[int] | None) -> dict[str, Any]:
    """What waits for review, as the queue's tabs count it (a family of pairs is one decision): the
    total and each kind's count with its tab's URL. The dashboard and the sidebar's badge show these
    same numbers."""
    counts, queue = reads.review_queue_counts(space_ids=space_ids), reverse("admin:memories_memory_queue")
    kinds = [{"kind": k, "name": _kind_name(k), "count": counts[k], "href": f"{queue}?kind={k}"}
             for k in reads.queue_kinds()]
    return {"total": sum(k["count"] for k in kinds), "kinds": kinds, "href": queue}


def review_badge(request: HtmxHttpRequest) -> str:
    """The sidebar's Review entry: how many decisions wait in the person's spaces ("" for none)."""
    if not request.user.has_perm("memories.review_merges"):
        return ""
    total = queue_summary(page_spaces(request))["total"]
    return str(total) if total else ""


def _counts_context(request: HtmxHttpRequest, counts: dict[str, int], kinds: tuple[str, ...], kind: str | None,
                    family: int | None) -> dict[str, Any]:
    """The queue's heading and tabs (``_queue_counts.html``), with the URL that renders them again."""
    query = request.GET.copy()
    query["part"] = "counts"
    return {
        "kind": kind, "family": family, "total": counts[kind] if kind else sum(counts[k] for k in kinds),
        "all_count": sum(counts[k] for k in kinds), "pairs": counts["candidate_pairs"],
        "kinds": [{"kind": k, "name": _kind_name(k), "count": counts[k]} for k in kinds],
        "counts_url": f"{request.path}?{query.urlencode()}",
        "merge_pending": reads.merge_pending_count(space_ids=page_spaces(request)),
    }


# --- deciding (memories.admin_queue_decide) -----------------------------------------------------

def _parse(token: str) -> tuple[str, list[int]] | None:
    kind, _, ids = token.partition(":")
    try:
        numbers = [int(part) for part in ids.split(".") if part]
    except ValueError:
        return None
    return (kind, numbers) if (kind in _OWN_TOKENS or kind in _DECIDERS) and numbers else None


def _in_spaces(kind: str, ids: list[int], spaces: list[int]) -> bool:
    if kind in _DECIDERS:
        return _DECIDERS[kind][0](ids, spaces)
    return reads.queue_rows_in_spaces(kind=kind, ids=ids, space_ids=spaces)


def _registered_handler(decide: Callable[..., str | None], *, action: str, user: str,
                        spaces: list[int]) -> Callable[[list[int]], str | None]:
    return lambda ids: decide(ids[0], action=action, user=user, space_ids=spaces)


def decide_view(admin: Any, request: HtmxHttpRequest) -> HttpResponse:
    """Decide the rows named in ``items`` with ``action``: one row (its button; htmx swaps the row
    for the outcome) or many (the bulk bar; the page comes back with a count)."""
    if not request.user.has_perm("memories.review_merges"):
        raise PermissionDenied
    action, tokens = request.POST.get("action", ""), request.POST.getlist("items")
    user, spaces, llm = request.user.get_username(), page_spaces(request), get_llm().available
    handlers: dict[str, Callable[[list[int]], Outcome | str | None]] = {
        "family": lambda ids: deciding.family(ids, action, user, llm),
        "change": lambda ids: deciding.change(ids[0], action, user),
        "contribution": lambda ids: deciding.contribution(ids[0], action, user),
        "type": lambda ids: deciding.type_decision(ids[0], action, user, request.POST.get("memory_type", "")),
        "memory": lambda ids: deciding.memory_pair(ids, action, user),
        "hold": lambda ids: hold_decide(ids[0], action, user, bulk=len(tokens) > 1),
    }
    for token, (_, decide) in _DECIDERS.items():
        handlers[token] = _registered_handler(decide, action=action, user=user, spaces=spaces)
    parsed_all = [(token, _parse(token)) for token in tokens[:500]]
    # Other apps' rows newest first (sorted before the memory service's, whose order is kept).
    parsed_all.sort(key=lambda item: -item[1][1][0] if item[1] and item[1][0] in _DECIDERS else 0)
    done, skipped, failed, outcome, settled = 0, 0, [], "", None
    for _token, parsed in parsed_all:
        # Another space's row is missing here, like one that never existed.
        if parsed is None or not _in_spaces(parsed[0], parsed[1], spaces):
            failed.append("That item no longer exists.")
            continue
        try:
            result = handlers[parsed[0]](parsed[1])
        except ApplicationError as exc:  # a service's refusal, with its reason (the memory service's, an app's)
            failed.append(f"{exc.message[0].upper()}{exc.message[1:]}.")
            continue
        except ObjectDoesNotExist:
            failed.append("That item no longer exists.")
            continue
        if result is None:
            skipped += 1
        else:
            settled = result if isinstance(result, Outcome) else None
            done, outcome = done + 1, result.message if isinstance(result, Outcome) else result
    if not tokens:
        failed.append("Select the rows to decide first.")
    if len(tokens) == 1:
        message, level = (failed[0], messages.ERROR) if failed else (outcome or "Nothing to do for this row.",
                                                                      messages.SUCCESS)
    else:
        message = f"{done} decided" + (f", {skipped} skipped (the action does not apply to them)" if skipped else "") + (
            f", {len(failed)} failed: {failed[0]}" if failed else "") + "."
        level = messages.ERROR if failed and not done else messages.SUCCESS
    if request.htmx and len(tokens) == 1 and not failed and done and parsed_all[0][1] and parsed_all[0][1][0] == "hold":
        return _hold_settled(request, parsed_all[0][1][1][0], action, outcome)
    if request.htmx and len(tokens) == 1:
        # The row decided in place: what happened, the memories it names, and Undo while the page is open.
        cell = TemplateResponse(request, "admin/memories/_queue_settled.html", {
            "message": message, "level": "error" if failed else "done", "memories": settled.memories if settled else [],
            "undo_token": (settled.token or tokens[0]) if settled and settled.undo else "",
            "undo_action": settled.undo if settled else "", "next": request.POST.get("next", ""),
            "row_id": request.headers.get("HX-Target", "")})
        cell["HX-Trigger"] = "merge-reviewed"
        return cell
    messages.add_message(request, level, message)
    back, queue = request.POST.get("next", ""), reverse("admin:memories_memory_queue")
    # Back to the queue page the decision came from (only that page: never an outside URL).
    return HttpResponseRedirect(back if back.startswith(queue) and "//" not in back else queue)


def _hold_settled(request: HtmxHttpRequest, hold_id: int, action: str, message: str) -> HttpResponse:
    """A held row decided in place: approved or rejected, the outcome with Undo; undone, the row
    back as it was (held, with Approve and Reject)."""
    context = {"message": message, "next": request.POST.get("next", ""), "row_id": f"hold-{hold_id}"}
    hold = reads.hold_with_memory(hold_id=hold_id)
    if action == "undo":
        response: HttpResponse = TemplateResponse(request, "admin/memories/_queue_row.html",
                                                  {**context, "item": _badged(held_item(hold)), "types": MemoryType.values})
    else:
        response = TemplateResponse(request, "admin/memories/_queue_settled.html",
                                    {**context, "memory": hold.memory, "undo_token": f"hold:{hold_id}"})
    response["HX-Trigger"] = "merge-reviewed"
    return response
