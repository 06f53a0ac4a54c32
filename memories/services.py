"""Every write of the memory service (SPEC §4-§6). API views, pages, tasks and commands call
these functions; none of them bypasses validation, redaction or dedup."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memories import intelligence
from memories.models import EmbeddingSpace, Memory, MemoryContribution, Source, Status, Tier
from memories.providers.embeddings import get_embedder
from memories.redaction import redact_many
from memories.selectors import DuplicateMatch, embedding_column_dimensions, memory_find_duplicate
from memories.text import content_hash, embedding_text, memory_body, normalise_tags
from ultron_site.models import Agent

logger = logging.getLogger("ultron.memories")


class MemoryInputError(ValueError):
    """Bad input for a memory operation; ``field`` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class EmbeddingSpaceMismatch(RuntimeError):
    pass


@dataclass
class UploadResult:
    memory: Memory
    merged: bool
    similarity: float | None = None
    match_reason: str | None = None
    redactions: Counter = field(default_factory=Counter)


# --- validation and redaction ------------------------------------------------------------------


def _clean_text(value: Any, field_name: str, *, required: bool, limit: int) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise MemoryInputError(field_name, "must be a string")
    if "\x00" in value:
        raise MemoryInputError(field_name, "must not contain NUL characters")
    value = value.strip()
    if required and not value:
        raise MemoryInputError(field_name, "is required and must not be blank")
    if len(value) > limit:
        raise MemoryInputError(field_name, f"is too long ({len(value)} characters, at most {limit})")
    return value


def _clean_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise MemoryInputError("tags", "must be a list of strings")
    for tag in value:
        if len(tag.strip()) > settings.ULTRON_MAX_TAG_CHARS:
            raise MemoryInputError("tags", f"each tag must be at most {settings.ULTRON_MAX_TAG_CHARS} characters")
    # Distinct by their normal form, but kept as written: redaction sees "Grace Hopper", not
    # "grace hopper" (names are found by their capitals); normalisation comes after.
    distinct: dict[str, str] = {}
    for tag in value:
        raw = " ".join(tag.split())
        if raw and raw.lower() not in distinct:
            distinct[raw.lower()] = raw
    tags = list(distinct.values())
    if len(tags) > settings.ULTRON_MAX_TAGS:
        raise MemoryInputError("tags", f"at most {settings.ULTRON_MAX_TAGS} distinct tags are allowed")
    return tags


@dataclass
class CleanMemory:
    content: str
    context: str
    resolution: str
    tags: list[str]
    redactions: Counter


def memory_input_clean(*, content: Any, context: Any = "", resolution: Any = "", tags: Any = None) -> CleanMemory:
    """Validate and redact the fields of a memory. Raises :class:`MemoryInputError`."""
    clean_content = _clean_text(content, "content", required=True, limit=settings.ULTRON_MAX_CONTENT_CHARS)
    clean_context = _clean_text(context, "context", required=False, limit=settings.ULTRON_MAX_FIELD_CHARS)
    clean_resolution = _clean_text(resolution, "resolution", required=False, limit=settings.ULTRON_MAX_FIELD_CHARS)
    clean_tags = _clean_tags(tags)
    counts: Counter = Counter()
    results = redact_many([clean_content, clean_context, clean_resolution, *clean_tags])
    for result in results:
        counts.update(result.counts)
    fields = [r.text for r in results[:3]]
    redacted_tags = [r.text for r in results[3:]]
    redacted_tags = normalise_tags(redacted_tags, max_tags=settings.ULTRON_MAX_TAGS, max_chars=settings.ULTRON_MAX_TAG_CHARS)
    return CleanMemory(fields[0], fields[1], fields[2], redacted_tags, counts)


# --- embedding space ---------------------------------------------------------------------------

_verified_space: tuple[str, str, int] | None = None


def _configured_space() -> tuple[str, str, int]:
    embedder = get_embedder()
    return embedder.provider, embedder.model, embedder.dimensions


def embedding_space_forget() -> None:
    """Drop this process's memory of a verified embedding space (after external changes)."""
    global _verified_space
    _verified_space = None


