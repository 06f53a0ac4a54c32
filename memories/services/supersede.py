"""Knowledge that changes (docs/flow.md#supersession): a newer memory supersedes an older one on
its subject, two that disagree wait for a curator, and every supersession can be undone.

An upload is checked against its nearest memories (those the duplicate check read) once it is
stored as a new memory: ``memories.judgements.supersede.change_decide`` says whether it replaces
one of them (the old one then leaves search, its cluster and the tiers, keeping its text and
history), conflicts with one (a ``KnowledgeChange`` left open for a curator), or neither.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from core.errors import INVALID, NOT_FOUND, ApplicationError
from memories import signals
from memories.judgements.supersede import CONFLICT, SUPERSEDES, change_decide, llm_change_verdict
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
from memories.services.edit import memory_history_record
from memories.text import memory_body
from memories.thresholds import model_thresholds

# Conflicts recorded per upload at most: a curator rarely needs a third look-alike to decide.
CONFLICTS_PER_UPLOAD = 2
HUB = "hub"


class ChangeError(ApplicationError):
    """A supersession or conflict decision the hub refuses (already undone, not open …)."""


@dataclass(frozen=True)
class ChangesFound:
    superseded: list[KnowledgeChange]
    conflicts: list[KnowledgeChange]


def _body(memory: Any) -> str:
    return memory_body(memory.content, memory.context, memory.resolution)


def changes_check(*, memory: Memory, neighbours: Iterable[Any]) -> ChangesFound:
    """Judge a newly stored ``memory`` against its ``neighbours`` (active memories of its space
    with a ``similarity``, nearest first): supersede the first it replaces, record conflicts
    with those it contradicts. Runs inside the upload's transaction, before the new memory's
    cluster is assigned (memory rows before cluster rows, the order every writer keeps)."""
    limits = model_thresholds()
    superseded: list[KnowledgeChange] = []
    conflicts: list[KnowledgeChange] = []
    body = _body(memory)
    rows = [row for row in sorted(neighbours, key=lambda row: -row.similarity)
            if row.pk != memory.pk and not getattr(row, "exact", False)]
    confirmed = last_confirmed([row for row in rows if row.similarity >= limits.soft])
    now = memory.created_at or timezone.now()
    for neighbour in rows:
        seen = confirmed.get(neighbour.pk)
        verdict = change_decide(old=_body(neighbour), new=body, related=neighbour.similarity >= limits.cluster,
                                close=neighbour.similarity >= limits.soft,
                                apart_days=(now - seen).total_seconds() / 86400 if seen else None,
                                old_content=neighbour.content, new_content=memory.content)
        if verdict.kind == SUPERSEDES and not superseded:
            superseded.append(memory_supersede(old_id=neighbour.pk, new_id=memory.pk, decided_by=HUB,
                                               order=verdict.order, evidence=verdict.evidence,
                                               similarity=neighbour.similarity))
        elif verdict.kind == CONFLICT and len(conflicts) < CONFLICTS_PER_UPLOAD:
            conflicts.append(_change_record(old_id=neighbour.pk, new_id=memory.pk, kind=ChangeKind.CONFLICT,
                                            state=ChangeState.OPEN, evidence=verdict.evidence,
                                            similarity=neighbour.similarity))
    return ChangesFound(superseded, conflicts)


def last_confirmed(memories: Iterable[Any]) -> dict[Any, Any]:
    """When each memory's statement was last made: its creation, or the latest upload merged into
    it (an agent restating it confirms it). For the ``later`` order of a supersession."""
    rows = list(memories)
    seen = {row.pk: row.created_at for row in rows}
    if seen:
        for memory_id, latest in (MemoryContribution.objects.filter(memory_id__in=list(seen))
                                  .values("memory_id").annotate(latest=Max("created_at"))
                                  .values_list("memory_id", "latest")):
            seen[memory_id] = max(seen[memory_id], latest)
    return seen


def _change_record(*, old_id: Any, new_id: Any, kind: str, state: str, similarity: float, evidence: str = "",
                   order: str = "", decided_by: str = "") -> KnowledgeChange:
    """The pair's change row, created or brought up to date (a pair has one row, whatever happened to it)."""
    space_id = Memory.objects.filter(pk=new_id).values_list("space_id", flat=True).get()
    fields = {"kind": kind, "state": state, "order": order, "evidence": evidence[:2000],
              "similarity": round(float(similarity), 4), "decided_by": decided_by[:150],
              "decided_at": timezone.now() if state == ChangeState.DONE else None, "undone_by": "", "undone_at": None}
    try:
        with transaction.atomic():
            change, _ = KnowledgeChange.objects.update_or_create(old_id=old_id, new_id=new_id,
                                                                defaults={"space_id": space_id, **fields})
    except IntegrityError:  # recorded meanwhile by another process: ours wins, it is newer
        change = KnowledgeChange.objects.get(old_id=old_id, new_id=new_id)
        KnowledgeChange.objects.filter(pk=change.pk).update(**fields)
        change.refresh_from_db()
    return change


