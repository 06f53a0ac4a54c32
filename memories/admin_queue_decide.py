"""What each decision of the review queue does, and how it is undone (``admin_queue.decide_view``).

Every handler takes a row's ids and an action and returns an ``Outcome``: the sentence the row
shows once decided, the memories it names, and the action that undoes it on the same row's token
(None when the action was itself an undo). A decided row keeps its Undo for as long as the page is
open; the memory's page keeps the rest (its history's Revert, the merge panel's Split back).

    family:<candidate ids>  merge (keep-newer, keep-older) / different;  undo: unmerge / reopen
    change:<id>             a conflict's new / old / both / merge;  undo: reopen
                            a supersession's accept / undo;  undo: unaccept / resupersede
    contribution:<id>       accept / split;  undo: unaccept / (memory:<kept>.<split> refold)
    type:<id>               accept / set-type;  undo: undo
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memories.admin_types import type_outcome
from memories.models import ChangeKind
from memories.selectors import review as reads
from memories.services import conflict_decide, supersession_undo
from memories.services.candidates import memory_fold
from memories.services.inputs import MemoryInputError
from memories.services.queue import (
    change_let_stand,
    change_let_stand_undo,
    contribution_let_stand,
    contribution_let_stand_undo,
    family_dismiss,
    family_merge,
)
from memories.services.review import contribution_split
from memories.services.supersede import memory_supersede
from memories.services.types import type_change_undo, type_review_decide
from memories.services.unmerge import conflict_reopen, family_reopen, family_unmerge


@dataclass
class Outcome:
    message: str
    memories: list[Any] = field(default_factory=list)
    undo: str | None = None  # the action that undoes this decision, on ``token``
    token: str | None = None  # the row to undo it on, when it is not the decided row's own


def _memories(*ids: Any) -> list[Any]:
    return reads.memories_named(ids=list(ids))


def family(ids: list[int], action: str, user: str, llm: bool) -> Outcome | None:
    if action in ("merge", "accept"):
        action = "merge" if llm else "keep-newer"
    if action == "unmerge":
        memories = family_unmerge(candidate_ids=ids, user=user)
        return Outcome("Merge undone: each memory is its own again, with its text and contributions; "
                       "the pair is back in the queue.", memories)
    if action == "reopen":
        family_reopen(candidate_ids=ids, user=user)
        return Outcome("Reopened: the pair is back in the queue.", _family_memories(ids))
    if action == "different":
        family_dismiss(candidate_ids=ids, decided_by=user)
        return Outcome("Different: these pairs will not be proposed again.", _family_memories(ids), "reopen")
    keep_text = {"merge": None, "keep-newer": "newer", "keep-older": "older"}.get(action, "")
    if keep_text == "":
        return None
    kept = family_merge(candidate_ids=ids, decided_by=user, keep_text=keep_text)
    return Outcome({None: "Merged into the oldest; the LLM writes one text from them.",
                    "newer": "Merged into the oldest, which now has the newer text.",
                    "older": "Merged into the oldest, which keeps its own text."}[keep_text], [kept], "unmerge")


def _family_memories(ids: list[int]) -> list[Any]:
    return _memories(*reads.family_memory_ids(candidate_ids=ids))


def change(change_id: int, action: str, user: str) -> Outcome | None:
    row = reads.change_row(change_id=change_id)
    if action == "reopen":
        reopened = conflict_reopen(change_id=change_id, user=user)
        return Outcome("Reopened: the conflict waits for a decision again.",
                       _memories(reopened.old_id, reopened.new_id))
    def names() -> list[Any]:  # read after the decision: each memory's status as it now is
        return _memories(row.old_id, row.new_id)

    if row.kind == ChangeKind.CONFLICT:
        decision = {"accept": "new", "different": "both"}.get(action, action)
        if decision not in ("new", "old", "both", "merge"):
            return None
        conflict_decide(change_id=change_id, decision=decision, user=user)
        return Outcome({"new": "Settled: the newer memory is current; the older one is superseded.",
                        "old": "Settled: the older memory stays current; the newer one is superseded.",
                        "both": "Settled: both hold; nothing changed.",
                        "merge": "Merged into the older memory, with the newer text; no field either had is lost."
                        }[decision], names(), "reopen")
    if action == "undo":
        supersession_undo(change_id=change_id, user=user)
        return Outcome("Undone: the older memory is current again.", names(), "resupersede")
    if action == "resupersede":
        memory_supersede(old_id=row.old_id, new_id=row.new_id, decided_by=user, order=row.order or "curator",
                         evidence=row.evidence)
        return Outcome("Superseded again: the newer memory is current.", names())
    if action == "accept":
        change_let_stand(change_id=change_id, user=user)
        return Outcome("Accepted: the newer memory stays current.", names(), "unaccept")
    if action == "unaccept":
        change_let_stand_undo(change_id=change_id)
        return Outcome("Back in the queue: the supersession waits for a decision.", names())
    return None


def contribution(contribution_id: int, action: str, user: str) -> Outcome | None:
    if action in ("split", "undo"):
        kept = reads.contribution_memory_id(contribution_id=contribution_id)
        new = contribution_split(contribution_id=contribution_id, editor=user)
        return Outcome(f"Split back into a memory of its own ({new.pk}).", _memories(kept, new.pk), "refold",
                       f"memory:{kept}.{new.pk}")
    if action == "accept":
        kept_row = contribution_let_stand(contribution_id=contribution_id, user=user)
        return Outcome("Accepted: the merge stands.", _memories(kept_row.memory_id), "unaccept")
    if action == "unaccept":
        kept_row = contribution_let_stand_undo(contribution_id=contribution_id)
        return Outcome("Back in the queue: the automatic merge waits for a decision.", _memories(kept_row.memory_id))
    return None


def memory_pair(ids: list[int], action: str, user: str) -> Outcome | None:
    """``memory:<kept>.<split>`` refold: a split undone, the split memory folded back into the kept one."""
    if action != "refold" or len(ids) != 2:
        return None
    if not memory_fold(keep_id=ids[0], drop_id=ids[1], similarity=1.0, reason="curator"):
        raise MemoryInputError("status", "one of the two memories is no longer active")
    return Outcome("Split undone: merged back.", _memories(ids[0]))


def type_decision(review_id: int, action: str, user: str, memory_type: str) -> Outcome | None:
    if action == "undo":
        if not reads.type_change_decided(change_id=review_id):
            return None  # an open review has nothing to undo (the bulk bar's Undo skips it)
        undone = type_change_undo(change_id=review_id, user=user)
        return Outcome(f"Undone: the type is {undone.chosen} again.", _memories(undone.memory_id))
    if action == "accept":
        memory_type = reads.type_review_chosen(review_id=review_id) or ""
    elif action != "set-type":
        return None
    decided = type_review_decide(review_id=review_id, memory_type=memory_type, user=user)
    return Outcome(type_outcome(decided), _memories(decided.memory_id), "undo", f"type:{decided.pk}")