def embedding_space_ensure() -> None:
    """Make sure stored vectors and the configured embedder agree; adopt the configuration
    while nothing is stored yet. Raises :class:`EmbeddingSpaceMismatch` otherwise."""
    global _verified_space
    wanted = _configured_space()
    if _verified_space == wanted:
        return
    provider, model, dims = wanted
    with transaction.atomic():
        space = EmbeddingSpace.objects.select_for_update().first()
        column_dims = embedding_column_dimensions()
        matches = space is not None and (space.provider, space.model, space.dimensions) == wanted
        if matches and column_dims == dims:
            _verified_space = wanted
            return
        if Memory.objects.exists():
            stored = f"{space.provider}:{space.model} ({space.dimensions} dims)" if space else f"{column_dims} dims"
            raise EmbeddingSpaceMismatch(
                f"Stored memories were embedded with {stored}, but the hub is configured for "
                f"{provider}:{model} ({dims} dims). Run `python manage.py reembed` to re-embed "
                "them with the configured model, or restore the previous embedding settings."
            )
        if column_dims != dims:
            _embedding_column_resize(dims)
        EmbeddingSpace.objects.all().delete()
        EmbeddingSpace.objects.create(provider=provider, model=model, dimensions=dims)
    _verified_space = wanted


def _embedding_indexes() -> list:
    return [index for index in Memory._meta.indexes if "embedding" in index.fields]


def _embedding_column_resize(dims: int) -> None:
    """Change the (empty) vector column's dimension, re-creating its HNSW indexes."""
    table = Memory._meta.db_table
    with connection.schema_editor() as editor:
        for index in _embedding_indexes():
            editor.remove_index(Memory, index)
        editor.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dims)}) USING NULL")
        for index in _embedding_indexes():
            editor.add_index(Memory, index)
    from clusters.services import vector_columns_resize

    vector_columns_resize(dims)


def embed_texts(texts: list[str]) -> list[list[float]]:
    embedding_space_ensure()
    return [list(map(float, row)) for row in get_embedder().embed(texts)]


# --- upload ------------------------------------------------------------------------------------


def _dedup_lock_key(memory_type: str) -> int:
    digest = hashlib.sha256(f"ultron:dedup:{memory_type}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def memory_upload(
    *,
    content: Any,
    context: Any = "",
    resolution: Any = "",
    tags: Any = None,
    agent: Agent | None = None,
    source: str = Source.API,
    provenance: dict | None = None,
) -> UploadResult:
    """Store one memory, or merge it into the memory it duplicates (SPEC §4)."""
    clean = memory_input_clean(content=content, context=context, resolution=resolution, tags=tags)
    memory_type = intelligence.classify(clean.content, clean.context, clean.resolution)
    body_hash = content_hash(clean.content, clean.context, clean.resolution)
    vector = embed_texts([embedding_text(memory_type, clean.content, clean.context, clean.resolution)])[0]
    provenance = provenance or {}

    verdicts: dict[Any, bool] = {}
    # Decide under a per-type advisory lock, so parallel uploads of one memory cannot both
    # insert. An LLM "same subject?" question is asked outside the lock; then decide again.
    for _ in range(4):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_dedup_lock_key(memory_type)])
            match = memory_find_duplicate(
                memory_type=memory_type, body_hash=body_hash, vector=vector, verdicts=verdicts,
                body=memory_body(clean.content, clean.context, clean.resolution),
            )
            if match is not None and match.reason != "ask":
                memory = _record_duplicate(match, clean, agent=agent, source=source, provenance=provenance)
                result = UploadResult(memory, True, match.similarity, match.reason, clean.redactions)
                break
            if match is None:
                # Extractive summaries now; an LLM (if any) rewrites them after commit.
                l0, l1 = intelligence.extractive_summaries(clean.content, clean.context, clean.resolution)
                memory = Memory.objects.create(
                    content=clean.content,
                    context=clean.context,
                    resolution=clean.resolution,
                    tags=clean.tags,
                    memory_type=memory_type,
                    tier=Tier.WARM,
                    status=Status.ACTIVE,
                    hit_count=1,
                    last_hit_at=timezone.now(),
                    summary_l0=l0,
                    overview_l1=l1,
                    embedding=vector,
                    content_hash=body_hash,
                    agent=agent,
                    source=source,
                    provenance=provenance,
                    redaction_counts=dict(clean.redactions),
                )
                result = UploadResult(memory, False, None, None, clean.redactions)
                break
        # match.reason == "ask": the LLM decides, outside the lock, then we decide again.
        candidate = match.memory
        verdicts[candidate.pk] = intelligence.same_subject(
            (clean.content, clean.context, clean.resolution),
            (candidate.content, candidate.context, candidate.resolution),
        )
    else:  # pragma: no cover - four rounds only if memories keep changing under us
        raise RuntimeError("duplicate check did not settle")

    _after_upload(result)
    return result


