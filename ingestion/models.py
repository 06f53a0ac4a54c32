"""Raw archive, sessions, task segments and their provenance links (docs/flow.md#records, #ingestion)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from agents.models import shared_space_id


class RawUpload(models.Model):
    """The original bytes of one ingested file or ``ingest_text`` call (admins only).

    Files over ``ULTRON_RAW_ARCHIVE_MAX_BYTES`` keep no bytes here (``content`` is null), and a
    file whose archive is redacted keeps the redacted text: the original bytes wait for
    segmentation in ``RawChunk`` rows, in the database, so a worker on any host reads them.
    (``spool_path``: a file under the data directory, where hubs before that kept them; still read.)
    """

    class Kind(models.TextChoices):
        FILE = "file", "Session file"
        TEXT = "text", "Plain text"

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=1000, blank=True)
    agent = models.ForeignKey("agents.Agent", null=True, on_delete=models.SET_NULL, related_name="raw_uploads")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    content = models.BinaryField(null=True, blank=True)
    redacted = models.BooleanField(default=False, help_text="content holds redacted text, not the original")
    spool_path = models.CharField(max_length=500, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("download_rawupload", "Can download raw archives")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name or self.pk}"


class RawChunk(models.Model):
    """A piece (at most ``CHUNK_BYTES``) of an upload's original bytes, waiting for the pipeline's
    segmentation, which deletes them once the archive holds what the hub keeps."""

    CHUNK_BYTES = 1 << 20

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    raw = models.ForeignKey(RawUpload, on_delete=models.CASCADE, related_name="chunks")
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["raw", "seq"], name="raw_chunk_once")]

    def __str__(self) -> str:
        return f"{self.raw_id}#{self.seq}"


class WorkState(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed, will retry"
    PARKED = "parked", "Parked after repeated failures"


class WorkItem(models.Model):
    """Retry bookkeeping shared by sessions (segmentation) and segments (metrics, extraction).

    A worker claims an item by setting ``lease_until``; a crashed worker's lease runs out and
    the item is picked up again. A failure never marks an item done: it counts an attempt,
    keeps the error and waits ``next_attempt_at``; after the configured number it is parked.
    """

    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class IngestJob(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    agent = models.ForeignKey("agents.Agent", null=True, on_delete=models.SET_NULL, related_name="ingest_jobs")
    created_at = models.DateTimeField(auto_now_add=True)
    files = models.JSONField(default=list, help_text="the per-file results returned to the caller")

    def __str__(self) -> str:
        return str(self.pk)


class SessionRecord(WorkItem):
    """One conversation session: (agent, the client's own path/name for it)."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="sessions")
    identity = models.CharField(max_length=1000)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField(default=0)
    line_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    malformed = models.JSONField(default=dict, blank=True, help_text="malformed lines by reason")
    raw = models.ForeignKey(RawUpload, null=True, on_delete=models.SET_NULL, related_name="sessions")
    job = models.ForeignKey(IngestJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions")
    segmentation = models.CharField(max_length=8, choices=WorkState.choices, default=WorkState.PENDING)
    segmented_sha256 = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # One session per (space, agent, identity): a second upload under the same name updates that session.
        constraints = [models.UniqueConstraint(fields=["space", "agent", "identity"], name="session_space_agent_identity")]
        indexes = [models.Index(fields=["segmentation", "next_attempt_at"], name="session_work")]
        permissions = [("upload_sessions", "Can upload session files"),
                       ("retry_work", "Can retry failed and parked pipeline work")]

    def __str__(self) -> str:
        return self.identity


class TaskSegment(WorkItem):
    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    session = models.ForeignKey(SessionRecord, on_delete=models.CASCADE, related_name="segments")
    index = models.PositiveIntegerField()
    start_message = models.PositiveIntegerField()
    end_message = models.PositiveIntegerField(help_text="exclusive")
    topic = models.CharField(max_length=200, blank=True)
    fingerprint = models.CharField(max_length=16)
    messages = models.JSONField(default=list, help_text="the segment's messages, redacted")
    metrics = models.JSONField(default=dict, blank=True)
    score = models.FloatField(null=True, blank=True)
    task_type = models.CharField(max_length=32, blank=True)
    scoring = models.CharField(max_length=8, choices=WorkState.choices, default=WorkState.PENDING)
    extraction = models.CharField(max_length=8, choices=WorkState.choices, default=WorkState.PENDING)
    extracted_items = models.JSONField(
        null=True, blank=True, help_text="what extraction produced, kept so a crash never extracts twice"
    )
    notes = models.JSONField(
        default=list, blank=True,
        help_text="why the segment gave the memories it gave, or none: what scoring and extraction considered and refused",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "index"]
        # One segment per fingerprint: a worker that outlived its lease cannot store a segment twice
        # (services/work.py).
        constraints = [models.UniqueConstraint(fields=["session", "fingerprint"], name="segment_fingerprint")]
        indexes = [
            models.Index(fields=["scoring", "next_attempt_at"], name="segment_scoring"),
            # Extraction only ever claims scored segments (pipeline.segments_extract): the index holds only those.
            models.Index(fields=["extraction", "next_attempt_at"], name="segment_extraction_ready",
                         condition=Q(scoring="done")),
        ]

    def __str__(self) -> str:
        """How every page names a segment: by its id, with the session and its place in it."""
        return f"segment {self.pk} (session {self.session_id}, part {self.index + 1})"


class SegmentMemory(models.Model):
    """Provenance: this memory came (in whole or as a merged duplicate) from this segment."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    segment = models.ForeignKey(TaskSegment, on_delete=models.CASCADE, related_name="memory_links")
    memory = models.ForeignKey("memories.Memory", on_delete=models.CASCADE, related_name="segment_links")
    item_index = models.PositiveIntegerField(help_text="which extracted item of the segment")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # One memory per extracted item: a crash or a lost lease never uploads an item twice.
            models.UniqueConstraint(fields=["segment", "item_index"], name="segment_item_once"),
        ]

    def __str__(self) -> str:
        return f"segment {self.segment_id} item {self.item_index} -> {self.memory_id}"
