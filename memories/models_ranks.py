"""Bookkeeping rows of the tiers and the keyword side of search: a space's tier mix per day,
lexeme counts and the narrow rank table (both written by PostgreSQL triggers). Registered
through ``memories.models``."""

from __future__ import annotations

from django.db import models

from agents.models import shared_space_id
from memories.models import Memory, Tier


class TierSnapshot(models.Model):
    """How many active memories each tier of a space held on a day, and how many the day's
    rebalance runs archived (written by the tier rebalance, one row a day and space): the
    dashboard's tier mix over time."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    day = models.DateField()
    hot = models.PositiveIntegerField(default=0)
    warm = models.PositiveIntegerField(default=0)
    cold = models.PositiveIntegerField(default=0)
    archived = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day"]
        constraints = [models.UniqueConstraint(fields=["space", "day"], name="tier_snapshot_space_day")]

    def __str__(self) -> str:
        return f"tiers on {self.day}"


class LexemeCount(models.Model):
    """How many active memories contain a lexeme of the full-text column, for weighing and
    choosing a query's words (docs/flow.md#keyword-counts). Written only by PostgreSQL triggers
    on the memories table (migration 0008), as signed pieces: every statement that adds,
    removes, archives, restores or re-words memories appends one piece per lexeme it changes,
    so writers never wait on each other's counters; the count is the sum of a lexeme's pieces,
    folded into one row by ``lexeme_counts_compact``. The empty lexeme counts the active
    memories themselves."""

    # No foreign-key constraint: written by the memories table's triggers, like the rest of the row.
    space = models.ForeignKey("agents.Space", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+",
                              default=shared_space_id)
    lexeme = models.TextField(db_index=True)
    memories = models.IntegerField()

    class Meta:
        verbose_name = "lexeme count"

    def __str__(self) -> str:
        return f"{self.lexeme or '(all)'}: {self.memories}"


class MemoryRank(models.Model):
    """The rank columns of each active memory, apart from its wide row (vector, texts): what
    the tier rebalance sorts (docs/flow.md#tiers). A memory's row is ~1.6 kB and its table is
    kept half full for in-place updates, so ranking a million memories from it reads ~3 GB;
    from here, ~60 MB. Written only by PostgreSQL triggers on the memories table (migration
    0010): a row per active memory, following its hit count, last hit, tier and status (an
    archived or deleted memory has none); the rebalance writes both tables in one statement and
    sets ``ultron.ranks_written`` for its transaction so the row trigger stands aside."""

    # No foreign-key constraint: written by the memories table's triggers, like the rest of the row.
    space = models.ForeignKey("agents.Space", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+",
                              default=shared_space_id)
    memory = models.OneToOneField(
        # No foreign-key constraint: the memories table's triggers keep this table, deletes included (migration 0010).
        Memory, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    hit_count = models.IntegerField()
    readers = models.IntegerField(default=0, db_default=0)
    seen = models.DateTimeField(help_text="The last hit, or the creation if never hit.")
    created_at = models.DateTimeField()
    tier = models.CharField(max_length=8, choices=Tier.choices)

    class Meta:
        verbose_name = "memory rank"

    def __str__(self) -> str:
        return f"{self.memory_id}: {self.tier}, {self.hit_count} hits"
