"""Memory records and the uploads merged into them (docs/flow.md#records)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField

from agents.models import shared_space_id


class MemoryType(models.TextChoices):
    ERROR = "error", "Error"
    SECURITY = "security", "Security"
    CORRECTION = "correction", "Correction"
    PATTERN = "pattern", "Pattern"
    PREFERENCE = "preference", "Preference"
    LIFE = "life", "Life"


class Tier(models.TextChoices):
    HOT = "hot", "Hot"
    WARM = "warm", "Warm"
    COLD = "cold", "Cold"


class Status(models.TextChoices):
    ACTIVE = "active", "Active"
    ARCHIVED = "archived", "Archived"
    # Replaced by a newer memory on its subject (``superseded_by``): kept with its history, not
    # served as current knowledge (docs/flow.md#supersession).
    SUPERSEDED = "superseded", "Superseded"
    # Waiting for a curator (docs/flow.md#screening): flagged by the poisoning screen, written by a
    # member whose writes are reviewed, or taken back with everything its writer wrote. Served to
    # nobody but its writer until approved.
    HELD = "held", "Held for review"
    # A curator kept it out: never served, kept with the decision (undoable).
    REJECTED = "rejected", "Rejected"


class Source(models.TextChoices):
    API = "api", "API upload"
    INGEST_TEXT = "ingest_text", "Text ingest"
    SEGMENT = "segment", "Session segment"
    CURATOR = "curator", "Curator"


class Memory(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    content = models.TextField()
    context = models.TextField(blank=True, default="")
    resolution = models.TextField(blank=True, default="")
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    memory_type = models.CharField(max_length=16, choices=MemoryType.choices)
    tier = models.CharField(max_length=8, choices=Tier.choices, default=Tier.WARM)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    hit_count = models.PositiveIntegerField(default=1)
    last_hit_at = models.DateTimeField(null=True, blank=True)
    # Distinct agents other than its writer that used it (docs/flow.md#hits): HOT needs
    # ULTRON_HOT_MIN_READERS of them, so one agent's reads cannot make a memory HOT.
    readers = models.PositiveIntegerField(default=0, db_default=0)
    # Helpful minus not-helpful votes of distinct agents, capped at ±ULTRON_FEEDBACK_CAP
    # (docs/api.md#feedback): search ranks a memory a little up or down by it.
    feedback = models.SmallIntegerField(default=0, db_default=0)
    # A curator vouched for it (approved it when held, or wrote it): served with a verified mark.
    verified_by = models.CharField(max_length=150, blank=True, default="")
    verified_at = models.DateTimeField(null=True, blank=True)
    # What the poisoning screen noted on a memory it let through (a link outside the space's
    # allowed hosts, a borderline classifier score): shown to every reader beside the memory.
    screen_flags = models.JSONField(default=list, blank=True)
    summary_l0 = models.TextField(blank=True, default="")
    overview_l1 = models.TextField(blank=True, default="")
    embedding = VectorField(dimensions=settings.ULTRON_EMBEDDING_DIMENSIONS)
    # Full-text side of hybrid search: kept by PostgreSQL itself, never out of date.
    search_vector = models.GeneratedField(
        expression=SearchVector("content", "context", "resolution", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    content_hash = models.CharField(max_length=64)
    merge_pending = models.BooleanField(default=False)
    agent = models.ForeignKey(
        "agents.Agent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memories",
        help_text="The agent that first contributed this memory.",
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    provenance = models.JSONField(default=dict, blank=True)
    redaction_counts = models.JSONField(default=dict, blank=True,
                                        help_text="What redaction removed from this memory's uploads, by tag.")
    archived_at = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="superseded_memories",
                                      help_text="The newer memory that replaced this one.")
    valid_until = models.DateTimeField(null=True, blank=True, help_text="When a newer memory replaced this one.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # One graph over the active memories. Type, tier and tag filters are applied during the
            # scan: pgvector >= 0.8 keeps scanning the graph (hnsw.iterative_scan) until enough rows
            # pass them (memories.selectors.search), so no filter needs a graph of its own.
            HnswIndex(
                fields=["embedding"],
                name="memory_emb_active_hnsw",
                opclasses=["vector_cosine_ops"],
                m=16,
                ef_construction=64,
                condition=Q(status="active"),
            ),
            # The exact-duplicate check reads active memories by hash (selectors.duplicates).
            models.Index(fields=["content_hash"], name="memory_hash_active", condition=Q(status="active")),
            # No pending list on the GIN indexes (migration 0009): every search would read it whole.
            # The full-text index, memory_fts_space_active, is on an expression of the words and
            # the space (migration 0015), made and described there.
            GinIndex(fields=["tags"], name="memory_tags_gin", fastupdate=False),
            # No index on tier, hit_count or last_hit_at, on purpose: with none of them indexed and
            # the table's fillfactor at 50 (migration 0004), the hit counters and the tier
            # rebalance update rows in place (HOT), instead of re-inserting every touched row into
            # the HNSW index: 0.12 s instead of 29 s for 12k tier changes (bench/rebalance.py).
        ]
        constraints = [
            models.CheckConstraint(condition=Q(memory_type__in=MemoryType.values), name="memory_type_valid"),
            models.CheckConstraint(condition=Q(tier__in=Tier.values), name="memory_tier_valid"),
            models.CheckConstraint(condition=Q(status__in=Status.values), name="memory_status_valid"),
        ]
        permissions = [("review_merges", "Can review merges and merge candidates")]
        verbose_name_plural = "memories"

    def __str__(self) -> str:
        return self.summary_l0 or self.content[:80]


class MemoryContribution(models.Model):
    """An upload that was found to duplicate ``memory``; its (redacted) text is kept for review."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="contributions")
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="contributions"
    )
    content = models.TextField()
    context = models.TextField(blank=True, default="")
    resolution = models.TextField(blank=True, default="")
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    similarity = models.FloatField(help_text="Cosine similarity to the memory when it matched.")
    match_reason = models.CharField(max_length=16)  # exact | similar | llm
    redaction_counts = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    reviewed_by = models.CharField(max_length=150, blank=True)  # a curator let the automatic merge stand:
    reviewed_at = models.DateTimeField(null=True, blank=True)  # it left the review queue
    merged_at = models.DateTimeField(null=True, blank=True, help_text="When an LLM merge folded this text into the memory.")

    class Meta:
        ordering = ["created_at"]
        # A merge reads a memory's unmerged contributions (merged_at null).
        indexes = [models.Index(fields=["memory", "merged_at"], name="contribution_pending")]

    def __str__(self) -> str:
        return f"contribution to {self.memory_id}"