def _record_duplicate(
    match: DuplicateMatch, clean: CleanMemory, *, agent: Agent | None, source: str, provenance: dict
) -> Memory:
    """Count the hit, keep the upload as a contribution, union the tags (inside the lock)."""
    now = timezone.now()
    memory = Memory.objects.select_for_update().defer("embedding").get(pk=match.memory.pk)
    identical = match.reason == "exact"
    MemoryContribution.objects.create(
        memory=memory,
        agent=agent,
        content=clean.content,
        context=clean.context,
        resolution=clean.resolution,
        tags=clean.tags,
        similarity=match.similarity,
        match_reason=match.reason,
        source=source,
        provenance=provenance,
        redaction_counts=dict(clean.redactions),
        # An identical body has nothing to fold in; only its tags count.
        merged_at=now if identical else None,
    )
    update: dict[str, Any] = {"hit_count": F("hit_count") + 1, "last_hit_at": now, "updated_at": now}
    tags = normalise_tags(memory.tags + clean.tags, max_tags=settings.ULTRON_MAX_TAGS,
                          max_chars=settings.ULTRON_MAX_TAG_CHARS)
    if tags != memory.tags:
        update["tags"] = tags
    if not identical:
        update["merge_pending"] = True
    if clean.redactions:
        counts = Counter(memory.redaction_counts)
        counts.update(clean.redactions)
        update["redaction_counts"] = dict(counts)
    Memory.objects.filter(pk=memory.pk).update(**update)
    return Memory.objects.defer("embedding").get(pk=memory.pk)


def _after_upload(result: UploadResult) -> None:
    from clusters.services import cluster_assign
    from memories import tasks

    if not result.merged:
        cluster_assign(memory_id=result.memory.pk)
    if not intelligence.llm_available():
        return
    memory_id = str(result.memory.pk)
    if not result.merged:
        transaction.on_commit(lambda: tasks.enqueue("memories.tasks.memory_summarize_task", memory_id))
    elif result.memory.merge_pending:
        transaction.on_commit(lambda: tasks.enqueue("memories.tasks.memory_merge_task", memory_id))


def memory_summarize(*, memory_id: Any) -> bool:
    """Regenerate L0/L1 from the current body (LLM, else extractive). False if it changed meanwhile."""
    memory = Memory.objects.defer("embedding").filter(pk=memory_id).first()
    if memory is None:
        return False
    l0, l1 = intelligence.summarize(memory.content, memory.context, memory.resolution)
    updated = Memory.objects.filter(pk=memory.pk, content_hash=memory.content_hash).update(
        summary_l0=l0, overview_l1=l1, updated_at=timezone.now()
    )
    return bool(updated)


