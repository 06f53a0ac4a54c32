"""Knowledge clusters and the skills crystallized from them (docs/flow.md#clusters-and-skills)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
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
    author = models.CharField(max_length=100, blank=True, help_text="llm model, 'offline', or a curator")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skill", "-version"]
        constraints = [models.UniqueConstraint(fields=["skill", "version"], name="skill_version_unique")]

    def __str__(self) -> str:
        return f"{self.skill.slug} v{self.version}"
