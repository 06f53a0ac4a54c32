"""The poisoning screen's records (docs/flow.md#screening): who used a memory when (reads that
rank it), and why a memory is held and what a curator decided. Registered through
``memories.models``."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from agents.models import shared_space_id
from memories.models import ChangeState, Memory, Status


class MemoryRead(models.Model):
    """One agent's use of one memory on one day (docs/flow.md#hits): the first use a day counts
    as a hit, the others only add to ``calls``, so the dashboard can show a memory whose reads
    come mostly from one agent. Its writer's own reads are not recorded."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="reads")
    reader = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    calls = models.PositiveIntegerField(default=1)
    last_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "reader", "day"], name="memory_read_once_a_day")]
        indexes = [models.Index(fields=["space", "-day"], name="memory_read_space_day")]

    def __str__(self) -> str:
        return f"{self.reader_id} read {self.memory_id} on {self.day} ({self.calls}x)"


class HoldOrigin(models.TextChoices):
    SCREEN = "screen", "Flagged by the screen"
    WRITER = "writer", "Writer is reviewed"
    RECALL = "recall", "Writer's memories taken back"
    ERROR = "error", "Screen failed"


class HoldDecision(models.TextChoices):
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class MemoryHold(models.Model):
    """Why a memory was held, and what a curator decided (docs/flow.md#screening). Open while
    the memory waits; approving serves it (verified), rejecting keeps it out; both can be undone
    (the memory returns to ``held``). ``reasons``: what the screen found, each
    ``{rule, label, field, start, end, text}``, ``start``/``end`` the matched span in ``field``.
    ``batch``: the rows one hold-by-writer made (undone together); ``prior_status``: what the
    memory was before it was held, put back when that hold is undone."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="holds")
    origin = models.CharField(max_length=8, choices=HoldOrigin.choices)
    reasons = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=8, choices=ChangeState.choices, default=ChangeState.OPEN)
    decision = models.CharField(max_length=8, choices=HoldDecision.choices, blank=True)
    prior_status = models.CharField(max_length=10, choices=Status.choices, blank=True)
    batch = models.UUIDField(null=True, blank=True)
    held_by = models.CharField(max_length=150, blank=True, help_text="'hub' or the admin who took the writer's memories back.")
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=150, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["memory"], condition=Q(state="open"), name="memory_hold_one_open"),
            models.CheckConstraint(condition=Q(state__in=ChangeState.values), name="memory_hold_state"),
            models.CheckConstraint(condition=Q(origin__in=HoldOrigin.values), name="memory_hold_origin"),
        ]
        indexes = [
            models.Index(fields=["state", "-created_at"], name="memory_hold_open", condition=Q(state="open")),
            models.Index(fields=["batch"], name="memory_hold_batch", condition=Q(batch__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"hold of {self.memory_id} ({self.origin}, {self.state})"