class CandidateStatus(models.TextChoices):
    OPEN = "open", "Open"
    MERGED = "merged", "Merged"
    DISMISSED = "dismissed", "Dismissed"


class MergeCandidate(models.Model):
    """A pair that may be one memory, left for a judgement instead of merged automatically:
    ``memory`` (the newer) may duplicate ``duplicate_of``. The LLM's verdict (when one is
    configured) or a curator's decision closes it; a dismissed pair is never proposed again."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="merge_candidates")
    duplicate_of = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="candidate_duplicates")
    similarity = models.FloatField(help_text="Cosine similarity of the two memories when proposed.")
    conflicts = models.JSONField(default=list, blank=True,
                                 help_text="Details that differ between the two (values, negation, names …).")
    status = models.CharField(max_length=10, choices=CandidateStatus.choices, default=CandidateStatus.OPEN)
    llm_verdict = models.BooleanField(null=True, blank=True, help_text="The LLM's same-subject verdict, if asked.")
    decided_by = models.CharField(max_length=150, blank=True, help_text="'llm' or the curator's user name.")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-similarity", "pk"]
        constraints = [
            # One row per ordered pair; the reversed pair is looked up by services.candidates.merge_candidate_for_pair.
            models.UniqueConstraint(fields=["memory", "duplicate_of"], name="merge_candidate_pair"),
            models.CheckConstraint(condition=~Q(memory=models.F("duplicate_of")), name="merge_candidate_two"),
            models.CheckConstraint(condition=Q(status__in=CandidateStatus.values), name="merge_candidate_status"),
        ]
        indexes = [models.Index(fields=["status", "-similarity"], name="merge_candidate_open",
                                condition=Q(status="open"))]

    def __str__(self) -> str:
        return f"{self.memory_id} ~ {self.duplicate_of_id} ({self.similarity:.2f})"


class EmbeddingSpace(models.Model):
    """The single embedding model + dimension that every stored vector belongs to."""

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    text_format = models.PositiveSmallIntegerField(default=1, help_text=(
        "Which text of a memory was embedded (memories.text.EMBEDDING_TEXT_FORMAT)."))
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}/{self.dimensions}"


class EmbeddingCalibration(models.Model):
    """The thresholds ``manage.py calibrate`` fitted for one embedding space (provider, model,
    dimensions, text format), with what each is expected to give on the labelled sets.
    Keyed by the space rather than tied to the ``EmbeddingSpace`` row, which ``reembed``
    replaces: switching back to a model measured before finds its values again."""

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    text_format = models.PositiveSmallIntegerField()
    values = models.JSONField(help_text="{name: value} for the names in memories.thresholds.VALUES")
    report = models.JSONField(default=dict, blank=True, help_text="each value's rule and per-set figures")
    calibrated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "model", "dimensions", "text_format"],
                                               name="embedding_calibration_space")]

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}/{self.dimensions} (format {self.text_format})"


class MemoryEdit(models.Model):
    """One change a person made to a memory (an edit, archive, restore, merge, split): who, when,
    and the fields before and after. The memory's admin page shows them as its history."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="edits")
    editor = models.CharField(max_length=150)
    action = models.CharField(max_length=20)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["memory", "-created_at"], name="memory_edit_memory_time")]

    def __str__(self) -> str:
        return f"{self.action} by {self.editor}"


