"""Feedback on served memories (docs/api.md#feedback).

Every search and context call an agent makes returns a ``serve_id``: a signed, dated note of
which memories that call served to that agent — nothing is written to serve it. A vote names it,
and is taken only for a memory that call served to the same agent, within
``ULTRON_SERVE_MAX_AGE_DAYS``: an agent cannot rate what it was never shown.

One vote per agent and memory; a new vote replaces the old and ``None`` clears it.

- ``helpful`` / ``not_helpful`` move the memory's rank a little: its ``feedback`` is the net of
  distinct agents' votes (never its writer's), capped at ``ULTRON_FEEDBACK_CAP`` either way, and
  search multiplies a score by ``1 + ULTRON_FEEDBACK_STEP × feedback``.
- ``wrong`` / ``outdated`` open a report in the review queue (one a memory, with every agent's
  reasons); two or more agents agreeing put it first. A curator keeps or archives the memory.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from core.errors import FORBIDDEN, NOT_FOUND, ApplicationError
from memories.models import ChangeState, Memory, MemoryFeedback, MemoryReport, Rating, Status
from memories.models_feedback import REPORTING
from memories.services.inputs import MemoryInputError
from memories.services.lifecycle import memory_archive, memory_restore

_SALT = "ultron.serve"
_PREFIX = 12  # hex characters of a memory id kept in a serve id: 48 bits, unique within any call
MAX_REASON = 2000


def serve_id_issue(*, reader_id: int | None, memory_ids: list[Any]) -> str | None:
    """The ``serve_id`` of a call that served ``memory_ids`` to the agent ``reader_id`` (None for a
    person in the admin site, who does not vote)."""
    if reader_id is None:
        return None
    served = "".join(uuid.UUID(str(i)).hex[:_PREFIX] for i in memory_ids)
    return signing.dumps({"a": reader_id, "m": served}, salt=_SALT, compress=True)


def _refused(why: str) -> ApplicationError:
    """A vote the serve_id does not entitle: well formed, but not this agent's to cast (403)."""
    return ApplicationError(why, code=FORBIDDEN, field="serve_id")


def _served_at(serve_id: str, *, reader_id: int, memory_id: uuid.UUID) -> datetime.datetime:
    max_age = datetime.timedelta(days=settings.ULTRON_SERVE_MAX_AGE_DAYS)
    try:
        note = signing.loads(serve_id, salt=_SALT, max_age=max_age)
    except signing.SignatureExpired as exc:
        raise _refused(f"this serve_id is older than {max_age.days} days") from exc
    except signing.BadSignature as exc:
        raise _refused("not a serve_id this hub issued") from exc
    served = note.get("m", "") if isinstance(note, dict) else ""
    if not isinstance(note, dict) or note.get("a") != reader_id:
        raise _refused("this serve_id was issued to another agent")
    prefixes = {served[i : i + _PREFIX] for i in range(0, len(served), _PREFIX)}
    if memory_id.hex[:_PREFIX] not in prefixes:
        raise _refused("the call this serve_id names did not serve this memory")
    # Signed as value:timestamp:signature; the signature checked above covers the timestamp.
    return datetime.datetime.fromtimestamp(signing.b62_decode(serve_id.rsplit(":", 2)[-2]), tz=datetime.UTC)


@dataclass(frozen=True)
class FeedbackOutcome:
    memory_id: uuid.UUID
    rating: str | None
    feedback: int  # the memory's net vote after this one
    reported: bool  # an open report on the memory waits in the review queue
    agents_reporting: int


def _net(memory: Memory) -> int:
    votes = MemoryFeedback.objects.filter(memory=memory)
    if memory.agent_id is not None:
        votes = votes.exclude(agent_id=memory.agent_id)  # its writer's own vote does not rank it
    counts = votes.aggregate(up=Count("pk", filter=Q(rating=Rating.HELPFUL)),
                             down=Count("pk", filter=Q(rating=Rating.NOT_HELPFUL)))
    cap = settings.ULTRON_FEEDBACK_CAP
    return max(-cap, min(cap, counts["up"] - counts["down"]))


def _report_sync(memory: Memory) -> tuple[bool, int]:
    """The memory's open report in step with its reporting votes: opened by the first, its count
    of agents kept, dropped when the last is cleared before a curator looked."""
    reporting = MemoryFeedback.objects.filter(memory=memory, rating__in=REPORTING).count()
    report = MemoryReport.objects.select_for_update().filter(memory=memory, state=ChangeState.OPEN).first()
    if reporting and report is None:
        MemoryReport.objects.create(space_id=memory.space_id, memory=memory, agents=reporting)
    elif reporting and report is not None:
        MemoryReport.objects.filter(pk=report.pk).update(agents=reporting)
    elif report is not None:
        report.delete()
    return bool(reporting), reporting