def memory_merge_pending(*, memory_id: Any) -> bool:
    """Fold a memory's unmerged contributions into it with the LLM (SPEC §4.6).

    Returns True when the memory has nothing left to merge. Without an LLM, or when it fails,
    the memory keeps its text and stays ``merge_pending`` for a later retry.
    """
    memory = Memory.objects.defer("embedding").filter(pk=memory_id, status=Status.ACTIVE).first()
    if memory is None:
        return True
    pending = list(memory.contributions.filter(merged_at__isnull=True).order_by("created_at"))
    if not pending:
        if memory.merge_pending:
            Memory.objects.filter(pk=memory.pk).update(merge_pending=False)
        return True
    merged = intelligence.merge(
        (memory.content, memory.context, memory.resolution),
        [(c.content, c.context, c.resolution) for c in pending],
        memory.tags,
    )
    if merged is None:
        if not memory.merge_pending:
            Memory.objects.filter(pk=memory.pk).update(merge_pending=True)
        return False
    # The model only saw redacted text, but what it writes is checked like any other input.
    try:
        clean = memory_input_clean(
            content=merged.content,
            context=merged.context,
            resolution=merged.resolution,
            tags=normalise_tags(memory.tags + merged.tags, max_tags=settings.ULTRON_MAX_TAGS,
                                max_chars=settings.ULTRON_MAX_TAG_CHARS),
        )
    except MemoryInputError as exc:
        logger.warning("merge of %s rejected: %s", memory.pk, exc)
        return False
    new_hash = content_hash(clean.content, clean.context, clean.resolution)
    body_changed = new_hash != memory.content_hash
    update: dict[str, Any] = {"tags": clean.tags, "merge_pending": False, "updated_at": timezone.now()}
    if body_changed:
        l0, l1 = intelligence.summarize(clean.content, clean.context, clean.resolution)
        vector = embed_texts([embedding_text(memory.memory_type, clean.content, clean.context, clean.resolution)])[0]
        update.update(
            content=clean.content, context=clean.context, resolution=clean.resolution,
            content_hash=new_hash, summary_l0=l0, overview_l1=l1, embedding=vector,
        )
    with transaction.atomic():
        # Apply only if nobody changed the body while the model was thinking.
        updated = Memory.objects.filter(pk=memory.pk, content_hash=memory.content_hash).update(**update)
        if not updated:
            return False
        MemoryContribution.objects.filter(pk__in=[c.pk for c in pending]).update(merged_at=timezone.now())
        still_pending = memory.contributions.filter(merged_at__isnull=True).exists()
        if still_pending:
            Memory.objects.filter(pk=memory.pk).update(merge_pending=True)
        if body_changed:
            from clusters.services import cluster_member_refresh

            cluster_member_refresh(memory_id=memory.pk)
    return not still_pending


def memories_merge_retry(*, limit: int = 100) -> dict[str, int]:
    """Retry the merge of memories left ``merge_pending`` (the scheduled pipeline step)."""
    if not intelligence.llm_available():
        pending = Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).count()
        return {"attempted": 0, "merged": 0, "pending": pending}
    ids = list(
        Memory.objects.filter(status=Status.ACTIVE, merge_pending=True)
        .order_by("updated_at").values_list("pk", flat=True)[:limit]
    )
    merged = sum(1 for memory_id in ids if memory_merge_pending(memory_id=memory_id))
    pending = Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).count()
    return {"attempted": len(ids), "merged": merged, "pending": pending}


# --- hits and tiers ----------------------------------------------------------------------------

SEARCH_HIT = 1
DETAILS_HIT = 2


def memory_hits_record(*, ids: list[Any], amount: int) -> int:
    """Add ``amount`` to the hit count of each active memory in ``ids``; returns rows touched."""
    if not ids:
        return 0
    return Memory.objects.filter(pk__in=ids, status=Status.ACTIVE).update(
        hit_count=F("hit_count") + amount, last_hit_at=timezone.now()
    )


@dataclass(frozen=True)
class RebalanceResult:
    hot: int
    warm: int
    cold: int
    changed: int
    archived: int


