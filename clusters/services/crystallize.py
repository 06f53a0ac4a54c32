"""Crystallization: a cluster's members written into a skill, checked by a quality bar and a
claim-by-claim verification (``clusters.judgements.skill_draft`` decides all three), then
published — or kept as rejected with its reason, or as a draft waiting for a curator when what
it was drawn from or its own text is not clean (``clusters.judgements.skill_gate``); and
publishing (a curator's approval or rollback)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from agents.models import Membership, Space, Trust
from clusters import selectors
from clusters.judgements.skill_draft import MemoryFacts, skill_draft
from clusters.judgements.skill_gate import (
    SourceFacts,
    skill_text_reasons,
    source_reasons,
    waiting_reason,
)
from clusters.models import KnowledgeCluster, Skill, SkillStatus, SkillVersion
from clusters.selectors import clusters_ready
from clusters.services.membership import clusters_assign_missing
from clusters.services.rebuild import cluster_relabel
from clusters.services.search import skill_search_text
from memories.models import Memory, Status
from memories.providers.llm import LLMError
from memories.services import embed_texts

logger = logging.getLogger("ultron.clusters")


def _facts(cluster: KnowledgeCluster) -> list[MemoryFacts]:
    return [
        MemoryFacts(str(m.pk), m.content, m.context, m.resolution, m.hit_count, m.memory_type,
                    m.summary_l0 or m.content[:120],
                    [float(x) for x in m.embedding] if m.embedding is not None else None)
        for m in Memory.objects.filter(cluster_member__cluster=cluster, status=Status.ACTIVE)
        .order_by("-hit_count", "pk").defer("search_vector")[:40]
    ]


def _sources(memory_ids: list[str], space_id: int) -> list[SourceFacts]:
    """What the gate needs of the memories a skill is drawn from, read now (inside the filing
    transaction: a memory held since the draft was written counts)."""
    rows = {str(pk): (status, flags, verified_at, user_id) for pk, status, flags, verified_at, user_id in
            Memory.objects.filter(pk__in=memory_ids).values_list("pk", "status", "screen_flags", "verified_at",
                                                                 "agent__user_id")}
    writers = {row[3] for row in rows.values() if row[3] is not None}
    reviewed = set(Membership.objects.filter(space_id=space_id, user_id__in=writers, trust=Trust.REVIEWED)
                   .values_list("user_id", flat=True)) if writers else set()
    out = []
    for memory_id in memory_ids:
        if memory_id not in rows:
            out.append(SourceFacts(memory_id, found=False))
            continue
        status, flags, verified_at, user_id = rows[memory_id]
        labels = tuple(dict.fromkeys(str(f.get("label") or f.get("rule") or "flagged") for f in flags or []
                                     if isinstance(f, dict)))
        out.append(SourceFacts(memory_id, status=status, flags=labels or (("flagged",) if flags else ()),
                               verified=verified_at is not None, reviewed_writer=user_id in reviewed))
    return out


def _unique_slug(base: str, space_id: int) -> str:
    """``base``, or ``base-2``, ``-3``…: unique among the space's skills (other spaces' slugs
    neither count nor show)."""
    slug, n = base, 2
    while Skill.objects.filter(space_id=space_id, slug=slug).exists():
        suffix = f"-{n}"
        slug = base[: 50 - len(suffix)].rstrip("-") + suffix
        n += 1
    return slug


def _record(cluster: KnowledgeCluster, result: str, reason: str) -> None:
    KnowledgeCluster.objects.filter(pk=cluster.pk).update(
        last_crystallization_at=timezone.now(), last_crystallization_result=result,
        last_crystallization_reason=reason[:2000], members_at_last_crystallization=cluster.member_count,
    )


def cluster_crystallize(*, cluster_id: int) -> SkillVersion | None:
    """Write (or rewrite) the cluster's skill. Publishes only a draft that passes the quality
    bar and verification and, for a rewrite, scores better than the published version, and that
    the gate lets through (``clusters.judgements.skill_gate``: its memories all served in the
    open, its text passing the poisoning screen) — one it stops is kept as a draft for a curator,
    its reasons in ``review_reasons``; any other outcome is kept (rejected) or recorded on the
    cluster, with its reason."""
    cluster = KnowledgeCluster.objects.get(pk=cluster_id)
    members = _facts(cluster)
    # A curator may crystallize any cluster, and members may have been archived: the threshold
    # holds for the active members read here, not for the cluster's count.
    if len(members) < settings.ULTRON_CRYSTALLIZATION_THRESHOLD:
        _record(cluster, "insufficient", f"{len(members)} active members; {settings.ULTRON_CRYSTALLIZATION_THRESHOLD} needed")
        return None

    def slug_for(base: str) -> str:
        # A rewrite keeps its skill's slug; a new skill's is made unique among the skills.
        return cluster.skill.slug if cluster.skill else _unique_slug(base, cluster.space_id)  # type: ignore[arg-type]  # never null (stubs read a default as optional)

    try:
        written = skill_draft(cluster.topic, members, slug_for=slug_for)
    except LLMError as exc:
        _record(cluster, "failed", f"the LLM could not write the skill: {exc}")
        return None
    if written.insufficient:
        _record(cluster, "insufficient", written.insufficient)
        return None
    draft, quality, verification, score = written.draft, written.quality, written.verification, written.score
    passed, reason = written.passed, written.reason
    # The screen reads the skill's text outside the transaction too (its classifier takes a while).
    allowed_hosts = (Space.objects.filter(pk=cluster.space_id)  # type: ignore[misc]  # never null (stubs read a default as optional)
                     .values_list("allowed_hosts", flat=True).first() or [])
    text_reasons = skill_text_reasons(name=draft.name, description=draft.description, body=written.body,
                                      allowed_hosts=allowed_hosts)
    # The draft is written outside the transaction (an LLM call is slow); the cluster is locked
    # and read again only to file it, so two runs on one cluster never make two skills.
    with transaction.atomic():
        cluster = KnowledgeCluster.objects.select_for_update().get(pk=cluster_id)
        skill = cluster.skill
        # A first attempt creates the skill even when rejected: a curator can approve that version.
        if skill is None:
            skill = Skill.objects.create(space_id=cluster.space_id, slug=written.slug, name=draft.name,
                                         description=draft.description, source_cluster=cluster)
            cluster.skill = skill
        current = skill.current_version if skill.status == SkillStatus.PUBLISHED else None
        # A rewrite must beat the published version, or agents would see a skill change for no gain
        # (unless the published one cites knowledge that has since changed: then passing is enough).
        if passed and current is not None and score <= current.score and not skill.stale_reason:
            passed = False
            reason = f"scored {score} and did not beat the published version {current.version} ({current.score})"
        # Recorded whatever the checks said: a curator who publishes a rejected version by hand reads them too.
        sources = _sources([str(m.id) for m in members], cluster.space_id)  # type: ignore[arg-type]  # never null (stubs read a default as optional)
        review_reasons = [*source_reasons(sources), *text_reasons]
        held = passed and bool(review_reasons)
        if held:
            reason = waiting_reason(review_reasons)
        result = "held" if held else "published" if passed else "rejected"
        version = SkillVersion.objects.create(
            space_id=skill.space_id, skill=skill, version=(skill.versions.aggregate(n=Max("version"))["n"] or 0) + 1,
            name=draft.name, description=draft.description, body=written.body, memory_ids=[m.id for m in members],
            cluster=cluster, quality={"passed": quality.passed, "score": quality.score, **quality.details},
            verification={"passed": verification.passed, "score": verification.score, **verification.details},
            score=score, status=SkillStatus.DRAFT if passed else SkillStatus.REJECTED, reason=reason,
            review_reasons=review_reasons, author=draft.author,
        )
        cluster.last_crystallization_at = timezone.now()
        cluster.last_crystallization_result = result
        cluster.last_crystallization_reason = reason
        cluster.members_at_last_crystallization = cluster.member_count
        cluster.save()
        if result == "published":
            version = skill_version_publish(version_id=version.pk)
    logger.info("cluster %s crystallized: %s v%s %s (%s)", cluster_id, skill.slug, version.version, result, reason)
    return version


def skill_version_publish(*, version_id: int) -> SkillVersion:
    """Make a version the skill's published one (also a curator's rollback)."""
    with transaction.atomic():
        version = SkillVersion.objects.select_for_update().select_related("skill").get(pk=version_id)
        skill = Skill.objects.select_for_update().get(pk=version.skill_id)
        SkillVersion.objects.filter(skill=skill, status=SkillStatus.PUBLISHED).exclude(pk=version.pk).update(
            status=SkillStatus.SUPERSEDED)
        version.status = SkillStatus.PUBLISHED
        version.save(update_fields=["status"])
        skill.current_version = version
        skill.status = SkillStatus.PUBLISHED
        skill.stale_reason = ""
        skill.name = version.name
        skill.description = version.description
        skill.embedding = embed_texts([skill_search_text(version)])[0]
        skill.save()
    return version


@dataclass(frozen=True)
class CrystallizeOutcome:
    """What a curator's crystallization request answers: the cluster as it is now
    (``selectors.cluster_summary``), the version written (if any) and the cluster's skill."""

    cluster: dict[str, Any]
    version: SkillVersion | None
    skill: str | None