def memory_feedback_record(*, memory_id: Any, agent: Any, rating: str | None, reason: str = "",
                           serve_id: str, space_ids: list[int]) -> FeedbackOutcome:
    """Record ``agent``'s vote ``rating`` (None clears it) on a memory the call ``serve_id``
    served it, in one of ``space_ids`` (the spaces the agent reads)."""
    from memories.redaction.policy import Occasion, redact_for

    if rating is not None and rating not in Rating.values:
        raise MemoryInputError("rating", f"must be one of {', '.join(Rating.values)} or null")
    try:
        key = uuid.UUID(str(memory_id))
    except ValueError as exc:
        raise MemoryInputError("id", "not a memory id") from exc
    served_at = _served_at(serve_id, reader_id=agent.pk, memory_id=key)
    reason = (reason or "").strip()
    if len(reason) > MAX_REASON:
        raise MemoryInputError("reason", f"at most {MAX_REASON} characters")
    reason = redact_for(Occasion.MEMORY, [reason])[0].text if reason else ""
    with transaction.atomic():
        memory = (Memory.objects.select_for_update().defer("embedding")
                  .filter(pk=key, space_id__in=space_ids).exclude(status=Status.HELD).first())
        if memory is None:
            raise ApplicationError("no memory with this id in the spaces you read", code=NOT_FOUND, field="id")
        if rating is None:
            MemoryFeedback.objects.filter(memory=memory, agent=agent).delete()
        else:
            MemoryFeedback.objects.update_or_create(
                memory=memory, agent=agent,
                defaults={"rating": rating, "reason": reason, "served_at": served_at, "space_id": memory.space_id})
        net = _net(memory)
        if net != memory.feedback:
            Memory.objects.filter(pk=memory.pk).update(feedback=net)
        reported, agents = _report_sync(memory)
    return FeedbackOutcome(memory_id=memory.pk, rating=rating, feedback=net, reported=reported,
                           agents_reporting=agents)


def report_decide(*, report_id: int, outcome: str, decided_by: str, space_ids: list[int]) -> MemoryReport:
    """A curator's decision on an open report: ``kept`` (the memory stays as it is) or
    ``archived`` (out of search, kept for the record)."""
    if outcome not in MemoryReport.Outcome.values:
        raise MemoryInputError("outcome", f"must be one of {', '.join(MemoryReport.Outcome.values)}")
    with transaction.atomic():
        report = MemoryReport.objects.select_for_update().filter(pk=report_id, space_id__in=space_ids).first()
        if report is None:
            raise ApplicationError("no such report", code=NOT_FOUND, field="report")
        if report.state != ChangeState.OPEN:
            raise MemoryInputError("state", f"already {report.get_outcome_display().lower()}")
        if outcome == MemoryReport.Outcome.ARCHIVED:
            memory_archive(memory_id=report.memory_id)
        MemoryReport.objects.filter(pk=report.pk).update(
            state=ChangeState.DONE, outcome=outcome, decided_by=decided_by[:150], decided_at=timezone.now())
        report.refresh_from_db()
    return report


def report_undo(*, report_id: int, space_ids: list[int]) -> MemoryReport:
    """Undo a curator's decision on a report: an archived memory is restored, the report opens again."""
    with transaction.atomic():
        report = MemoryReport.objects.select_for_update().filter(pk=report_id, space_id__in=space_ids).first()
        if report is None:
            raise ApplicationError("no such report", code=NOT_FOUND, field="report")
        if report.state != ChangeState.DONE:
            raise MemoryInputError("state", "not decided")
        if MemoryReport.objects.filter(memory_id=report.memory_id, state=ChangeState.OPEN).exists():
            raise MemoryInputError("state", "a newer report on this memory is open")
        if report.outcome == MemoryReport.Outcome.ARCHIVED:
            memory_restore(memory_id=report.memory_id)
        MemoryReport.objects.filter(pk=report.pk).update(state=ChangeState.OPEN, outcome="", decided_by="",
                                                          decided_at=None)
        report.refresh_from_db()
    return report


def votes_of(memory_id: Any) -> list[MemoryFeedback]:
    """A memory's votes, newest first, with their agents (its page and the queue show them)."""
    return list(MemoryFeedback.objects.filter(memory_id=memory_id).select_related("agent")
                .order_by(F("updated_at").desc()))