# One statement: rank every active memory, then write only the rows whose tier changes or that
# are archived (stale COLD) — a row that does both is written once.
_REBALANCE_SQL = """
WITH ranked AS (
    SELECT id, tier AS old_tier, COALESCE(last_hit_at, created_at) AS seen,
           row_number() OVER (
               ORDER BY hit_count DESC, COALESCE(last_hit_at, created_at) DESC, created_at DESC, id
           ) AS rank,
           count(*) OVER () AS total
    FROM {table}
    WHERE status = 'active'
), tiered AS (
    SELECT id, old_tier, seen,
           CASE
               WHEN rank <= (total * %(hot)s + 99) / 100 THEN 'hot'
               WHEN rank <= (total * %(hot_warm)s + 99) / 100 THEN 'warm'
               ELSE 'cold'
           END AS tier
    FROM ranked
), decided AS (
    SELECT id, tier, tier <> old_tier AS moved,
           (%(days)s > 0 AND tier = 'cold' AND seen < now() - make_interval(days => %(days)s)) AS archive
    FROM tiered
), written AS (
    UPDATE {table} AS m
    SET tier = d.tier,
        status = CASE WHEN d.archive THEN 'archived' ELSE m.status END,
        archived_at = CASE WHEN d.archive THEN now() ELSE m.archived_at END
    FROM decided d
    WHERE m.id = d.id AND (d.moved OR d.archive)
    RETURNING d.moved, d.archive
)
SELECT count(*) FILTER (WHERE moved), count(*) FILTER (WHERE archive) FROM written
"""


def tiers_rebalance() -> RebalanceResult:
    """Re-tier every active memory by rank and archive stale COLD ones, in set-based SQL.

    Rank: hit_count desc, then last hit desc. The top ``ULTRON_HOT_PERCENT`` (rounded up) are
    HOT, up to ``HOT + WARM`` percent WARM, the rest COLD. COLD memories not hit (or created)
    for ``ULTRON_ARCHIVE_AFTER_DAYS`` days are archived (0 disables archival).
    """
    table = Memory._meta.db_table
    hot = settings.ULTRON_HOT_PERCENT
    params = {"hot": hot, "hot_warm": hot + settings.ULTRON_WARM_PERCENT}
    params["days"] = settings.ULTRON_ARCHIVE_AFTER_DAYS
    with transaction.atomic(), connection.cursor() as cursor:
        # Sort and join a million rows in memory rather than in temporary files (this statement only).
        cursor.execute("SET LOCAL work_mem = '256MB'")
        cursor.execute(_REBALANCE_SQL.format(table=table), params)
        changed, archived = cursor.fetchone()
        if archived:
            from clusters.services import clusters_prune_inactive

            clusters_prune_inactive()
        cursor.execute(
            f"SELECT tier, count(*) FROM {table} WHERE status = 'active' GROUP BY tier"
        )
        counts = dict(cursor.fetchall())
    return RebalanceResult(
        hot=counts.get("hot", 0), warm=counts.get("warm", 0), cold=counts.get("cold", 0),
        changed=changed, archived=archived,
    )


# --- re-embedding ------------------------------------------------------------------------------


def memories_reembed(*, batch_size: int = 256, progress: Any = None) -> int:
    """Re-embed every memory (active and archived) with the configured embedder and record
    the new embedding space. A new dimension is filled into a fresh column that replaces the
    old one at the end, all in one transaction: a failure leaves the old vectors in place."""
    global _verified_space
    provider, model, dims = _configured_space()
    embedder = get_embedder()
    table = Memory._meta.db_table
    total = Memory.objects.count()
    done = 0
    with transaction.atomic(), connection.cursor() as cursor:
        resize = embedding_column_dimensions() != dims
        column = "embedding_reembed" if resize else "embedding"
        if resize:
            from clusters.services import vector_columns_resize

            vector_columns_resize(dims)
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN {column} vector({int(dims)})")
        ids = list(Memory.objects.order_by("created_at", "pk").values_list("pk", flat=True))
        for start in range(0, len(ids), batch_size):
            rows = list(
                Memory.objects.filter(pk__in=ids[start : start + batch_size])
                .values_list("pk", "memory_type", "content", "context", "resolution")
            )
            vectors = embedder.embed([embedding_text(*row[1:]) for row in rows])
            cursor.executemany(
                f"UPDATE {table} SET {column} = %s::vector WHERE id = %s",
                [("[" + ",".join(f"{x:.7g}" for x in vector) + "]", row[0])
                 for row, vector in zip(rows, vectors, strict=True)],
            )
            done += len(rows)
            if progress:
                progress(done, total)
        if resize:
            with connection.schema_editor() as editor:
                for index in _embedding_indexes():
                    editor.remove_index(Memory, index)
                editor.execute(f"ALTER TABLE {table} DROP COLUMN embedding")
                editor.execute(f"ALTER TABLE {table} RENAME COLUMN {column} TO embedding")
                editor.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET NOT NULL")
                for index in _embedding_indexes():
                    editor.add_index(Memory, index)
        EmbeddingSpace.objects.all().delete()
        EmbeddingSpace.objects.create(provider=provider, model=model, dimensions=dims)
        _verified_space = (provider, model, dims)
        # Centroids and skill search vectors live in the old space too: rebuild them.
        from clusters.services import clusters_rebuild, skills_reembed

        clusters_rebuild()
        skills_reembed()
    return done