def cluster_crystallize_now(*, cluster_id: int) -> CrystallizeOutcome:
    """``cluster_crystallize`` for a request, with the cluster read again after it (raises
    ``KnowledgeCluster.DoesNotExist`` for a cluster that is gone)."""
    version = cluster_crystallize(cluster_id=cluster_id)
    cluster = selectors.cluster_get(cluster_id=cluster_id)
    return CrystallizeOutcome(selectors.cluster_summary(cluster), version,
                              cluster.skill.slug if cluster.skill else None)


def crystallization_step(*, limit: int = 10) -> dict[str, int]:
    """Pipeline step: assign stragglers, relabel grown clusters, crystallize ready ones."""
    assigned = clusters_assign_missing()
    relabelled = 0
    for cluster in KnowledgeCluster.objects.filter(member_count__gt=F("labelled_member_count") * 2)[:limit]:
        cluster_relabel(cluster_id=cluster.pk)
        relabelled += 1
    done = published = 0
    for cluster in clusters_ready(limit=limit):
        version = cluster_crystallize(cluster_id=cluster.pk)
        done += 1
        published += bool(version and version.status == SkillStatus.PUBLISHED)
    return {"assigned": assigned, "relabelled": relabelled, "crystallized": done, "published": published}


def skill_version_reject(*, version_id: int, reason: str) -> SkillVersion:
    """A curator rejects a version. If it was the published one, the newest earlier version
    that was published before (and not rejected) is published again; with none, the skill is
    withdrawn from agents (its status becomes rejected)."""
    with transaction.atomic():
        version = SkillVersion.objects.select_for_update().get(pk=version_id)
        skill = Skill.objects.select_for_update().get(pk=version.skill_id)
        version.status = SkillStatus.REJECTED
        version.reason = reason[:2000]
        version.save(update_fields=["status", "reason"])
        # Only rejecting the version agents see now changes what they see.
        if skill.current_version_id != version.pk:
            return version
        previous = (SkillVersion.objects.filter(skill=skill, status=SkillStatus.SUPERSEDED)
                    .exclude(pk=version.pk).order_by("-version").first())
        if previous is None:
            skill.status = SkillStatus.REJECTED
            skill.save(update_fields=["status", "updated_at"])
            return version
    skill_version_publish(version_id=previous.pk)
    return version


def skills_mark_stale(*, memory_id: Any) -> int:
    """Mark the published skills whose current version cites memory ``memory_id`` (just
    superseded) for re-crystallization: the crystallization step rewrites them (a rewrite that
    passes the quality bar replaces them even without a better score). Returns how many."""
    return Skill.objects.filter(status=SkillStatus.PUBLISHED, current_version__memory_ids__contains=[memory_id]).update(
        stale_reason=f"memory {memory_id} it cites was superseded by a newer one"[:300], updated_at=timezone.now())
