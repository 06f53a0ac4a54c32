"""Clusters by hand: a curator merges two clusters, splits one, or moves a memory to another
cluster (docs/flow.md#cluster-repair). Each is a recorded, undoable cluster change
(``clusters.services.changes``) under the placement lock, within one space: a cluster never
mixes spaces."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from clusters.models import ClusterChange, ClusterChangeKind, ClusterMember, KnowledgeCluster
from clusters.services.changes import (
    ClusterChangeError,
    change_record,
    cluster_fold,
    clusters_drop_empty,
    empty_cluster,
    members_shift,
    placement_lock,
    skill_versions_follow,
    skills_follow,
    skills_mark_changed,
    space_of,
)
from clusters.services.rebuild import cluster_relabel
from memories.models import Memory


def _cluster(cluster_id: Any, space_ids: list[int] | None, field: str) -> KnowledgeCluster:
    """One cluster, locked; another space's (outside ``space_ids``) is missing like one that never was."""
    try:
        pk = int(cluster_id)
    except (TypeError, ValueError):
        raise ClusterChangeError("not a cluster id", field=field) from None
    queryset = KnowledgeCluster.objects.select_for_update().defer("direction")
    if space_ids is not None:
        queryset = queryset.filter(space_id__in=space_ids)
    cluster = queryset.filter(pk=pk).first()
    if cluster is None:
        raise ClusterChangeError(f"no cluster {pk}", code="not_found", field=field)
    return cluster


def clusters_merge(*, into: Any, other: Any, user: str, space_ids: list[int] | None = None) -> ClusterChange:
    """Fold cluster ``other`` into cluster ``into`` (both of one space): its members join,
    ``into``'s centroid sum gains exactly their vectors, ``other`` is deleted, skills follow
    their memories and ``into`` is named again. Undo makes ``other`` again."""
    with transaction.atomic():
        placement_lock(space_of(KnowledgeCluster, into))
        keep = _cluster(into, space_ids, "into")
        gone = _cluster(other, space_ids, "other")
        if keep.pk == gone.pk:
            raise ClusterChangeError("a cluster cannot merge with itself", field="other")
        if keep.space_id != gone.space_id:
            raise ClusterChangeError("the two clusters are of different spaces: a cluster never mixes spaces",
                                     field="other")
        if gone.member_count == 0:
            raise ClusterChangeError(f"cluster {gone.pk} has no members", field="other")
        return cluster_fold(keep=keep, gone=gone, by=user)


def cluster_split(*, cluster_id: Any, memory_ids: list[Any], user: str,
                  space_ids: list[int] | None = None) -> ClusterChange:
    """The chosen members of a cluster found a new cluster of the same space; both centroid
    sums change by exactly their vectors, both clusters are named again, and a skill stays with
    the side holding most of its memories. Undo puts them back."""
    with transaction.atomic():
        placement_lock(space_of(KnowledgeCluster, cluster_id))
        cluster = _cluster(cluster_id, space_ids, "cluster_id")
        chosen = list(dict.fromkeys(str(m) for m in memory_ids))
        if not chosen:
            raise ClusterChangeError("choose the members that form the new cluster", field="memory_ids")
        members = {str(m) for m in ClusterMember.objects.filter(cluster=cluster).values_list("memory_id", flat=True)}
        strangers = [m for m in chosen if m not in members]
        if strangers:
            raise ClusterChangeError(f"memory {strangers[0]} is not a member of cluster {cluster.pk}",
                                     field="memory_ids")
        if len(chosen) >= len(members):
            raise ClusterChangeError("a split leaves members on both sides: choose fewer than all of them",
                                     field="memory_ids")
        new = empty_cluster(space_id=cluster.space_id)  # type: ignore[arg-type]  # never null (stubs read a default as optional)
        moved = members_shift(source=cluster.pk, target=new.pk, memory_ids=chosen)
        new.topic = cluster_relabel(cluster_id=new.pk, offline=True)
        change = change_record(kind=ClusterChangeKind.SPLIT, source=cluster, target=new, memory_ids=moved, by=user)
        cluster_relabel(cluster_id=cluster.pk, offline=True)
        skills_mark_changed(cluster_ids=[cluster.pk], moved=moved, change=change)
        skills_follow(cluster_ids=[cluster.pk, new.pk])
        return change


def cluster_member_move(*, memory_id: Any, to_cluster_id: Any, user: str, space_ids: list[int] | None = None,
                        from_cluster_id: int | None = None) -> ClusterChange:
    """Move one memory from its cluster (``from_cluster_id``, when the caller names it) to
    another of its space (a cluster it leaves empty is deleted; undo makes it again). Both
    centroid sums change by exactly its vector."""
    with transaction.atomic():
        placement_lock(space_of(Memory, memory_id))
        try:
            member = ClusterMember.objects.select_for_update().filter(memory_id=memory_id).first()
        except ValidationError:  # not a UUID
            member = None
        if member is None or (space_ids is not None and member.space_id not in space_ids) or (
                from_cluster_id is not None and member.cluster_id != from_cluster_id):
            where = "this cluster" if from_cluster_id is not None else "a cluster (not active, or not placed yet)"
            raise ClusterChangeError(f"the memory is not in {where}", field="memory_id")
        source = _cluster(member.cluster_id, space_ids, "memory_id")
        target = _cluster(to_cluster_id, space_ids, "to_cluster_id")
        if target.pk == source.pk:
            raise ClusterChangeError(f"the memory is in cluster {target.pk} already", field="to_cluster_id")
        if target.space_id != source.space_id:
            raise ClusterChangeError("the cluster is of another space: a cluster never mixes spaces",
                                     field="to_cluster_id")
        moved = members_shift(source=source.pk, target=target.pk, memory_ids=[member.memory_id])
        change = change_record(kind=ClusterChangeKind.MOVE, source=source, target=target, memory_ids=moved, by=user)
        skills_mark_changed(cluster_ids=[source.pk], moved=moved, change=change)
        skills_follow(cluster_ids=[source.pk, target.pk])
        skill_versions_follow(change=change, gone=source.pk, to=target.pk)
        if not clusters_drop_empty([source.pk]):
            cluster_relabel(cluster_id=source.pk, offline=True)
        cluster_relabel(cluster_id=target.pk, offline=True)
        return change
