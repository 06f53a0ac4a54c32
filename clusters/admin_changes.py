"""Clusters by hand in the admin site: on a cluster's page, merge it with a suggested (or any)
cluster of its space, split the chosen members off, move a member, and undo its changes; on a
memory's page, the changes that moved it, with Undo (``memory_panel``); in the review queue, the repair's merges and moves (``cluster_move``: Undo) and merge suggestions
(``cluster_suggestion``: Merge / Not one topic), one by one or selected in bulk. Every action goes through the cluster
services (``clusters.services``) and answers a row of another space as one that never existed."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join

from agents.admin_spaces import page_spaces
from clusters import selectors
from clusters.models import KnowledgeCluster
from clusters.services import (
    ClusterChangeError,
    cluster_change_undo,
    cluster_member_move,
    cluster_split,
    cluster_suggestion_decide,
    clusters_merge,
)
from core.admin_tools import HtmxHttpRequest
from memories.admin_queue import queue_action
from memories.thresholds import model_thresholds

CHANGE_KIND = "cluster_move"
SUGGESTION_KIND = "cluster_suggestion"
# The cluster page's lists: members to split or move, changes to undo, clusters to merge with.
MEMBERS_SHOWN = 200
CHANGES_SHOWN = 20
NEAREST_SHOWN = 8


def can_edit(request: HttpRequest) -> bool:
    """Curators who shape clusters into skills shape the clusters too (the crystallize permission)."""
    return request.user.has_perm("clusters.crystallize_cluster")


# --- the review queue's rows -------------------------------------------------------------------

def _cluster_link(pk: int, topic: str, exists: bool = True) -> str:
    name = topic or f"cluster {pk}"
    if not exists:
        return format_html('<span class="hub-muted">{}</span>', name)
    return format_html('<a class="hub-link" href="{}">{}</a>', reverse("admin:clusters_knowledgecluster_change",
                                                                          args=[pk]), name)


def change_item(change: Any) -> dict[str, Any]:
    """A queue row for one of the repair's changes: from → to, what moved, Undo."""
    count = len(change.memory_ids)
    what = "merged" if change.kind == "merge" else "moved"
    about = format_html("Repair {} {} memor{} from {} to {}", what, count, "y" if count == 1 else "ies",
                        _cluster_link(change.from_cluster_id, change.from_topic, change.kind != "merge"),
                        _cluster_link(change.to_cluster_id, change.to_topic))
    text = getattr(change, "first_text", None) or ""
    moved = format_html("{}{}", text[:160], format_html(' <span class="hub-muted">and {} more</span>', count - 1)
                        if count > 1 else "")
    why = f"similarity {change.similarity:.3f}" if change.similarity is not None else ""
    return {"kind": CHANGE_KIND, "id": f"clusterchange-{change.pk}", "token": f"{CHANGE_TOKEN}:{change.pk}",
            "when": change.created_at,
            "why": f"{change.get_kind_display()} by the repair{', ' + why if why else ''}", "cells": [about, moved],
            "actions": [queue_action("Undo", "u", reverse("admin:clusters_knowledgecluster_undo", args=[change.pk]))]}


def suggestion_item(suggestion: Any) -> dict[str, Any]:
    """A queue row for a merge suggestion: both clusters, the evidence, Merge / Not one topic."""
    about = format_html("{} ({} members) and {} ({} members)",
                        _cluster_link(suggestion.first_id, suggestion.first.topic), suggestion.first.member_count,
                        _cluster_link(suggestion.second_id, suggestion.second.topic), suggestion.second.member_count)
    return {"kind": SUGGESTION_KIND, "id": f"clustersuggestion-{suggestion.pk}",
            "token": f"{SUGGESTION_TOKEN}:{suggestion.pk}", "when": suggestion.created_at,
            "why": f"centroids {suggestion.similarity:.3f} similar (the repair merges from "
                   f"{model_thresholds().cluster_merge:.2f})",
            "cells": [about, evidence_html(suggestion)],
            "actions": [queue_action("Merge", "m", reverse("admin:clusters_knowledgecluster_suggestion",
                                                           args=[suggestion.pk, "merge"]), True),
                        queue_action("Not one topic", "d", reverse("admin:clusters_knowledgecluster_suggestion",
                                                                   args=[suggestion.pk, "dismiss"]))]}


# The rows' tokens for the queue's bulk decisions (``queue/decide/``).
CHANGE_TOKEN, SUGGESTION_TOKEN = "clusterchange", "clustersuggestion"
# What each bulk action does to a merge suggestion (others do not apply to it).
SUGGESTION_BULK = {"merge": "merge", "different": "dismiss"}