def memory_supersede(*, old_id: Any, new_id: Any, decided_by: str, order: str = "curator", evidence: str = "",
                     similarity: float | None = None) -> KnowledgeChange:
    """``new_id`` replaces ``old_id`` (both active memories of one space): the old one keeps its
    text and history but is no longer current (status ``superseded``, ``superseded_by``,
    ``valid_until``), leaves its cluster and the tiers. Recorded as a ``KnowledgeChange`` and in
    the old memory's history."""
    with transaction.atomic():
        rows = {m.pk: m for m in Memory.objects.select_for_update().defer("search_vector")
                .filter(pk__in=[old_id, new_id]).order_by("pk")}
        old, new = rows.get(old_id), rows.get(new_id)
        if old is None or new is None:
            raise ChangeError("Both memories must exist.", code=NOT_FOUND)
        if old.space_id != new.space_id:
            raise ChangeError("A memory is only superseded by one of its own space.", code=INVALID)
        if old.status != Status.ACTIVE or new.status != Status.ACTIVE:
            raise ChangeError("Only an active memory supersedes, or is superseded by, another.", code=INVALID)
        now = timezone.now()
        Memory.objects.filter(pk=old.pk).update(status=Status.SUPERSEDED, superseded_by=new.pk, valid_until=now,
                                                updated_at=now)
        if similarity is None:
            similarity = 1.0 - _distance(old, new)
        change = _change_record(old_id=old.pk, new_id=new.pk, kind=ChangeKind.SUPERSESSION, state=ChangeState.DONE,
                                order=order, evidence=evidence, similarity=similarity, decided_by=decided_by)
        memory_history_record(memory_id=old.pk, editor=decided_by, action="superseded",
                              before={"status": Status.ACTIVE}, after={"status": Status.SUPERSEDED,
                                                                       "superseded_by": str(new.pk)},
                              note=f"{order}: {evidence}"[:300])
        signals.memory_removed.send(sender=Memory, memory_id=old.pk)
        signals.memory_superseded.send(sender=Memory, memory_id=old.pk, by=new.pk)
    return change


