"""Undoing a curator's decisions on pairs (docs/flow.md#the-review-queue): a merge split back, a
"different" reopened, a conflict's settlement taken back, an edit reverted to an earlier version.
Each puts the rows back as they were before the decision and says so in the memories' history.

A merge folds each memory into the oldest (``candidates.memory_fold``): the folded memory is
archived, its body becomes a contribution of the survivor and its own contributions, hits and tags
move along. The fold keeps what it moved with that contribution (``provenance["fold"]``), so
splitting back restores the folded memory as it was — its id, text, contributions, hits and
history — and takes from the survivor what the fold gave it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from memories import signals
from memories.models import (
    CandidateStatus,
    ChangeKind,
    ChangeState,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MemoryEdit,
    MergeCandidate,
    Status,
)
from memories.services.edit import EditResult, memory_edit, memory_history_record
from memories.services.inputs import MemoryInputError

_TEXT_FIELDS = ("content", "context", "resolution")
REVERTIBLE = (*_TEXT_FIELDS, "tags", "memory_type")  # what a history entry's "before" can give back
SETTLED = "conflict settled: "  # how a supersession made by settling a conflict begins its evidence


def memory_unfold(*, keep_id: Any, drop_id: Any, editor: str) -> Memory:
    """Split ``drop`` back out of ``keep``, which it was folded into: ``drop`` is active again with
    its own contributions; ``keep`` loses the folded body, the hits and the tags the fold added
    (tags it had before stay). Raises ``MemoryInputError`` when there is no such fold in force."""
    with transaction.atomic():
        rows = {str(m.pk): m for m in Memory.objects.select_for_update().defer("embedding")
                .filter(pk__in=[keep_id, drop_id]).order_by("pk")}
        keep, drop = rows.get(str(keep_id)), rows.get(str(drop_id))
        if keep is None or drop is None or keep.space_id != drop.space_id:
            raise MemoryInputError("memory", "one of the two memories no longer exists")
        body = (MemoryContribution.objects.select_for_update().filter(memory=keep, provenance__folded_from=str(drop.pk))
                .order_by("-pk").first())
        if body is None or drop.status != Status.ARCHIVED:
            raise MemoryInputError("status", "this memory is not merged into the other one any more")
        fold = body.provenance.get("fold") or {}
        MemoryContribution.objects.filter(pk__in=fold.get("moved") or [], memory=keep).update(memory=drop)
        body.delete()
        added = set(drop.tags) - set(fold.get("tags_before") or [])
        still_pending = keep.contributions.filter(merged_at__isnull=True).exists()
        Memory.objects.filter(pk=keep.pk).update(
            hit_count=Greatest(F("hit_count") - int(fold.get("hits", drop.hit_count)), 1), merge_pending=still_pending,
            tags=[t for t in keep.tags if t not in added], updated_at=timezone.now())
        Memory.objects.filter(pk=drop.pk).update(status=Status.ACTIVE, archived_at=None, updated_at=timezone.now())
        memory_history_record(memory_id=keep.pk, editor=editor, action="unmerge", after={"split": str(drop.pk)},
                              note="a merge was undone: the other memory is its own again")
        memory_history_record(memory_id=drop.pk, editor=editor, action="unmerge",
                              before={"status": Status.ARCHIVED, "merged_into": str(keep.pk)},
                              after={"status": Status.ACTIVE}, note="split back out of the memory it was merged into")
        signals.memory_changed.send(sender=Memory, memory_id=drop.pk)  # back in a cluster
    return Memory.objects.defer("embedding").get(pk=drop.pk)


def family_unmerge(*, candidate_ids: list[int], user: str) -> list[Memory]:
    """Undo a family's merge: every member folded into the survivor is split back, the survivor's
    text is what it was before the merge (the merge may have written the newer one), and the pairs
    are open again in the queue. Returns the memories, survivor first."""
    with transaction.atomic():
        candidates = list(MergeCandidate.objects.select_for_update().filter(pk__in=candidate_ids).order_by("pk"))
        if not candidates or any(c.status != CandidateStatus.MERGED for c in candidates):
            raise MemoryInputError("status", "this merge is not in force any more (undone or decided again)")
        ids = {c.memory_id for c in candidates} | {c.duplicate_of_id for c in candidates}
        members = list(Memory.objects.defer("embedding").filter(pk__in=ids))
        active = [m for m in members if m.status == Status.ACTIVE]
        if len(active) != 1:
            raise MemoryInputError("status", "the merged memory was changed since (archived or split)")
        keep = active[0]
        merge_entry = MemoryEdit.objects.filter(memory=keep, action="merge").order_by("-created_at", "-pk").first()
        split = [memory_unfold(keep_id=keep.pk, drop_id=m.pk, editor=user) for m in members if m.pk != keep.pk]
        before = (merge_entry.before if merge_entry else {}) or {}
        if all(f in before for f in _TEXT_FIELDS):
            current = Memory.objects.defer("embedding").get(pk=keep.pk)
            if any(getattr(current, f) != before[f] for f in _TEXT_FIELDS):
                memory_edit(memory_id=keep.pk, editor=user, content=before["content"], context=before["context"],
                            resolution=before["resolution"], tags=current.tags)
        MergeCandidate.objects.filter(pk__in=[c.pk for c in candidates]).update(
            status=CandidateStatus.OPEN, decided_by="", decided_at=None)
    return [Memory.objects.defer("embedding").get(pk=keep.pk), *split]


def family_reopen(*, candidate_ids: list[int], user: str) -> int:
    """Undo "different": the family's dismissed pairs whose memories are both still active are open
    again in the queue. Returns how many."""
    with transaction.atomic():
        candidates = list(MergeCandidate.objects.select_for_update().select_related("memory", "duplicate_of")
                          .filter(pk__in=candidate_ids, status=CandidateStatus.DISMISSED))
        live = [c for c in candidates if c.memory.status == Status.ACTIVE and c.duplicate_of.status == Status.ACTIVE]
        if not live:
            raise MemoryInputError("status", "nothing to reopen: the pairs were decided again or a memory is gone")
        MergeCandidate.objects.filter(pk__in=[c.pk for c in live]).update(
            status=CandidateStatus.OPEN, decided_by="", decided_at=None)
        for candidate in live:
            memory_history_record(memory_id=candidate.memory_id, editor=user, action="reopen",
                                  note=f"'different' undone: the pair with {candidate.duplicate_of_id} is open again")
    return len(live)


def conflict_reopen(*, change_id: int, user: str) -> KnowledgeChange:
    """Undo a conflict's settlement, whichever it was: a supersession it made is taken back (the
    superseded memory is current again), a merge is split back, the pair's merge candidate that the
    decision closed is open again, and the conflict waits in the queue once more."""
    from memories.services.supersede import supersession_undo

    with transaction.atomic():
        change = KnowledgeChange.objects.select_for_update().filter(pk=change_id).first()
        if change is None:
            raise MemoryInputError("change", f"no change {change_id}")
        decision, decided_at, decided_by = change.order, change.decided_at, change.decided_by
        settled_new = change.kind == ChangeKind.SUPERSESSION and change.evidence.startswith(SETTLED)
        if change.state != ChangeState.DONE or not (settled_new or (
                change.kind == ChangeKind.CONFLICT and decision in ("old", "both", "merge"))):
            raise MemoryInputError("change", "only a settled conflict can be reopened")
        if settled_new:  # "new": the conflict's own row became the supersession
            supersession_undo(change_id=change.pk, user=user)
        elif decision == "old":  # the reversed pair's supersession
            reverse = KnowledgeChange.objects.filter(old_id=change.new_id, new_id=change.old_id,
                                                     kind=ChangeKind.SUPERSESSION, state=ChangeState.DONE).first()
            if reverse is not None:
                supersession_undo(change_id=reverse.pk, user=user)
        elif decision == "merge":
            pair = MergeCandidate.objects.filter(memory_id=change.new_id, duplicate_of_id=change.old_id,
                                                 status=CandidateStatus.MERGED).first()
            if pair is not None:
                family_unmerge(candidate_ids=[pair.pk], user=user)
        if (settled_new or decision == "old") and decided_at is not None:  # the pair these closed
            MergeCandidate.objects.filter(memory_id=change.new_id, duplicate_of_id=change.old_id,
                                          status=CandidateStatus.DISMISSED, decided_by=decided_by[:150],
                                          decided_at__gte=decided_at - timedelta(minutes=1)).update(
                status=CandidateStatus.OPEN, decided_by="", decided_at=None)
        KnowledgeChange.objects.filter(pk=change.pk).update(
            kind=ChangeKind.CONFLICT, state=ChangeState.OPEN, order="", decided_by="", decided_at=None,
            evidence=change.evidence.removeprefix(SETTLED),
            undone_by=user[:150], undone_at=timezone.now())
        memory_history_record(memory_id=change.new_id, editor=user, action="reopen",
                              note=f"the conflict with {change.old_id} is open again (its settlement was undone)")
        change.refresh_from_db()
    return change


def memory_revert(*, memory_id: Any, edit_id: int, editor: str) -> EditResult:
    """Give a memory back the text, tags and type it had before one of its edits (any entry of its
    history that changed them): an edit of its own, recorded and undoable the same way."""
    entry = MemoryEdit.objects.filter(pk=edit_id, memory_id=memory_id).first()
    if entry is None:
        raise MemoryInputError("edit", "no such entry in this memory's history")
    before = entry.before or {}
    if not any(f in before for f in REVERTIBLE):
        raise MemoryInputError("edit", "this entry changed no text, tags or type: there is nothing to revert to")
    memory = Memory.objects.defer("embedding").get(pk=memory_id)
    return memory_edit(
        memory_id=memory_id, editor=editor,
        **{f: before.get(f, getattr(memory, f)) for f in _TEXT_FIELDS}, tags=before.get("tags", memory.tags),
        memory_type=before.get("memory_type"))
