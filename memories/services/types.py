"""A memory's type, reviewed (docs/flow.md#the-review-queue): an assignment the offline
classifier was unsure of waits in the review queue as a ``TypeChange`` (the memory keeps the
classifier's type meanwhile); a curator confirms or changes it there, on the memory page or in
bulk, and every such decision can be undone. The memory's history records each step: who
decided, what the classifier had chosen, who undid it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import INVALID, NOT_FOUND, ApplicationError
from memories.judgements.classify import TypeDecision
from memories.models import ChangeState, Memory, MemoryType, TypeChange
from memories.services.edit import memory_history_record


class TypeChangeError(ApplicationError):
    """A type decision the hub refuses (unknown type, already decided, changed since …)."""


def type_review_record(*, memory: Memory, decision: TypeDecision) -> TypeChange | None:
    """Queue ``memory``'s type for a curator when ``decision`` is unsure (runs in the upload's
    transaction, after the memory is stored with ``decision.memory_type``); None otherwise."""
    if not decision.unsure or decision.margin is None:
        return None
    return TypeChange.objects.create(space_id=memory.space_id, memory=memory, state=ChangeState.OPEN,
                                     chosen=decision.memory_type, runner_up=decision.runner_up or "",
                                     margin=round(decision.margin, 4))


def _why(review: TypeChange | None) -> str:
    if review is None or review.margin is None:
        return ""
    return f"the classifier chose {review.chosen} (runner-up {review.runner_up}, margin {review.margin:.2f})"


def memory_type_set(*, memory_id: Any, memory_type: str, user: str, review_id: int | None = None) -> TypeChange | None:
    """A curator sets ``memory_id``'s type to ``memory_type``. Confirming the type it has
    decides its open review, if any; otherwise an unchanged type is no decision (None).
    ``review_id``: the queue item the curator answered (refused when it is no longer open).
    Returns the decided ``TypeChange``, which ``type_change_undo`` reverts."""
    if memory_type not in MemoryType.values:
        raise TypeChangeError(f"memory_type must be one of {', '.join(MemoryType.values)}", code=INVALID,
                              field="memory_type")
    with transaction.atomic():
        # The memory's row before the review's: the order every writer of a memory keeps.
        memory = Memory.objects.select_for_update().only("pk", "space_id", "memory_type").filter(pk=memory_id).first()
        if memory is None:
            raise TypeChangeError("No such memory.", code=NOT_FOUND)
        review = TypeChange.objects.select_for_update().filter(memory_id=memory.pk, state=ChangeState.OPEN).first()
        if review_id is not None and (review is None or review.pk != review_id):
            raise TypeChangeError("This type was already decided.", code=INVALID)
        before = memory.memory_type
        if review is None and before == memory_type:
            return None
        now = timezone.now()
        if before != memory_type:
            Memory.objects.filter(pk=memory.pk).update(memory_type=memory_type, updated_at=now)
        why = _why(review)
        if review is not None:
            review.state, review.memory_type = ChangeState.DONE, memory_type
            review.decided_by, review.decided_at = user[:150], now
            review.save(update_fields=["state", "memory_type", "decided_by", "decided_at"])
            change = review
        else:
            change = TypeChange.objects.create(space_id=memory.space_id, memory_id=memory.pk, state=ChangeState.DONE,
                                               chosen=before, memory_type=memory_type, decided_by=user[:150],
                                               decided_at=now)
        memory_history_record(memory_id=memory.pk, editor=user, action="type confirmed" if before == memory_type
                              else "type", before={"memory_type": before}, after={"memory_type": memory_type},
                              note=why)
    return change


def type_review_decide(*, review_id: int, memory_type: str, user: str) -> TypeChange:
    """A curator answers a queue item: the memory's type is ``memory_type`` (its current one: a
    confirmation)."""
    memory_id = TypeChange.objects.filter(pk=review_id).values_list("memory_id", flat=True).first()
    if memory_id is None:
        raise TypeChangeError(f"No type review {review_id}.", code=NOT_FOUND)
    change = memory_type_set(memory_id=memory_id, memory_type=memory_type, user=user, review_id=review_id)
    assert change is not None  # an open review is always decided
    return change


def memory_types_set(*, memory_ids: Iterable[Any], memory_type: str, user: str) -> int:
    """The bulk "set type": each memory through ``memory_type_set`` (one decision each, each
    undoable). Returns how many memories were changed or had their review decided."""
    return sum(memory_type_set(memory_id=pk, memory_type=memory_type, user=user) is not None for pk in memory_ids)


def type_change_undo(*, change_id: int, user: str) -> TypeChange:
    """Undo a curator's type decision: the memory gets the type it had before (``chosen``), the
    change says who undid it, and an unsure assignment goes back to the queue."""
    with transaction.atomic():
        memory_id = TypeChange.objects.filter(pk=change_id).values_list("memory_id", flat=True).first()
        if memory_id is None:
            raise TypeChangeError(f"No type change {change_id}.", code=NOT_FOUND)
        memory = Memory.objects.select_for_update().only("pk", "space_id", "memory_type").get(pk=memory_id)
        change = TypeChange.objects.select_for_update().get(pk=change_id)
        if change.state != ChangeState.DONE:
            raise TypeChangeError("Only a decided type can be undone.", code=INVALID)
        if memory.memory_type != change.memory_type:
            raise TypeChangeError(f"The memory's type changed since (now {memory.memory_type}): "
                                  "undo the later change first.", code=INVALID)
        now = timezone.now()
        if change.chosen != change.memory_type:
            Memory.objects.filter(pk=memory.pk).update(memory_type=change.chosen, updated_at=now)
        change.state, change.undone_by, change.undone_at = ChangeState.UNDONE, user[:150], now
        change.save(update_fields=["state", "undone_by", "undone_at"])
        # A review answered and undone is open again: the classifier's doubt still stands.
        if change.margin is not None and not TypeChange.objects.filter(memory_id=memory.pk,
                                                                      state=ChangeState.OPEN).exists():
            TypeChange.objects.create(space_id=memory.space_id, memory_id=memory.pk, state=ChangeState.OPEN,
                                      chosen=change.chosen, runner_up=change.runner_up, margin=change.margin)
        memory_history_record(memory_id=memory.pk, editor=user, action="type undone",
                              before={"memory_type": change.memory_type}, after={"memory_type": change.chosen},
                              note=f"undid the decision {change.decided_by} made on "
                                   f"{change.decided_at:%Y-%m-%d %H:%M}" if change.decided_at else "")
    return change
