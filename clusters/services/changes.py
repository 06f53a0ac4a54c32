"""Cluster changes — a merge, a split, a move — made by a curator or by the pipeline's repair,
each kept exact, recorded and undoable (docs/flow.md#cluster-repair).

Every change is one set-based move of members from one cluster to another (``members_shift``):
the moved members' vectors are subtracted from one centroid sum and added to the other in the
same statement, so centroids stay exact sums whatever the order of changes and undos. Each
change is written down (``ClusterChange``: who or what decided, from and to which cluster,
which memories) and each moved memory's history says so. Undo moves the same memories back —
making the folded-in cluster of a merge again, with its id — unless a later change stands on
it. Skill versions crystallized from a cluster a change empties name the cluster its memories
went to, and their own again when the change is undone. Skills follow the cluster that holds most of the memories their version cites (the rule
the repair has always used), and a published skill whose memories a change moved in large
part is marked for re-crystallization.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from clusters.models import (
    ClusterChange,
    ClusterChangeKind,
    ClusterMember,
    KnowledgeCluster,
    Skill,
    SkillStatus,
    SkillVersion,
)
from clusters.services.membership import ASSIGN_LOCK
from clusters.services.rebuild import cluster_relabel
from core.errors import ApplicationError
from core.locks import space_locks_take
from memories.services.edit import memories_history_record

# The decider's name when the pipeline's repair made the change.
REPAIR = "repair"
# A published skill is marked for re-crystallization when one change moves at least this share
# of the memories its version cites away from (or, in a merge, together with) its cluster.
STALE_SHARE = 0.25
# What a moved memory's history calls each change (and its undo).
HISTORY_ACTIONS = {ClusterChangeKind.MERGE: "cluster merge", ClusterChangeKind.SPLIT: "cluster split",
                   ClusterChangeKind.MOVE: "cluster move"}


class ClusterChangeError(ApplicationError):
    """A cluster change or undo the hub refuses (another space, a later change stands on it …)."""


def placement_lock(space_id: int | None) -> None:
    """The lock every cluster placement of a space takes (uploads, repair, curators' changes): one
    at a time within a space. None (what the change names does not exist): nothing to lock, the
    change refuses."""
    if space_id is not None:
        space_locks_take(ASSIGN_LOCK, [space_id])


def space_of(model: type[models.Model], pk: Any) -> int | None:
    """The space of ``model`` row ``pk`` (a row's space never changes: read before its lock), or
    None when there is no such row (or ``pk`` is not one)."""
    try:
        return model._default_manager.filter(pk=pk).values_list("space_id", flat=True).first()
    except (ValueError, TypeError, ValidationError):
        return None


def empty_cluster(*, space_id: int, topic: str = "", pk: int | None = None) -> KnowledgeCluster:
    """A cluster without members (a zero sum), to move members into; ``pk``: made again with the
    id it had (a merge undone)."""
    zero = [0.0] * settings.ULTRON_EMBEDDING_DIMENSIONS
    return KnowledgeCluster.objects.create(pk=pk, space_id=space_id, topic=topic[:200], centroid=zero, member_count=0)


def members_shift(*, source: int, target: int, memory_ids: Iterable[Any] | None = None) -> list[Any]:
    """Move the members ``memory_ids`` (None: every member) of cluster ``source`` to cluster
    ``target`` in one statement: each centroid sum changes by exactly the moved members' vectors,
    each member count by their number. The moved members' similarity becomes their cosine to the
    target's new centroid. Returns the ids of the memories moved (those not in ``source`` stay)."""
    members, clusters = ClusterMember._meta.db_table, KnowledgeCluster._meta.db_table
    ids = None if memory_ids is None else [str(m) for m in memory_ids]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH moved AS (
                UPDATE {members} m SET cluster_id = %(target)s
                WHERE m.cluster_id = %(source)s AND (%(all)s OR m.memory_id = ANY(%(ids)s::uuid[]))
                RETURNING m.memory_id, m.vector
            ), total AS (
                SELECT sum(vector) AS s, count(*) AS n FROM moved
            ), shifted AS (
                UPDATE {clusters} k
                SET centroid = CASE WHEN k.id = %(target)s THEN k.centroid + total.s ELSE k.centroid - total.s END,
                    member_count = k.member_count + CASE WHEN k.id = %(target)s THEN total.n ELSE -total.n END,
                    updated_at = now()
                FROM total WHERE total.n > 0 AND k.id IN (%(source)s, %(target)s)
                RETURNING k.id
            )
            SELECT memory_id FROM moved
            """,
            {"source": source, "target": target, "all": ids is None, "ids": ids or []},
        )
        moved = [row[0] for row in cursor.fetchall()]
        if moved:
            cursor.execute(
                f"UPDATE {members} m SET similarity = 1 - (m.vector <=> k.centroid) FROM {clusters} k "
                "WHERE k.id = m.cluster_id AND m.cluster_id = %s AND m.memory_id = ANY(%s::uuid[])",
                [target, [str(m) for m in moved]],
            )
    return moved


def change_record(*, kind: str, source: KnowledgeCluster, target: KnowledgeCluster, memory_ids: list[Any],
                  by: str, similarity: float | None = None) -> ClusterChange:
    """Write the change down, and a line in each moved memory's history."""
    change = ClusterChange.objects.create(
        space_id=source.space_id, kind=kind, from_cluster_id=source.pk, to_cluster_id=target.pk,
        from_topic=source.topic[:200], to_topic=target.topic[:200], memory_ids=list(memory_ids),
        similarity=similarity, decided_by=by[:150])
    _history(memory_ids, space_id=source.space_id, editor=by, action=HISTORY_ACTIONS[ClusterChangeKind(kind)],  # type: ignore[arg-type]  # never null (stubs read a default as optional)
             source=(source.pk, source.topic), target=(target.pk, target.topic), change=change)
    return change


def _history(memory_ids: list[Any], *, space_id: int, editor: str, action: str, source: tuple[int, str],
             target: tuple[int, str], change: ClusterChange) -> None:
    def name(cluster: tuple[int, str]) -> str:
        return f"{cluster[0]} ({cluster[1]})" if cluster[1] else str(cluster[0])

    memories_history_record(memory_ids=memory_ids, space_id=space_id, editor=editor, action=action,
                            before={"cluster": name(source)}, after={"cluster": name(target)},
                            note=f"cluster change {change.pk} ({change.kind})")


def skill_home(skill: Skill) -> int | None:
    """The cluster holding most of the memories the skill's current version cites (ties: the
    lowest id); None when it has no version or none of them is in a cluster."""
    version = skill.current_version
    if version is None or not version.memory_ids:
        return None
    counts = Counter(ClusterMember.objects.filter(memory_id__in=version.memory_ids)
                     .values_list("cluster_id", flat=True))
    if not counts:
        return None
    return max(counts, key=lambda pk: (counts[pk], -pk))


def skills_follow(*, cluster_ids: Iterable[int], skill_ids: Iterable[int] = ()) -> None:
    """Each skill of the clusters ``cluster_ids`` (and each of ``skill_ids``) goes to the cluster
    holding most of the memories it cites: a cluster that already has another skill lists it as
    superseded instead (as the repair's merges always did); a cluster left holding a skill whose
    memories went elsewhere lets it go."""
    ids = list(cluster_ids)
    skills = (Skill.objects.filter(Q(clusters__pk__in=ids) | Q(pk__in=list(skill_ids))).distinct()
              .select_related("current_version").defer("embedding"))
    for skill in skills:
        home_id = skill_home(skill)
        if home_id is None:
            continue
        holders = list(KnowledgeCluster.objects.filter(skill=skill).exclude(pk=home_id)
                       .values_list("pk", "members_at_last_crystallization"))
        if holders:
            KnowledgeCluster.objects.filter(pk__in=[pk for pk, _ in holders]).update(skill=None)
        home = KnowledgeCluster.objects.defer("centroid", "direction").get(pk=home_id)
        if home.skill_id == skill.pk:
            continue
        if home.skill_id is None:
            home.skill = skill
            home.superseded_skill_slugs = [s for s in home.superseded_skill_slugs if s != skill.slug]
            if holders:
                home.members_at_last_crystallization = holders[0][1]
            home.save(update_fields=["skill", "superseded_skill_slugs", "members_at_last_crystallization"])
            Skill.objects.filter(pk=skill.pk).update(source_cluster=home)
        elif skill.slug not in home.superseded_skill_slugs:
            home.superseded_skill_slugs = [*home.superseded_skill_slugs, skill.slug]
            home.save(update_fields=["superseded_skill_slugs"])


def skills_mark_changed(*, cluster_ids: Iterable[int], moved: Iterable[Any], change: ClusterChange) -> int:
    """Published skills of ``cluster_ids`` that ``change`` moved a large part of (``STALE_SHARE``
    of the memories their version cites) are marked for re-crystallization. Returns how many."""
    moved_ids = {str(m) for m in moved}
    marked = 0
    skills = (Skill.objects.filter(clusters__pk__in=list(cluster_ids), status=SkillStatus.PUBLISHED,
                                   current_version__isnull=False)
              .distinct().select_related("current_version").defer("embedding"))
    for skill in skills:
        cited = {str(m) for m in skill.current_version.memory_ids}  # type: ignore[union-attr]  # filtered above
        if cited and len(cited & moved_ids) >= STALE_SHARE * len(cited):
            marked += Skill.objects.filter(pk=skill.pk).update(
                stale_reason=f"cluster change {change.pk} ({change.kind} by {change.decided_by}) moved "
                             f"{len(cited & moved_ids)} of the {len(cited)} memories it cites"[:300],
                updated_at=timezone.now())
    return marked


def skill_versions_follow(*, change: ClusterChange, gone: int, to: int) -> list[int]:
    """The skill versions crystallized from cluster ``gone``, when ``change`` left it without
    members (it is deleted next), name cluster ``to`` instead, which holds its memories now (not
    nothing, as the deletion would leave them); ``change`` keeps which, for its undo to give them
    their cluster back. Returns their ids."""
    ids = list(SkillVersion.objects.filter(cluster_id=gone, cluster__member_count=0).values_list("pk", flat=True))
    if ids:
        SkillVersion.objects.filter(pk__in=ids).update(cluster_id=to)
        change.skill_version_ids = [*change.skill_version_ids, *ids]
        ClusterChange.objects.filter(pk=change.pk).update(skill_version_ids=change.skill_version_ids)
    return ids


def _superseded_forget(cluster_id: int, slugs: list[str]) -> None:
    if not slugs:
        return
    cluster = KnowledgeCluster.objects.only("pk", "superseded_skill_slugs").get(pk=cluster_id)
    kept = [s for s in cluster.superseded_skill_slugs if s not in slugs]
    if kept != cluster.superseded_skill_slugs:
        KnowledgeCluster.objects.filter(pk=cluster_id).update(superseded_skill_slugs=kept)


def clusters_drop_empty(cluster_ids: Iterable[int]) -> list[int]:
    """Delete the clusters of ``cluster_ids`` left without members, their skills following their
    memories first. Returns the ids deleted."""
    empty = list(KnowledgeCluster.objects.filter(pk__in=list(cluster_ids), member_count=0).values_list("pk", flat=True))
    if not empty:
        return []
    skills = list(Skill.objects.filter(clusters__pk__in=empty).values_list("pk", flat=True))
    skills_follow(cluster_ids=[], skill_ids=skills)
    KnowledgeCluster.objects.filter(pk__in=empty, member_count=0).delete()
    return empty


def cluster_fold(*, keep: KnowledgeCluster, gone: KnowledgeCluster, by: str,
                 similarity: float | None = None, relabel: bool = True) -> ClusterChange:
    """Merge: every member of ``gone`` joins ``keep``, ``gone`` is deleted; its skill follows
    its memories (``keep`` adopts it, or lists it as superseded next to its own). The caller
    holds the placement lock and has checked both are of one space. ``relabel``: name ``keep``
    again from its members now (a curator's merge); the repair leaves it to the pipeline's
    relabelling."""
    moved = members_shift(source=gone.pk, target=keep.pk)
    change = change_record(kind=ClusterChangeKind.MERGE, source=gone, target=keep, memory_ids=moved, by=by,
                           similarity=similarity)
    if gone.superseded_skill_slugs:
        keep.refresh_from_db(fields=["superseded_skill_slugs"])
        keep.superseded_skill_slugs = list(dict.fromkeys([*keep.superseded_skill_slugs, *gone.superseded_skill_slugs]))
        keep.save(update_fields=["superseded_skill_slugs"])
    skills_mark_changed(cluster_ids=[keep.pk, gone.pk], moved=moved, change=change)
    skills_follow(cluster_ids=[keep.pk, gone.pk])
    skill_versions_follow(change=change, gone=gone.pk, to=keep.pk)
    clusters_drop_empty([gone.pk])
    if relabel:
        cluster_relabel(cluster_id=keep.pk, offline=True)
    return change


def cluster_change_undo(*, change_id: int, user: str, space_ids: list[int] | None = None) -> ClusterChange:
    """Move the memories of change ``change_id`` back where they were: a merge's folded-in
    cluster is made again (same id, its members back), a split's members return (the cluster
    they founded goes), a moved memory goes back (to a cluster made again if it had emptied).
    Centroids stay exact; topics are named again; skills follow their memories. Refused (with
    the reason) when it was undone already, or a later change moved members of either cluster
    (undo that one first), or none of its memories is still where the change put it.
    ``space_ids``: the spaces the caller may change (None: any)."""
    with transaction.atomic():
        placement_lock(space_of(ClusterChange, change_id))
        change = ClusterChange.objects.select_for_update().filter(pk=change_id).first()
        if change is None or (space_ids is not None and change.space_id not in space_ids):
            raise ClusterChangeError("no such cluster change", code="not_found")
        if change.undone_at is not None:
            raise ClusterChangeError(f"this change was undone already, by {change.undone_by}")
        both = [change.from_cluster_id, change.to_cluster_id]
        later = (ClusterChange.objects.filter(pk__gt=change.pk, undone_at__isnull=True)
                 .filter(Q(from_cluster_id__in=both) | Q(to_cluster_id__in=both)).order_by("pk").first())
        if later is not None:
            raise ClusterChangeError(
                f"a later change ({later.kind} by {later.decided_by}, change {later.pk}) moved members of "
                "these clusters: undo it first")
        target = KnowledgeCluster.objects.select_for_update().filter(pk=change.to_cluster_id).first()
        if target is None:
            raise ClusterChangeError(f"cluster {change.to_cluster_id} no longer exists (the clusters were rebuilt)")
        still = list(ClusterMember.objects.filter(cluster_id=target.pk, memory_id__in=change.memory_ids)
                     .values_list("memory_id", flat=True))
        if not still:
            raise ClusterChangeError(f"none of its memories is in cluster {target.pk} any more")
        source = KnowledgeCluster.objects.select_for_update().filter(pk=change.from_cluster_id).first()
        if source is None:
            source = empty_cluster(space_id=change.space_id, topic=change.from_topic, pk=change.from_cluster_id)  # type: ignore[arg-type]  # never null (stubs read a default as optional)
        moved = members_shift(source=target.pk, target=source.pk, memory_ids=still)
        # The skills of the versions the change re-pointed follow their memories back too (a merge into a
        # cluster with a skill of its own had listed theirs as superseded there: it no longer is).
        returning = list(Skill.objects.filter(versions__pk__in=change.skill_version_ids).distinct()
                         .values_list("pk", "slug"))
        skills_follow(cluster_ids=[source.pk, target.pk], skill_ids=[pk for pk, _ in returning])
        _superseded_forget(target.pk, [slug for pk, slug in returning
                                       if KnowledgeCluster.objects.filter(skill_id=pk).exclude(pk=target.pk).exists()])
        skills_mark_changed(cluster_ids=[source.pk, target.pk], moved=moved, change=change)
        # The versions the change re-pointed name their own cluster again; a version of a cluster the
        # undo empties (one a split founded) names where its memories went back to.
        SkillVersion.objects.filter(pk__in=change.skill_version_ids, cluster_id=target.pk).update(cluster_id=source.pk)
        SkillVersion.objects.filter(cluster_id=target.pk, cluster__member_count=0).update(cluster_id=source.pk)
        dropped = clusters_drop_empty([target.pk])
        cluster_relabel(cluster_id=source.pk, offline=True)
        if not dropped:
            cluster_relabel(cluster_id=target.pk, offline=True)
        change.undone_by, change.undone_at = user[:150], timezone.now()
        change.save(update_fields=["undone_by", "undone_at"])
        _history(moved, space_id=change.space_id, editor=user, action="cluster undo",  # type: ignore[arg-type]  # never null (stubs read a default as optional)
                 source=(target.pk, change.to_topic), target=(source.pk, change.from_topic), change=change)
        return change
