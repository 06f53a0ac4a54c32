"""Merge candidates: pairs that may be one memory, left to a judgement instead of merged on
similarity alone (docs/flow.md#merge-candidates). The LLM's verdict (when one is
configured) or a curator's decision closes a candidate; folding one memory into another is
shared with the pipeline's consolidation step."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from memories import signals
from memories.models import CandidateStatus, Memory, MemoryContribution, MergeCandidate, Status
from memories.services.edit import memory_history_record
from memories.services.inputs import MemoryInputError, tags_normalise

if TYPE_CHECKING:
    from memories.judgements.duplicate import DuplicateMatch

logger = logging.getLogger("ultron.memories")


def merge_candidate_record(
    *, memory: Memory, match: DuplicateMatch, llm_verdict: bool | None = None
) -> MergeCandidate:
    """Record that ``memory`` may duplicate ``match.memory``. A pair already recorded (in
    either order, open or decided) is returned as it is: a dismissed pair never comes back.
    An LLM verdict of "distinct" closes the candidate as dismissed by the LLM."""
    existing = merge_candidate_for_pair(memory.pk, match.memory.pk)
    if existing is not None:
        return existing
    dismissed = llm_verdict is False
    fields: dict[str, Any] = {
        "similarity": round(float(match.similarity), 4),
        "conflicts": list(match.conflicts),
        "llm_verdict": llm_verdict,
        "status": CandidateStatus.DISMISSED if dismissed else CandidateStatus.OPEN,
        "decided_by": "llm" if dismissed else "",
        "decided_at": timezone.now() if dismissed else None,
    }
    try:
        with transaction.atomic():
            return MergeCandidate.objects.create(space_id=memory.space_id, memory=memory,
                                                 duplicate_of_id=match.memory.pk, **fields)
    except IntegrityError:  # recorded meanwhile by another process
        found = merge_candidate_for_pair(memory.pk, match.memory.pk)
        assert found is not None
        return found


def merge_candidate_for_pair(first: Any, second: Any) -> MergeCandidate | None:
    return (
        MergeCandidate.objects.filter(Q(memory_id=first, duplicate_of_id=second) | Q(memory_id=second, duplicate_of_id=first))
        .order_by("pk").first()
    )


def merge_candidate_accept(*, candidate_id: Any, decided_by: str) -> Memory:
    """A curator says the pair is one memory: fold the newer into the older (its text kept as
    a contribution, its hits and tags added) and close the candidate. Raises
    ``MemoryInputError`` when the candidate is no longer open or a memory is gone."""
    with transaction.atomic():
        candidate = MergeCandidate.objects.select_for_update().filter(pk=candidate_id).first()
        if candidate is None:
            raise MergeCandidate.DoesNotExist(f"merge candidate {candidate_id} does not exist")
        if candidate.status != CandidateStatus.OPEN:
            raise MemoryInputError("status", f"this candidate was already {candidate.status}")
        pair = {candidate.memory_id, candidate.duplicate_of_id}
        alive = {m.pk: m for m in Memory.objects.defer("embedding").filter(pk__in=pair, status=Status.ACTIVE)}
        if len(alive) != 2:
            raise MemoryInputError("status", "one of the two memories is no longer active")
        # The older one survives, as in every merge: links to it keep working (memories_merge_by_hand).
        keep, drop = sorted(alive.values(), key=lambda m: (m.created_at, str(m.pk)))
        memory_fold(keep_id=keep.pk, drop_id=drop.pk, similarity=candidate.similarity, reason="curator")
        candidate.status = CandidateStatus.MERGED
        candidate.decided_by = decided_by[:150]
        candidate.decided_at = timezone.now()
        candidate.save(update_fields=["status", "decided_by", "decided_at"])
    return Memory.objects.defer("embedding").get(pk=keep.pk)


def merge_candidate_dismiss(*, candidate_id: Any, decided_by: str) -> MergeCandidate:
    """A curator says the two are different memories: the pair is never proposed again."""
    with transaction.atomic():
        candidate = MergeCandidate.objects.select_for_update().filter(pk=candidate_id).first()
        if candidate is None:
            raise MergeCandidate.DoesNotExist(f"merge candidate {candidate_id} does not exist")
        if candidate.status != CandidateStatus.OPEN:
            raise MemoryInputError("status", f"this candidate was already {candidate.status}")
        candidate.status = CandidateStatus.DISMISSED
        candidate.decided_by = decided_by[:150]
        candidate.decided_at = timezone.now()
        candidate.save(update_fields=["status", "decided_by", "decided_at"])
    return candidate


def memory_fold(*, keep_id: Any, drop_id: Any, similarity: float, reason: str) -> bool:
    """Fold memory ``drop`` into ``keep``: its body becomes a contribution of ``keep`` (for an
    LLM merge, when one is configured), its own contributions move along, hits and tags add
    up, and ``drop`` is archived. False if either is no longer active."""
    with transaction.atomic():
        pair = {m.pk: m for m in Memory.objects.select_for_update().defer("embedding")
                .filter(pk__in=[keep_id, drop_id], status=Status.ACTIVE)}
        if len(pair) != 2 or len({m.space_id for m in pair.values()}) != 1:  # never across spaces
            return False
        keep, drop = pair[keep_id], pair[drop_id]
        now = timezone.now()
        moved = list(MemoryContribution.objects.filter(memory=drop).values_list("pk", flat=True))
        # What the fold changes on ``keep`` is kept with the folded body, so that it can be split back
        # (services/unmerge.py): the contributions that moved along, the hits and tags it added.
        fold = {"moved": moved, "hits": drop.hit_count, "tags_before": keep.tags}
        MemoryContribution.objects.create(
            space_id=keep.space_id, memory=keep, agent=drop.agent, content=drop.content, context=drop.context,
            resolution=drop.resolution, tags=drop.tags, similarity=similarity, match_reason=reason,
            source=drop.source, provenance={**drop.provenance, "folded_from": str(drop.pk), "fold": fold},
            redaction_counts=drop.redaction_counts,
        )
        MemoryContribution.objects.filter(pk__in=moved).update(memory=keep)
        Memory.objects.filter(pk=keep.pk).update(
            # merge_pending: the folded body is now an unmerged contribution, for an LLM merge to write one text.
            hit_count=F("hit_count") + drop.hit_count, merge_pending=True, updated_at=now,
            tags=tags_normalise(keep.tags + drop.tags),
        )
        Memory.objects.filter(pk=drop.pk).update(status=Status.ARCHIVED, archived_at=now)
        # A candidate recorded for this very pair is settled by the fold.
        MergeCandidate.objects.filter(
            Q(memory_id=keep.pk, duplicate_of_id=drop.pk) | Q(memory_id=drop.pk, duplicate_of_id=keep.pk),
            status=CandidateStatus.OPEN,
        ).update(status=CandidateStatus.MERGED, decided_by=reason[:150], decided_at=now)
        # The archived memory leaves its cluster in this same transaction (clusters/receivers.py).
        signals.memory_removed.send(sender=Memory, memory_id=drop.pk)
    return True


def memories_merge_by_hand(*, first_id: Any, second_id: Any, editor: str) -> Memory:
    """A curator merges two memories they found themselves: the newer folds into the older (the
    survivor keeps hits and contributions; the other is archived), and the survivor's history
    says who merged what. Raises ``MemoryInputError`` when either is gone or not active, or the
    two are in different spaces."""
    with transaction.atomic():
        pair = list(Memory.objects.select_for_update().defer("embedding").filter(pk__in=[first_id, second_id]))
        if len(pair) != 2:
            raise MemoryInputError("memory", "one of the two memories no longer exists")
        if any(m.status != Status.ACTIVE for m in pair):
            raise MemoryInputError("status", "both memories must be active to merge")
        if pair[0].space_id != pair[1].space_id:
            raise MemoryInputError("space", "the two memories are in different spaces: memories merge only "
                                            "within one (promote a copy instead)")
        # The older one survives, as in every merge: links to it keep working.
        keep, drop = sorted(pair, key=lambda m: (m.created_at, str(m.pk)))
        memory_fold(keep_id=keep.pk, drop_id=drop.pk, similarity=1.0, reason="curator")
        memory_history_record(memory_id=keep.pk, editor=editor, action="merge",
                              after={"merged": str(drop.pk)}, note="merged by hand")
    return keep
