"""Knowledge clusters and the skills crystallized from them (docs/flow.md#clusters-and-skills)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField

from agents.models import shared_space_id

# How far (cosine distance) a cluster's centroid may drift from its indexed ``direction`` before
# the trigger copies it again: about 2.6 degrees, far inside any similarity threshold the hub
# uses, and the nearest-cluster query ranks its candidates by the exact centroid anyway.
DIRECTION_DRIFT = 0.001


class KnowledgeCluster(models.Model):
    """Related memories. ``centroid`` holds the *sum* of the active members' unit embeddings:
    its direction is the normalised mean, which is all cosine distance sees, and a sum can be
    kept exact incrementally (add, subtract) in SQL, even set-based.

    ``direction`` is the indexed copy of the centroid for finding the nearest cluster, set by a
    database trigger (migration clusters/0003), never by the code: it follows ``centroid`` only
    when the two have drifted apart by more than ``DIRECTION_DRIFT`` (cosine distance), and is
    NULL for an empty cluster. So a memory joining a large cluster rewrites its row in place
    (no vector index touched) instead of adding an entry to the HNSW graph each time; the
    nearest-cluster query finds candidates by ``direction`` and ranks them by the exact sum."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    topic = models.CharField(max_length=200, blank=True)
    centroid = VectorField(dimensions=settings.ULTRON_EMBEDDING_DIMENSIONS)
    direction = VectorField(dimensions=settings.ULTRON_EMBEDDING_DIMENSIONS, null=True, blank=True, editable=False)
    member_count = models.PositiveIntegerField(default=0)
    skill = models.ForeignKey("clusters.Skill", null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="clusters")
    superseded_skill_slugs = ArrayField(models.CharField(max_length=60), default=list, blank=True)
    members_at_last_crystallization = models.PositiveIntegerField(default=0)
    last_crystallization_at = models.DateTimeField(null=True, blank=True)
    last_crystallization_result = models.CharField(max_length=20, blank=True)
    last_crystallization_reason = models.TextField(blank=True)
    labelled_member_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-member_count", "pk"]
        indexes = [
            # Nothing indexed refers to centroid, member_count or updated_at: a join that leaves
            # ``direction`` alone is a HOT update (the table's fillfactor is 50, migration 0003).
            HnswIndex(fields=["direction"], name="cluster_direction_hnsw", opclasses=["vector_cosine_ops"],
                      m=16, ef_construction=64),
        ]
        permissions = [("crystallize_cluster", "Can crystallize clusters")]

    def __str__(self) -> str:
        return self.topic or f"cluster {self.pk}"


