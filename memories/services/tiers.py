"""Tiers: the rebalance ranks all active memories into HOT / WARM / COLD by their hits
(docs/flow.md#hits; recorded by ``uses``) (HOT only with ``ULTRON_HOT_MIN_READERS`` distinct readers), archiving stale
COLD ones."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memories import signals
from memories.models import LexemeCount, Memory, MemoryRank, TierSnapshot


@dataclass(frozen=True)
class RebalanceResult:
    hot: int
    warm: int
    cold: int
    changed: int
    archived: int


# One statement: rank every active memory from the narrow rank table (MemoryRank: ~60 bytes a
# memory, not the ~1.6 kB row), then write only the memories whose tier changes or that are
# archived (stale COLD) — a row that does both is written once — and the rank table to match
# (its row trigger stands aside: ultron.ranks_written is set for this transaction).
_REBALANCE_SQL = """
WITH ranked AS (
    -- Each space is ranked on its own: a team's tiers do not depend on another team's hits.
    -- HOT is drawn from the memories enough distinct agents used (hot_rank ranks those apart):
    -- one agent's reads, however many, cannot make a memory HOT. Memories of equal use share
    -- their rank, and so their tier: upload order breaks no tie (on a fresh hub, where every
    -- memory has its one hit, all are WARM).
    SELECT memory_id AS id, space_id, tier AS old_tier, seen, readers >= %(readers)s AS eligible,
           rank() OVER (PARTITION BY space_id ORDER BY hit_count DESC, readers DESC) AS rank,
           rank() OVER (PARTITION BY space_id, readers >= %(readers)s ORDER BY hit_count DESC, readers DESC)
               AS hot_rank,
           count(*) OVER (PARTITION BY space_id) AS total
    FROM {ranks}
), tiered AS (
    SELECT id, space_id, old_tier, seen,
           CASE
               WHEN eligible AND hot_rank <= (total * %(hot)s + 99) / 100 THEN 'hot'
               WHEN rank <= (total * %(hot_warm)s + 99) / 100 THEN 'warm'
               ELSE 'cold'
           END AS tier
    FROM ranked
), decided AS (
    SELECT id, space_id, tier, tier <> old_tier AS moved,
           (%(days)s > 0 AND tier = 'cold' AND seen < now() - make_interval(days => %(days)s)) AS archive
    FROM tiered
), changes AS (
    SELECT array_agg(id) AS ids, array_agg(space_id) AS spaces, array_agg(tier) AS tiers,
           array_agg(moved) AS moves, array_agg(archive) AS archives
    FROM decided WHERE moved OR archive
), changed AS (
    -- Unnested from arrays, the changes look like a handful of rows to the planner, which then
    -- reaches each memory by its key: joined with the ranking itself, it read the whole table.
    SELECT c.* FROM changes, unnest(ids, spaces, tiers, moves, archives) AS c(id, space_id, tier, moved, archive)
), written AS (
    UPDATE {table} AS m
    SET tier = d.tier,
        status = CASE WHEN d.archive THEN 'archived' ELSE m.status END,
        archived_at = CASE WHEN d.archive THEN now() ELSE m.archived_at END
    FROM changed d
    WHERE m.id = d.id AND m.status = 'active'
    RETURNING m.id, m.space_id, d.tier, d.moved, d.archive
), ranks_moved AS (
    UPDATE {ranks} r SET tier = w.tier FROM written w WHERE r.memory_id = w.id AND NOT w.archive
), ranks_archived AS (
    DELETE FROM {ranks} r USING written w WHERE r.memory_id = w.id AND w.archive
), uncounted AS (
    -- The archived memories leave the keyword counts, counted here once for the statement
    -- (the row trigger stands aside: ultron.lexemes_counted is set for this transaction).
    INSERT INTO {counts} (space_id, lexeme, memories)
    SELECT space_id, lexeme, -count(*) FROM (
        SELECT m.space_id, unnest(tsvector_to_array(m.search_vector)) AS lexeme
        FROM {table} m JOIN written w ON w.id = m.id WHERE w.archive
        UNION ALL SELECT space_id, '' FROM written WHERE archive
    ) pieces GROUP BY space_id, lexeme
)
SELECT space_id, count(*) FILTER (WHERE moved), count(*) FILTER (WHERE archive) FROM written GROUP BY space_id
"""

_TRIGGERS_ASIDE = "SELECT set_config('ultron.lexemes_counted', %s, true), set_config('ultron.ranks_written', %s, true)"


def tiers_rebalance() -> RebalanceResult:
    """Re-tier every active memory by rank and archive stale COLD ones, in set-based SQL.

    Rank: hit_count desc, then distinct readers desc; ties share a rank (and a tier). The top ``ULTRON_HOT_PERCENT`` (rounded up) of
    the memories used by ``ULTRON_HOT_MIN_READERS`` distinct agents or more are HOT, up to ``HOT + WARM`` percent WARM, the rest COLD. COLD memories not hit (or created)
    for ``ULTRON_ARCHIVE_AFTER_DAYS`` days are archived (0 disables archival).
    """
    table, ranks = Memory._meta.db_table, MemoryRank._meta.db_table
    hot = settings.ULTRON_HOT_PERCENT
    params = {"hot": hot, "hot_warm": hot + settings.ULTRON_WARM_PERCENT, "readers": settings.ULTRON_HOT_MIN_READERS}
    params["days"] = settings.ULTRON_ARCHIVE_AFTER_DAYS
    with transaction.atomic(), connection.cursor() as cursor:
        # Sort and join a million rows in memory rather than in temporary files (this statement only).
        cursor.execute("SET LOCAL work_mem = '256MB'")
        # The memory table's row triggers stand aside: this statement writes the counts and ranks itself.
        cursor.execute(_TRIGGERS_ASIDE, ["on", "on"])
        cursor.execute(_REBALANCE_SQL.format(table=table, ranks=ranks, counts=LexemeCount._meta.db_table), params)
        by_space = {space_id: (moved, gone) for space_id, moved, gone in cursor.fetchall()}
        changed, archived = sum(m for m, _ in by_space.values()), sum(g for _, g in by_space.values())
        # The triggers stand aside for the rebalance statement only: any later write in this transaction is
        # counted by them again.
        cursor.execute(_TRIGGERS_ASIDE, ["off", "off"])
        # Archived members leave their clusters in one set-based update (flow.md#archival).
        if archived:
            signals.memories_archived.send(sender=Memory)
        # Counted from the narrow rank table, which holds every active memory, not from the ~1.6 kB rows.
        cursor.execute(f"SELECT space_id, tier, count(*) FROM {ranks} GROUP BY space_id, tier")
        per_space: dict[int, dict[str, int]] = {}
        counts: dict[str, int] = {}
        for space_id, tier, count in cursor.fetchall():
            per_space.setdefault(space_id, {})[tier] = count
            counts[tier] = counts.get(tier, 0) + count
        for space_id in per_space.keys() | by_space.keys():
            tier_snapshot_record(per_space.get(space_id, {}), by_space.get(space_id, (0, 0))[1], space_id=space_id)
    return RebalanceResult(
        hot=counts.get("hot", 0), warm=counts.get("warm", 0), cold=counts.get("cold", 0),
        changed=changed, archived=archived,
    )


def tier_snapshot_record(counts: dict[str, int], archived: int = 0, *, space_id: int) -> None:
    """Today's tier mix of a space (the dashboard's chart): one row a day, the day's last counts win;
    ``archived`` adds up what the day's rebalance runs archived. Counting every archived row
    instead would read the whole table (no index covers archived rows): seconds at a million."""
    day = timezone.localdate()
    tiers = {"hot": counts.get("hot", 0), "warm": counts.get("warm", 0), "cold": counts.get("cold", 0)}
    updated = TierSnapshot.objects.filter(space_id=space_id, day=day).update(**tiers, archived=F("archived") + archived)
    # The day's first run creates the row; get_or_create, as another process may be creating it too.
    if not updated:
        TierSnapshot.objects.get_or_create(space_id=space_id, day=day, defaults={**tiers, "archived": archived})