class ChangeKind(models.TextChoices):
    SUPERSESSION = "supersession", "Supersession"
    CONFLICT = "conflict", "Conflict"


class ChangeState(models.TextChoices):
    OPEN = "open", "Waiting for a curator"
    DONE = "done", "Decided"
    UNDONE = "undone", "Undone"


class KnowledgeChange(models.Model):
    """A change of knowledge between two memories of a space (docs/flow.md#supersession):
    ``new`` superseded ``old`` (decided by the hub, the LLM or a curator: ``decided_by``), or
    the two disagree with nothing saying which is current (a conflict, open until a curator
    decides). Every automatic supersession can be undone (``undone_by``)."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    kind = models.CharField(max_length=12, choices=ChangeKind.choices)
    old = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="changes_as_old")
    new = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="changes_as_new")
    state = models.CharField(max_length=8, choices=ChangeState.choices)
    order = models.CharField(max_length=10, blank=True,
                             help_text="What said the new one is current: explicit, version, date, curator.")
    evidence = models.TextField(blank=True, help_text="What was seen: the words, versions, dates or differing details.")
    similarity = models.FloatField()
    decided_by = models.CharField(max_length=150, blank=True, help_text="'hub', 'llm' or the curator's user name.")
    decided_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=150, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.CharField(max_length=150, blank=True)  # a curator let the hub's decision stand:
    reviewed_at = models.DateTimeField(null=True, blank=True)  # it left the review queue
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["old", "new"], name="knowledge_change_pair"),
            models.CheckConstraint(condition=~Q(old=models.F("new")), name="knowledge_change_two"),
            models.CheckConstraint(condition=Q(kind__in=ChangeKind.values), name="knowledge_change_kind"),
            models.CheckConstraint(condition=Q(state__in=ChangeState.values), name="knowledge_change_state"),
        ]
        indexes = [models.Index(fields=["state", "-created_at"], name="knowledge_change_open", condition=Q(state="open"))]

    def __str__(self) -> str:
        return f"{self.kind}: {self.new_id} / {self.old_id} ({self.state})"


class TypeChange(models.Model):
    """A memory's type, reviewed (docs/flow.md#the-review-queue): an unsure offline assignment
    (open until a curator decides; one open row per memory at most) or a curator's change. ``chosen``:
    the type before the decision; ``memory_type``: the one decided; undoing gives ``chosen`` back."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="type_changes")
    state = models.CharField(max_length=8, choices=ChangeState.choices)
    chosen = models.CharField(max_length=16, choices=MemoryType.choices)
    runner_up = models.CharField(max_length=16, choices=MemoryType.choices, blank=True)
    margin = models.FloatField(null=True, blank=True, help_text="Top probability minus the runner-up's.")
    memory_type = models.CharField(max_length=16, choices=MemoryType.choices, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=150, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["memory"], condition=Q(state="open"), name="type_change_one_open"),
            models.CheckConstraint(condition=Q(state__in=ChangeState.values), name="type_change_state"),
        ]
        indexes = [models.Index(fields=["state", "-created_at"], name="type_change_open", condition=Q(state="open"))]

    def __str__(self) -> str:
        return f"type of {self.memory_id}: {self.chosen} → {self.memory_type or '?'} ({self.state})"


# The tiers' and keyword counts' bookkeeping, and the poisoning screen's records
# (docs/flow.md#screening), live beside this module; imported here so that Django registers
# them with the app's other models.
from memories.models_feedback import MemoryFeedback, MemoryReport, Rating  # noqa: E402, F401
from memories.models_ranks import LexemeCount, MemoryRank, TierSnapshot  # noqa: E402, F401
from memories.models_screening import HoldDecision, HoldOrigin, MemoryHold, MemoryRead  # noqa: E402, F401