def _distance(a: Memory, b: Memory) -> float:
    import numpy as np

    x, y = np.asarray(a.embedding, dtype=float), np.asarray(b.embedding, dtype=float)
    return float(1.0 - x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def supersession_undo(*, change_id: int, user: str) -> KnowledgeChange:
    """Undo a supersession: the old memory is current again (active, back in a cluster); the
    change says who undid it, and the memory's history keeps both steps."""
    with transaction.atomic():
        change = KnowledgeChange.objects.select_for_update().filter(pk=change_id).first()
        if change is None:
            raise ChangeError(f"No change {change_id}.", code=NOT_FOUND)
        if change.kind != ChangeKind.SUPERSESSION or change.state != ChangeState.DONE:
            raise ChangeError("Only a supersession in force can be undone.", code=INVALID)
        restored = Memory.objects.filter(pk=change.old_id, status=Status.SUPERSEDED).update(
            status=Status.ACTIVE, superseded_by=None, valid_until=None, updated_at=timezone.now())
        KnowledgeChange.objects.filter(pk=change.pk).update(state=ChangeState.UNDONE, undone_by=user[:150],
                                                            undone_at=timezone.now())
        memory_history_record(memory_id=change.old_id, editor=user, action="unsuperseded",
                              before={"status": Status.SUPERSEDED, "superseded_by": str(change.new_id)},
                              after={"status": Status.ACTIVE}, note=f"undid the supersession decided by {change.decided_by}")
        if restored:
            signals.memory_changed.send(sender=Memory, memory_id=change.old_id)
        change.refresh_from_db()
    return change


CONFLICT_DECISIONS = ("new", "old", "both", "merge")


def conflict_decide(*, change_id: int, decision: str, user: str) -> KnowledgeChange:
    """A curator settles a conflict: ``new`` (the newer memory is current: it supersedes the
    older), ``old`` (the older one stays current: it supersedes the newer), ``both`` (both hold:
    the conflict is closed, nothing changes; the pair's merge candidate, if any, stays open: two
    memories that both hold may still be one), ``merge`` (they are one memory after all, the
    differences read were no conflict: merged keeping the newer text, no field either had emptied)."""
    if decision not in CONFLICT_DECISIONS:
        raise ChangeError(f"decision must be one of {', '.join(CONFLICT_DECISIONS)}", code=INVALID, field="decision")
    with transaction.atomic():
        change = KnowledgeChange.objects.select_for_update().filter(pk=change_id).first()
        if change is None:
            raise ChangeError(f"No change {change_id}.", code=NOT_FOUND)
        if change.kind != ChangeKind.CONFLICT or change.state != ChangeState.OPEN:
            raise ChangeError("This conflict is already settled.", code=INVALID)
        KnowledgeChange.objects.filter(pk=change.pk).update(state=ChangeState.DONE, decided_by=user[:150],
                                                            decided_at=timezone.now(), order=decision)
        pair = MergeCandidate.objects.filter(memory_id=change.new_id, duplicate_of_id=change.old_id,
                                             status=CandidateStatus.OPEN)
        if decision == "merge":
            from memories.services.queue import family_merge

            candidate = pair.first() or MergeCandidate.objects.create(
                space_id=change.space_id, memory_id=change.new_id, duplicate_of_id=change.old_id,
                similarity=change.similarity or 1.0, conflicts=[])
            family_merge(candidate_ids=[candidate.pk], decided_by=user, keep_text="newer")
            change.refresh_from_db()
            return change
        if decision in ("new", "old"):  # one supersedes the other: the pair is not one memory to merge
            pair.update(status=CandidateStatus.DISMISSED, decided_by=user[:150], decided_at=timezone.now())
        if decision == "new":
            return memory_supersede(old_id=change.old_id, new_id=change.new_id, decided_by=user,
                                    evidence=f"conflict settled: {change.evidence}", similarity=change.similarity)
        if decision == "old":
            return memory_supersede(old_id=change.new_id, new_id=change.old_id, decided_by=user,
                                    evidence=f"conflict settled: {change.evidence}", similarity=change.similarity)
        change.refresh_from_db()
    return change


def conflict_llm_judge(*, change_id: int) -> str | None:
    """Ask the LLM (when one is configured) to settle an open conflict: ``new`` makes the newer
    memory supersede the older (decided by ``llm``, undoable like any supersession), ``both``
    closes the conflict; ``old`` or ``unsure`` leave it to a curator, with the LLM's reading
    noted. Returns the LLM's verdict (None: no LLM, it failed, or nothing is open)."""
    change = KnowledgeChange.objects.select_related("old", "new").filter(pk=change_id).first()
    if change is None or change.kind != ChangeKind.CONFLICT or change.state != ChangeState.OPEN:
        return None
    old, new = change.old, change.new
    verdict = llm_change_verdict((old.content, old.context, old.resolution), (new.content, new.context, new.resolution),
                                 change.evidence)
    if verdict in ("new", "both"):
        try:
            conflict_decide(change_id=change.pk, decision=verdict, user="llm")
        except ChangeError:  # settled or changed meanwhile: the newer decision stands
            return None
    elif verdict is not None:
        KnowledgeChange.objects.filter(pk=change.pk, state=ChangeState.OPEN).update(
            evidence=f"{change.evidence} (the LLM answered {verdict!r})"[:2000])
    return verdict
