"""Merge suggestions (docs/flow.md#cluster-repair): two clusters of a space whose centroids
are close, but under the similarity at which the repair merges them alone (``cluster_merge``),
are shown to a curator with the evidence — the similarity, the words both clusters' members
use, the closest pairs of members — to merge them or to say they are not one topic (then the
pair is never suggested again).

They are found and stored by the pipeline's repair pass, which already looks up each recently
changed cluster's nearest neighbour through the centroid index: the review queue then counts
and pages them like every other kind, a verdict is remembered on the row, and the evidence is
computed once per pass instead of at every page view.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from clusters.models import ClusterChange, ClusterSuggestion, KnowledgeCluster, SuggestionStatus
from clusters.selectors import cluster_pair_evidence
from clusters.services.changes import ClusterChangeError, cluster_fold, placement_lock, space_of
from memories.thresholds import ModelThresholds

# How far under ``cluster_merge`` a pair of centroids is still suggested (never under the
# ``cluster`` join threshold): with MiniLM's 0.75, pairs from 0.67 up.
SUGGESTION_BAND = 0.08


def suggestion_band(limits: ModelThresholds) -> tuple[float, float]:
    """[low, high): the centroid similarities a merge is suggested at."""
    return max(limits.cluster, limits.cluster_merge - SUGGESTION_BAND), limits.cluster_merge


def cluster_suggestions_record(*, pairs: list[tuple[float, int, int]], scanned: list[int], space_of: dict[int, int]) -> int:
    """Store the pairs (similarity, cluster, cluster) in the band as open suggestions, with their
    evidence; a pair a curator dismissed stays dismissed. Open suggestions of the ``scanned``
    clusters that were not found again (they drifted apart, or out of the band) go. Returns how
    many open suggestions were written."""
    found: set[tuple[int, int]] = set()
    written = 0
    for similarity, a, b in pairs:
        first, second = min(a, b), max(a, b)
        if (first, second) in found:
            continue
        found.add((first, second))
        existing = ClusterSuggestion.objects.filter(first_id=first, second_id=second).first()
        if existing is not None and existing.status == SuggestionStatus.DISMISSED:
            continue
        if existing is not None and not KnowledgeCluster.objects.filter(
                pk__in=[first, second], updated_at__gt=existing.updated_at).exists():
            written += 1  # neither cluster changed since: the evidence stands
            continue
        evidence = cluster_pair_evidence(first_id=first, second_id=second)
        if existing is None:
            ClusterSuggestion.objects.create(space_id=space_of[a], first_id=first, second_id=second,
                                             similarity=similarity, **evidence)
        else:
            existing.similarity, existing.shared_words, existing.pairs = similarity, evidence["shared_words"], evidence["pairs"]
            existing.save(update_fields=["similarity", "shared_words", "pairs", "updated_at"])
        written += 1
    stale = ClusterSuggestion.objects.filter(status=SuggestionStatus.OPEN, first_id__in=scanned) | \
        ClusterSuggestion.objects.filter(status=SuggestionStatus.OPEN, second_id__in=scanned)
    for pk, first, second in stale.values_list("pk", "first_id", "second_id"):
        if (first, second) not in found:
            ClusterSuggestion.objects.filter(pk=pk).delete()
    return written


def cluster_suggestion_decide(*, suggestion_id: int, action: str, user: str,
                              space_ids: list[int] | None = None) -> ClusterChange | None:
    """``merge``: the smaller cluster folds into the larger (a recorded, undoable change;
    returned); ``dismiss``: not one topic, never suggested again."""
    if action not in ("merge", "dismiss"):
        raise ClusterChangeError(f"unknown action {action!r}: merge or dismiss", field="action")
    with transaction.atomic():
        placement_lock(space_of(ClusterSuggestion, suggestion_id))
        queryset = ClusterSuggestion.objects.select_for_update()
        if space_ids is not None:
            queryset = queryset.filter(space_id__in=space_ids)
        suggestion = queryset.filter(pk=suggestion_id).first()
        if suggestion is None:
            raise ClusterChangeError("no such suggestion (one of its clusters may have been merged meanwhile)",
                                     code="not_found")
        if suggestion.status != SuggestionStatus.OPEN:
            raise ClusterChangeError(f"decided already by {suggestion.decided_by}: not one topic")
        if action == "dismiss":
            suggestion.status, suggestion.decided_by, suggestion.decided_at = (
                SuggestionStatus.DISMISSED, user[:150], timezone.now())
            suggestion.save(update_fields=["status", "decided_by", "decided_at", "updated_at"])
            return None
        pair = list(KnowledgeCluster.objects.select_for_update().defer("direction")
                    .filter(pk__in=[suggestion.first_id, suggestion.second_id]))
        keep, gone = sorted(pair, key=lambda c: (-c.member_count, c.pk))
        return cluster_fold(keep=keep, gone=gone, by=user, similarity=suggestion.similarity)
