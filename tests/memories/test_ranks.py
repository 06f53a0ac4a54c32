"""The narrow rank table (MemoryRank) the tier rebalance sorts: PostgreSQL triggers keep it equal
to the active memories' rank columns through every kind of write."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents.services import agent_create
from memories import services
from memories.models import Memory, MemoryRank, Status, Tier
from memories.services import memory_upload, tiers_rebalance

pytestmark = pytest.mark.django_db

_ACTIVE = """
SELECT id, hit_count, readers, COALESCE(last_hit_at, created_at), created_at, tier
FROM memories_memory WHERE status = 'active'
"""
_RANKS = "SELECT memory_id, hit_count, readers, seen, created_at, tier FROM memories_memoryrank"


def assert_ranks_follow() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"({_ACTIVE} EXCEPT {_RANKS}) UNION ALL ({_RANKS} EXCEPT {_ACTIVE})")
        assert cursor.fetchall() == []


def _bulk(n: int, agent) -> list[Memory]:
    now = timezone.now()
    return Memory.objects.bulk_create(
        Memory(content=f"memory {i}", memory_type="pattern", embedding=[1.0] + [0.0] * 383, content_hash=f"h{i}",
               hit_count=i + 1, agent=agent, last_hit_at=now - timedelta(days=i * 20) if i % 3 else None)
        for i in range(n)
    )


def test_ranks_follow_inserts_hits_edits_archival_and_deletes(agent):
    uploaded = memory_upload(content="pip install fails behind the proxy: set PIP_INDEX_URL to the mirror",
                             agent=agent).memory
    rows = _bulk(12, agent)
    assert MemoryRank.objects.count() == 13
    assert_ranks_follow()
    services.memory_uses_record(ids=[rows[0].pk, uploaded.pk], reader_id=agent_create(name="reader-rex").pk)
    Memory.objects.filter(pk=rows[1].pk).update(tier=Tier.HOT)
    Memory.objects.filter(pk=rows[2].pk).update(content="reworded")  # no rank column: no trigger call
    assert_ranks_follow()
    services.memory_archive(memory_id=rows[3].pk)
    Memory.objects.filter(pk=rows[4].pk).update(status=Status.ARCHIVED)
    assert not MemoryRank.objects.filter(memory_id__in=[rows[3].pk, rows[4].pk]).exists()
    services.memory_restore(memory_id=rows[3].pk)
    services.memory_delete(memory_id=rows[5].pk)
    Memory.objects.filter(pk__in=[rows[6].pk, rows[7].pk]).delete()
    assert MemoryRank.objects.count() == 13 - 1 - 1 - 2
    assert_ranks_follow()


def test_rebalance_moves_and_archives_in_both_tables(agent, settings):
    settings.ULTRON_ARCHIVE_AFTER_DAYS = 30
    _bulk(30, agent)
    first = tiers_rebalance()
    assert first.changed > 0 and first.archived > 0
    assert_ranks_follow()
    assert MemoryRank.objects.count() == Memory.objects.filter(status=Status.ACTIVE).count() == 30 - first.archived
    assert tiers_rebalance().changed + tiers_rebalance().archived <= first.changed
    assert_ranks_follow()
    # The rank table alone decides: the counts it reports are the memories' own.
    assert sum(1 for m in Memory.objects.filter(status=Status.ACTIVE, tier=Tier.HOT)) == tiers_rebalance().hot


def test_ranks_follow_a_truncate(agent):
    _bulk(3, agent)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks pending
        cursor.execute("TRUNCATE memories_memory CASCADE")
    assert not MemoryRank.objects.exists()


def test_migration_copied_the_ranks_of_memories_already_stored(agent):
    """The backfill in migration 0010 (run again here: it skips rows already present)."""
    from importlib import import_module

    _bulk(4, agent)
    MemoryRank.objects.all().delete()
    backfill = import_module("memories.migrations.0010_memory_ranks").FORWARD.split("INSERT INTO memories_memoryrank")[-1]
    # The table has had a space column since migration 0013: the backfill's rows take the memory's.
    backfill = backfill.replace("(memory_id, hit_count,", "(memory_id, space_id, hit_count,").replace(
        "SELECT id, hit_count,", "SELECT id, space_id, hit_count,")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memories_memoryrank" + backfill)
    assert_ranks_follow()