class ClusterMember(models.Model):
    """A memory's place in a cluster, with the vector it added to the centroid sum (so an
    edit or removal subtracts exactly what was added)."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    cluster = models.ForeignKey(KnowledgeCluster, on_delete=models.CASCADE, related_name="members")
    memory = models.OneToOneField("memories.Memory", on_delete=models.CASCADE, related_name="cluster_member")
    vector = VectorField(dimensions=settings.ULTRON_EMBEDDING_DIMENSIONS)
    similarity = models.FloatField(help_text="cosine to the centroid when it joined")
    joined_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.memory_id} in {self.cluster_id}"


class SkillStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PUBLISHED = "published", "Published"
    REJECTED = "rejected", "Rejected"
    SUPERSEDED = "superseded", "Superseded"


class Skill(models.Model):
    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    slug = models.CharField(max_length=50)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=SkillStatus.choices, default=SkillStatus.DRAFT)
    current_version = models.ForeignKey("clusters.SkillVersion", null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+")
    source_cluster = models.ForeignKey(KnowledgeCluster, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="skills_made")
    embedding = VectorField(dimensions=settings.ULTRON_EMBEDDING_DIMENSIONS, null=True, blank=True)
    provenance = models.JSONField(default=dict, blank=True,
                                  help_text="where a promoted copy came from: promoted_from {space, skill, version, by, at}")
    stale_reason = models.CharField(max_length=300, blank=True, help_text=(
        "why the published version needs writing again (a memory it cites was superseded); cleared on publishing"))
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [models.UniqueConstraint(fields=["space", "slug"], name="skill_space_slug")]
        indexes = [
            HnswIndex(fields=["embedding"], name="skill_embedding_hnsw", opclasses=["vector_cosine_ops"],
                      m=16, ef_construction=64, condition=Q(status="published")),
        ]
        permissions = [("publish_skill", "Can publish, reject and roll back skills")]

    def __str__(self) -> str:
        return self.slug


class SkillVersion(models.Model):
    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    body = models.TextField(help_text="SKILL.md: front matter, when to use, steps, edge cases")
    memory_ids = ArrayField(models.UUIDField(), default=list)
    cluster = models.ForeignKey(KnowledgeCluster, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="skill_versions")
    quality = models.JSONField(default=dict, blank=True)
    verification = models.JSONField(default=dict, blank=True)
    score = models.FloatField(default=0.0)
    status = models.CharField(max_length=12, choices=SkillStatus.choices, default=SkillStatus.DRAFT)
    reason = models.TextField(blank=True)
    review_reasons = models.JSONField(default=list, blank=True, help_text=(
        "why this version may not be published without a curator (clusters.judgements.skill_gate): "
        "[{cause, label, memory, rule, field, text, severity}]; empty when nothing stopped it"))
    author = models.CharField(max_length=100, blank=True, help_text="llm model, 'offline', or a curator")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skill", "-version"]
        constraints = [models.UniqueConstraint(fields=["skill", "version"], name="skill_version_unique")]

    def __str__(self) -> str:
        return f"{self.skill.slug} v{self.version}"


class ClusterChangeKind(models.TextChoices):
    MERGE = "merge", "Merge"
    SPLIT = "split", "Split"
    MOVE = "move", "Move"


class ClusterChange(models.Model):
    """One change of clusters (docs/flow.md#cluster-repair): memories ``memory_ids`` went from
    cluster ``from_cluster_id`` to cluster ``to_cluster_id`` — a merge (every member of the
    cluster folded in, which is then deleted), a split (the chosen members founded the ``to``
    cluster) or a move (one memory). Decided by a curator (``decided_by``: their user name) or by
    the pipeline's repair (``repair``). Every change can be undone while no later change stands
    on it (``clusters.services.cluster_change_undo``).

    Clusters are referred to by id, not by foreign key: the cluster a merge folds in is deleted,
    and undoing the merge makes it again with the same id. The topics are kept as they were."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    kind = models.CharField(max_length=8, choices=ClusterChangeKind.choices)
    from_cluster_id = models.BigIntegerField()
    to_cluster_id = models.BigIntegerField()
    from_topic = models.CharField(max_length=200, blank=True)
    to_topic = models.CharField(max_length=200, blank=True)
    memory_ids = ArrayField(models.UUIDField(), default=list)
    similarity = models.FloatField(null=True, blank=True,
                                   help_text="repair: the two centroids' cosine (merge), the member's to its new cluster (move)")
    decided_by = models.CharField(max_length=150, help_text="'repair' or the curator's user name")
    skill_version_ids = ArrayField(models.BigIntegerField(), default=list, blank=True, help_text=(
        "skill versions crystallized from the 'from' cluster, which this change emptied: they name the 'to' "
        "cluster since, and their own again when it is undone"))
    undone_by = models.CharField(max_length=150, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=ClusterChangeKind.values), name="cluster_change_kind"),
            models.CheckConstraint(condition=~Q(from_cluster_id=models.F("to_cluster_id")), name="cluster_change_two"),
        ]
        indexes = [
            # A memory's page lists the changes that moved it (memory_ids @> [its id]).
            GinIndex(fields=["memory_ids"], name="cluster_change_memories"),
            models.Index(fields=["from_cluster_id"], name="cluster_change_from"),
            models.Index(fields=["to_cluster_id"], name="cluster_change_to"),
            models.Index(fields=["-created_at"], name="cluster_change_repair",
                         condition=Q(decided_by="repair", undone_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.from_cluster_id} → {self.to_cluster_id} by {self.decided_by}"


class SuggestionStatus(models.TextChoices):
    OPEN = "open", "Waiting for a curator"
    DISMISSED = "dismissed", "Not one topic"


class ClusterSuggestion(models.Model):
    """Two clusters of a space whose centroids are close, but not close enough for the repair
    to merge them alone (``clusters.services.suggestions``): a curator merges them or says they
    are not one topic, and a dismissed pair is never suggested again. Written by the pipeline's
    repair pass, with its evidence; a merge deletes one of the clusters, and its suggestions."""

    space = models.ForeignKey("agents.Space", on_delete=models.PROTECT, related_name="+", default=shared_space_id)
    first = models.ForeignKey(KnowledgeCluster, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(KnowledgeCluster, on_delete=models.CASCADE, related_name="+")
    similarity = models.FloatField(help_text="cosine of the two centroids when last seen")
    shared_words = ArrayField(models.CharField(max_length=60), default=list, blank=True)
    pairs = models.JSONField(default=list, blank=True, help_text=(
        "the closest member pairs: [{first, second (memory ids), first_text, second_text, similarity}]"))
    status = models.CharField(max_length=10, choices=SuggestionStatus.choices, default=SuggestionStatus.OPEN)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="cluster_suggestion_pair"),
            models.CheckConstraint(condition=Q(first__lt=models.F("second")), name="cluster_suggestion_ordered"),
            models.CheckConstraint(condition=Q(status__in=SuggestionStatus.values), name="cluster_suggestion_status"),
        ]
        indexes = [models.Index(fields=["-created_at"], name="cluster_suggestion_open", condition=Q(status="open"))]

    def __str__(self) -> str:
        return f"{self.first_id} + {self.second_id} ({self.similarity:.3f})"