def change_in_spaces(ids: list[int], space_ids: list[int]) -> bool:
    return all(selectors.cluster_change_get(change_id=pk, space_ids=space_ids) is not None for pk in ids)


def suggestion_in_spaces(ids: list[int], space_ids: list[int]) -> bool:
    return all(selectors.cluster_suggestion_exists(suggestion_id=pk, space_ids=space_ids) for pk in ids)


def change_decide(pk: int, *, action: str, user: str, space_ids: list[int]) -> str | None:
    """A bulk decision on a cluster change row: Undo (the others do not apply)."""
    if action != "undo":
        return None
    change = cluster_change_undo(change_id=pk, user=user, space_ids=space_ids)
    return f"Undone: {len(change.memory_ids)} memories are back where they were."


def suggestion_decide(pk: int, *, action: str, user: str, space_ids: list[int]) -> str | None:
    """A bulk decision on a merge suggestion row: Merge, or Different (not one topic)."""
    if action not in SUGGESTION_BULK:
        return None
    cluster_suggestion_decide(suggestion_id=pk, action=SUGGESTION_BULK[action], user=user, space_ids=space_ids)
    return SUGGESTION_ACTIONS[SUGGESTION_BULK[action]]


def evidence_html(suggestion: Any) -> str:
    words = format_html('<div><span class="hub-muted">words both use:</span> {}</div>',
                        ", ".join(suggestion.shared_words) or "—")
    pairs = format_html_join("", '<div class="hub-muted">“{}” ↔ “{}” ({})</div>', (
        (p.get("first_text", "")[:120], p.get("second_text", "")[:120], f"{p.get('similarity', 0):.2f}")
        for p in suggestion.pairs))
    return format_html("{}{}", words, pairs)


# --- the memory page's panel -------------------------------------------------------------------

def memory_panel(request: HttpRequest, memory_id: Any) -> str:
    """The cluster changes that moved the memory (of the page's spaces), newest first, each with
    Undo for those who may change clusters (the same view as the cluster page's, back here)."""
    changes = selectors.cluster_changes_of_memory(memory_id=memory_id, space_ids=page_spaces(request),
                                                  limit=CHANGES_SHOWN)
    if not changes:
        return ""
    return render_to_string("admin/clusters/_memory_cluster_changes.html", {
        "cluster_changes": changes, "can_edit_clusters": can_edit(request),
        "here": reverse("admin:memories_memory_change", args=[memory_id])}, request=request)


# --- the cluster page's panel and actions ----------------------------------------------------------

def panel_context(request: HttpRequest, cluster: KnowledgeCluster) -> dict[str, Any]:
    """What the cluster page's "Change this cluster" panel shows."""
    spaces = page_spaces(request)
    return {
        "can_edit_clusters": can_edit(request),
        "nearest": selectors.clusters_nearest(cluster=cluster, limit=NEAREST_SHOWN),
        "suggestions": [{"suggestion": s, "other": s.second if s.first_id == cluster.pk else s.first,
                         "evidence": evidence_html(s)}
                        for s in selectors.cluster_suggestions_open(space_ids=spaces, cluster_id=cluster.pk)[:5]],
        "cluster_members": selectors.cluster_members_listed(cluster=cluster, limit=MEMBERS_SHOWN),
        "cluster_changes": list(selectors.cluster_changes(space_ids=spaces, cluster_id=cluster.pk)[:CHANGES_SHOWN]),
    }


def _own_cluster(request: HttpRequest, cluster_id: int) -> KnowledgeCluster:
    if not can_edit(request):
        raise PermissionDenied
    try:
        return selectors.cluster_get(cluster_id=cluster_id, space_ids=page_spaces(request))
    except KnowledgeCluster.DoesNotExist:
        raise Http404 from None  # another space's cluster is missing here, like one that never existed


def _cluster_page(pk: int) -> str:
    return reverse("admin:clusters_knowledgecluster_change", args=[pk])


def _done(request: HtmxHttpRequest, message: str, back: str, level: int = messages.SUCCESS) -> HttpResponse:
    """htmx from a queue row: the row's cells become the outcome; otherwise back to ``back`` (or
    to the review queue or the memory page the action came from) with a message."""
    if request.htmx and (request.htmx.target or "").startswith(("clusterchange-", "clustersuggestion-")):
        cell = HttpResponse(f'<td colspan="6"><div class="hub-settled">{escape(message)}</div></td>')
        cell["HX-Trigger"] = "merge-reviewed"
        return cell
    messages.add_message(request, level, message)
    # Back to the queue or the memory page the action came from (only those: never an outside URL).
    memories = reverse("admin:memories_memory_changelist")
    following = request.POST.get("next", "")
    return HttpResponseRedirect(following if following.startswith(memories) and "//" not in following else back)