def memory_archive(*, memory_id: Any) -> bool:
    """Archive a memory (kept, but out of search, rebalance and its cluster)."""
    from clusters.services import cluster_member_remove

    with transaction.atomic():
        archived = bool(
            Memory.objects.filter(pk=memory_id, status=Status.ACTIVE).update(
                status=Status.ARCHIVED, archived_at=timezone.now()
            )
        )
        if archived:
            cluster_member_remove(memory_id=memory_id)
    return archived


def memories_consolidate(*, limit: int = 50) -> dict[str, int]:
    """Fold near-duplicate active pairs left over (e.g. from before a threshold change) into one
    memory: the newer becomes a contribution of the older and is archived; bounded per run.
    Off unless ULTRON_CONSOLIDATION_ENABLED."""
    from memories.selectors import memory_pairs_near_duplicate

    if not settings.ULTRON_CONSOLIDATION_ENABLED:
        return {"enabled": 0, "merged": 0}
    merged = 0
    for keep_id, drop_id, similarity in memory_pairs_near_duplicate(limit=limit):
        with transaction.atomic():
            pair = {m.pk: m for m in Memory.objects.select_for_update().defer("embedding")
                    .filter(pk__in=[keep_id, drop_id], status=Status.ACTIVE)}
            if len(pair) != 2:
                continue
            keep, drop = pair[keep_id], pair[drop_id]
            MemoryContribution.objects.create(
                memory=keep, agent=drop.agent, content=drop.content, context=drop.context,
                resolution=drop.resolution, tags=drop.tags, similarity=similarity, match_reason="consolidated",
                source=drop.source, provenance={**drop.provenance, "consolidated_from": str(drop.pk)},
                redaction_counts=drop.redaction_counts,
            )
            Memory.objects.filter(pk=keep.pk).update(
                hit_count=F("hit_count") + drop.hit_count, merge_pending=True, updated_at=timezone.now(),
                tags=normalise_tags(keep.tags + drop.tags, max_tags=settings.ULTRON_MAX_TAGS,
                                    max_chars=settings.ULTRON_MAX_TAG_CHARS),
            )
            Memory.objects.filter(pk=drop.pk).update(status=Status.ARCHIVED, archived_at=timezone.now())
            from clusters.services import cluster_member_remove

            cluster_member_remove(memory_id=drop.pk)
            merged += 1
    return {"enabled": 1, "merged": merged}


def memory_delete(*, memory_id: Any) -> bool:
    """Delete a memory for good, taking it out of its cluster first (curators only)."""
    from clusters.services import cluster_member_remove

    with transaction.atomic():
        cluster_member_remove(memory_id=memory_id)
        deleted, _ = Memory.objects.filter(pk=memory_id).delete()
    return bool(deleted)


def memory_restore(*, memory_id: Any) -> bool:
    """Bring an archived memory back (curators): active again, hit now, back in a cluster."""
    from clusters.services import cluster_member_refresh

    with transaction.atomic():
        restored = bool(Memory.objects.filter(pk=memory_id, status=Status.ARCHIVED).update(
            status=Status.ACTIVE, archived_at=None, last_hit_at=timezone.now()))
    if restored:
        cluster_member_refresh(memory_id=memory_id)
    return restored
