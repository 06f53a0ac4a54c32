"""What agents said about the memories served to them (docs/api.md#feedback): one vote per agent
and memory, and the reports of a wrong or outdated memory a curator settles in the review queue.
Registered through ``memories.models``."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from agents.models import shared_space_id
from memories.models import ChangeState, Memory


class Rating(models.TextChoices):
    HELPFUL = "helpful", "Helpful"
    NOT_HELPFUL = "not_helpful", "Not helpful"
    WRONG = "wrong", "Wrong"
    OUTDATED = "outdated", "Outdated"


# Votes that say a memory should not be served as it is: they open a report for a curator.
REPORTING = (Rating.WRONG, Rating.OUTDATED)


class MemoryFeedback(models.Model):
    """One agent's vote on one memory; a new vote replaces the old, clearing it deletes the row.
    ``reason`` is redacted like a memory's text. ``served_at``: when the search or context call
    that served the memory ran (the vote names that call)."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="feedback_votes")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    rating = models.CharField(max_length=12, choices=Rating.choices)
    reason = models.TextField(blank=True, default="")
    served_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "agent"], name="memory_feedback_one_vote"),
            models.CheckConstraint(condition=Q(rating__in=Rating.values), name="memory_feedback_rating"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} rated {self.memory_id} {self.rating}"


class MemoryReport(models.Model):
    """A memory agents called wrong or outdated, waiting in the review queue (one open report a
    memory, however many agents agree). A curator keeps the memory (``kept``: the votes stay, the
    report closes) or archives it; both can be undone. ``agents``: how many distinct agents'
    reporting votes stand, kept in step with the votes; two or more put it first in the queue."""

    class Outcome(models.TextChoices):
        KEPT = "kept", "Kept"
        ARCHIVED = "archived", "Archived"

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="reports")
    agents = models.PositiveIntegerField(default=1)
    state = models.CharField(max_length=8, choices=ChangeState.choices, default=ChangeState.OPEN)
    outcome = models.CharField(max_length=8, choices=Outcome.choices, blank=True)
    decided_by = models.CharField(max_length=150, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory"], condition=Q(state="open"), name="memory_report_one_open"),
        ]
        indexes = [models.Index(fields=["state", "-created_at"], name="memory_report_open",
                                condition=Q(state="open"))]

    def __str__(self) -> str:
        return f"report on {self.memory_id} ({self.agents} agents, {self.state})"