def _refused(request: HtmxHttpRequest, exc: ClusterChangeError, back: str) -> HttpResponse:
    if exc.code == "not_found":
        raise Http404(exc.message)
    return _done(request, f"Refused: {exc.message}.", back, messages.ERROR)


def merge_view(request: HtmxHttpRequest, cluster_id: int) -> HttpResponse:
    """POST ``other``: that cluster (of the same space) folds into this one."""
    cluster = _own_cluster(request, cluster_id)
    back = _cluster_page(cluster.pk)
    try:
        change = clusters_merge(into=cluster.pk, other=request.POST.get("other", ""), user=request.user.get_username(),
                                space_ids=page_spaces(request))
    except ClusterChangeError as exc:
        return _refused(request, exc, back)
    return _done(request, f"Merged: {len(change.memory_ids)} memories joined this cluster (undo below).", back)


def split_view(request: HtmxHttpRequest, cluster_id: int) -> HttpResponse:
    """POST ``memory_ids`` (several): the chosen members found a new cluster."""
    cluster = _own_cluster(request, cluster_id)
    back = _cluster_page(cluster.pk)
    try:
        change = cluster_split(cluster_id=cluster.pk, memory_ids=request.POST.getlist("memory_ids"),
                               user=request.user.get_username(), space_ids=page_spaces(request))
    except ClusterChangeError as exc:
        return _refused(request, exc, back)
    messages.success(request, format_html('Split: {} members now form <a class="hub-link" href="{}">{}</a>.',
                                          len(change.memory_ids), _cluster_page(change.to_cluster_id),
                                          change.to_topic or "a new cluster"))
    return HttpResponseRedirect(back)


def move_view(request: HtmxHttpRequest, cluster_id: int) -> HttpResponse:
    """POST ``memory_id`` (a member of this cluster) and ``to_cluster_id`` (typed, or ``to_choice``)."""
    cluster = _own_cluster(request, cluster_id)
    back = _cluster_page(cluster.pk)
    memory_id = request.POST.get("memory_id", "")
    target = (request.POST.get("to_cluster_id") or "").strip() or request.POST.get("to_choice", "")
    try:
        change = cluster_member_move(memory_id=memory_id, to_cluster_id=target, user=request.user.get_username(),
                                     space_ids=page_spaces(request), from_cluster_id=cluster.pk)
    except ClusterChangeError as exc:
        if exc.code == "not_found":
            return _done(request, f"Refused: {exc.message}.", back, messages.ERROR)
        return _refused(request, exc, back)
    return _done(request, f"Moved to {change.to_topic or 'cluster ' + str(change.to_cluster_id)}.",
                 back if selectors.cluster_exists(cluster_id=cluster.pk) else _cluster_page(change.to_cluster_id))


def undo_view(request: HtmxHttpRequest, cluster_change_id: int) -> HttpResponse:
    """Undo one cluster change (the repair's or a curator's)."""
    if not can_edit(request):
        raise PermissionDenied
    change = selectors.cluster_change_get(change_id=cluster_change_id, space_ids=page_spaces(request))
    if change is None:
        raise Http404  # another space's change is missing here, like one that never existed
    try:
        cluster_change_undo(change_id=change.pk, user=request.user.get_username(), space_ids=page_spaces(request))
    except ClusterChangeError as exc:
        return _refused(request, exc, _cluster_page(change.to_cluster_id))
    return _done(request, f"Undone: {len(change.memory_ids)} memories are back where they were.",
                 _cluster_page(change.from_cluster_id))


SUGGESTION_ACTIONS = {"merge": "Merged.", "dismiss": "Not one topic: it will not be suggested again."}


def suggestion_view(request: HtmxHttpRequest, suggestion_id: int, action: str) -> HttpResponse:
    """Merge the two clusters of a suggestion, or say they are not one topic."""
    if not can_edit(request):
        raise PermissionDenied
    if action not in SUGGESTION_ACTIONS:
        raise PermissionDenied(f"unknown action {action!r}")
    if not selectors.cluster_suggestion_exists(suggestion_id=suggestion_id, space_ids=page_spaces(request)):
        raise Http404  # another space's suggestion is missing here, like one that never existed
    back = reverse("admin:memories_memory_queue") + f"?kind={SUGGESTION_KIND}"
    try:
        change = cluster_suggestion_decide(suggestion_id=suggestion_id, action=action,
                                           user=request.user.get_username(), space_ids=page_spaces(request))
    except ClusterChangeError as exc:
        return _refused(request, exc, back)
    return _done(request, SUGGESTION_ACTIONS[action], _cluster_page(change.to_cluster_id) if change else back)
