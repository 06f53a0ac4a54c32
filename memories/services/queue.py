"""A curator's decisions from the review queue (docs/flow.md#the-review-queue): a family of merge
candidates decided at once, the text a merge keeps when no LLM will write one, and the hub's own
decisions (supersessions, automatic merges) let stand so they leave the queue.

A *family* is every open candidate pair that shares a memory, directly or through others ("npm ci
fails on Node 14", "… 16", "… 18": three pairs, one decision). Merging it folds every member into
the oldest, whose id stays; "different" dismisses every pair so none is proposed again.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from memories.models import (
    CandidateStatus,
    ChangeKind,
    ChangeState,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MergeCandidate,
    Status,
)
from memories.services.candidates import memory_fold
from memories.services.edit import memory_history_record
from memories.services.inputs import MemoryInputError
from memories.services.review import memory_merge_write

# Which text a merged family keeps when the curator settles it at once: the survivor's own
# (``older``) or the newest member's (``newer``). None leaves the texts as contributions for the
# LLM to write one (with an LLM configured), as the pipeline's merges do.
KEEP_TEXTS = ("older", "newer")


def _open_family(candidate_ids: Iterable[int]) -> list[MergeCandidate]:
    candidates = list(MergeCandidate.objects.select_for_update().filter(pk__in=list(candidate_ids))
                      .order_by("pk"))
    if not candidates:
        raise MemoryInputError("candidates", "no such merge candidates")
    if all(c.status != CandidateStatus.OPEN for c in candidates):
        raise MemoryInputError("status", f"already {candidates[0].status}")
    return [c for c in candidates if c.status == CandidateStatus.OPEN]


def _close(candidates: list[MergeCandidate], status: str, decided_by: str) -> None:
    MergeCandidate.objects.filter(pk__in=[c.pk for c in candidates], status=CandidateStatus.OPEN).update(
        status=status, decided_by=decided_by[:150], decided_at=timezone.now())


def family_merge(*, candidate_ids: Iterable[int], decided_by: str, keep_text: str | None = None) -> Memory:
    """Merge every active memory of the open candidates ``candidate_ids`` into the oldest and close
    them. ``keep_text`` (``older`` / ``newer``) settles the merged text now: the oldest's own, or the
    newest member's, each field that side lacks taken from the newest member that has it
    (``_merged_fields``; an edit: redacted, re-embedded, its cluster updated); None leaves the folded
    texts as contributions for an LLM merge. Raises ``MemoryInputError`` when nothing is left to
    merge (decided meanwhile, or fewer than two members still active)."""
    if keep_text is not None and keep_text not in KEEP_TEXTS:
        raise MemoryInputError("keep_text", f"must be one of {', '.join(KEEP_TEXTS)}")
    with transaction.atomic():
        candidates = _open_family(candidate_ids)
        ids = {c.memory_id for c in candidates} | {c.duplicate_of_id for c in candidates}
        members = sorted(Memory.objects.select_for_update().defer("embedding").filter(pk__in=ids, status=Status.ACTIVE),
                         key=lambda m: (m.created_at, str(m.pk)))
        if len(members) < 2:
            raise MemoryInputError("status", "fewer than two of these memories are still active")
        if len({m.space_id for m in members}) != 1:  # never across spaces (a family is found within one)
            raise MemoryInputError("space", "these memories are in different spaces")
        keep, others = members[0], members[1:]
        similarity = {c.memory_id: c.similarity for c in candidates} | {c.duplicate_of_id: c.similarity
                                                                        for c in candidates}
        _close(candidates, CandidateStatus.MERGED, decided_by)  # before the folds, which would close them as "curator"
        for other in others:
            memory_fold(keep_id=keep.pk, drop_id=other.pk, similarity=similarity.get(other.pk, 1.0), reason="curator")
        text = {"older": "kept its own text", "newer": "took the newest one's text", None: "texts left for the LLM"}
        memory_history_record(memory_id=keep.pk, editor=decided_by, action="merge",
                              before={f: getattr(keep, f) for f in _TEXT_FIELDS},  # what an undo gives back
                              after={"merged": [str(m.pk) for m in others]},
                              note=f"merged {len(others)} from the review queue; {text[keep_text]}")
        if keep_text is not None:
            fields = _merged_fields(members, keep_text)
            if fields == {f: getattr(keep, f) for f in _TEXT_FIELDS}:
                keep.contributions.filter(merged_at__isnull=True).update(merged_at=timezone.now())
                Memory.objects.filter(pk=keep.pk).update(merge_pending=False)
            else:
                memory_merge_write(memory_id=keep.pk, editor=decided_by, **fields)
    return Memory.objects.defer("embedding").get(pk=keep.pk)


_TEXT_FIELDS = ("content", "context", "resolution")


def _merged_fields(members: list[Memory], keep_text: str) -> dict[str, str]:
    """The merged memory's text, field by field: the chosen side's (``older``: the oldest's,
    ``newer``: the newest's), and where that side has nothing, the newest member that has
    something. A merge empties no field any side had (the older one's context stays when the
    newer text has none)."""
    order = members if keep_text == "older" else list(reversed(members))
    fallback = list(reversed(members))
    fields: dict[str, str] = {}
    for name in _TEXT_FIELDS:
        chosen = getattr(order[0], name)
        if not chosen.strip():
            chosen = next((getattr(m, name) for m in fallback if getattr(m, name).strip()), chosen)
        fields[name] = chosen
    return fields


def family_dismiss(*, candidate_ids: Iterable[int], decided_by: str) -> int:
    """The family's memories are different: every open pair of it is dismissed for good."""
    with transaction.atomic():
        candidates = _open_family(candidate_ids)
        _close(candidates, CandidateStatus.DISMISSED, decided_by)
    return len(candidates)


def change_let_stand(*, change_id: int, user: str) -> KnowledgeChange:
    """A curator saw a supersession the hub (or the LLM) decided and lets it stand: it leaves the
    review queue; undoing it stays possible from the memory's page."""
    with transaction.atomic():
        change = KnowledgeChange.objects.select_for_update().filter(pk=change_id).first()
        if change is None:
            raise MemoryInputError("change", f"no change {change_id}")
        if change.kind != ChangeKind.SUPERSESSION or change.state != ChangeState.DONE:
            raise MemoryInputError("change", "only a supersession in force can be accepted")
        KnowledgeChange.objects.filter(pk=change.pk).update(reviewed_by=user[:150], reviewed_at=timezone.now())
    return change


def contribution_let_stand(*, contribution_id: int, user: str) -> MemoryContribution:
    """A curator saw an automatic merge and lets it stand: it leaves the review queue; splitting
    it back stays possible from the memory's page."""
    with transaction.atomic():
        contribution = MemoryContribution.objects.select_for_update().filter(pk=contribution_id).first()
        if contribution is None:
            raise MemoryInputError("contribution", f"no contribution {contribution_id}")
        MemoryContribution.objects.filter(pk=contribution.pk).update(reviewed_by=user[:150],
                                                                     reviewed_at=timezone.now())
    return contribution



def change_let_stand_undo(*, change_id: int) -> KnowledgeChange:
    """Undo "accept" on a supersession: it is back in the review queue, waiting for a decision."""
    change = KnowledgeChange.objects.filter(pk=change_id).first()
    if change is None:
        raise MemoryInputError("change", f"no change {change_id}")
    KnowledgeChange.objects.filter(pk=change.pk).update(reviewed_by="", reviewed_at=None)
    return change


def contribution_let_stand_undo(*, contribution_id: int) -> MemoryContribution:
    """Undo "accept" on an automatic merge: it is back in the review queue."""
    contribution = MemoryContribution.objects.filter(pk=contribution_id).first()
    if contribution is None:
        raise MemoryInputError("contribution", f"no contribution {contribution_id}")
    MemoryContribution.objects.filter(pk=contribution.pk).update(reviewed_by="", reviewed_at=None)
    return contribution
