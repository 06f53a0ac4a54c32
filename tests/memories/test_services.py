from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents.services import agent_create
from memories import services
from memories.models import Memory, MemoryContribution, Status, Tier
from memories.services import MemoryInputError, memory_upload, tiers_rebalance
from memories.thresholds import model_thresholds
from tests.spaces import as_hub

pytestmark = pytest.mark.django_db

ERROR = {
    "content": "psycopg OperationalError: connection refused when Django starts before PostgreSQL",
    "context": "docker compose brings up web and db containers together",
    "resolution": "add a healthcheck to the db service and depends_on condition service_healthy",
}
# Same subject, reworded: cosine with ERROR is well above 0.85 for MiniLM.
ERROR_REWORDED = {
    "content": "psycopg OperationalError connection refused because Django started before PostgreSQL was up",
    "context": "docker compose starts the web and db containers together",
    "resolution": "add a healthcheck to the db service and use depends_on condition service_healthy",
}


def test_secrets_in_uploads_are_redacted_before_storage(agent):
    key = "sk-proj-abcdefghijklmnopqrstuvwxyzT3BlbkFJ0123456789abcdefghij"
    result = memory_upload(
        content=f"OpenAI calls failed with 401 because the key {key} was revoked",
        resolution="export OPENAI_API_KEY=sk-proj-zyxwvutsrqponmlkjihgfedcba987654 and retry",
        tags=["openai", "sk-0a1b2c3d4e5f60718293a4b5c6d7e8f9"],
        agent=agent,
    )
    memory = Memory.objects.get(pk=result.memory.pk)
    stored = json.dumps([memory.content, memory.context, memory.resolution, memory.tags,
                         memory.summary_l0, memory.overview_l1])
    assert "sk-proj-" not in stored and "sk-0a1b2c3d" not in stored
    assert "<LLM_API_KEY>" in memory.content
    assert result.redactions["LLM_API_KEY"] >= 2


def test_exact_duplicate_is_found_by_hash_regardless_of_case_and_spacing(agent):
    first = memory_upload(**ERROR, agent=agent)
    second = memory_upload(
        content=ERROR["content"].upper() + "  ", context=ERROR["context"], resolution=ERROR["resolution"]
    )
    assert second.merged and second.match_reason == "exact" and second.memory.pk == first.memory.pk
    contribution = MemoryContribution.objects.get(memory=first.memory)
    # Nothing new to fold in: the contribution is merged at once and no merge is pending.
    assert contribution.merged_at is not None
    assert not Memory.objects.get(pk=first.memory.pk).merge_pending


def test_near_duplicate_without_llm_keeps_text_and_sets_merge_pending(agent, curator):
    first = memory_upload(**ERROR, agent=agent)
    second = memory_upload(**ERROR_REWORDED, agent=curator)
    assert second.merged and second.match_reason == "similar"
    assert second.similarity >= 0.85
    memory = Memory.objects.get(pk=first.memory.pk)
    assert memory.content == ERROR["content"]
    assert memory.merge_pending
    assert memory.hit_count == 2
    contribution = memory.contributions.get()
    assert contribution.agent == curator and contribution.content == ERROR_REWORDED["content"]
    assert contribution.merged_at is None
    assert memory.agent == agent  # first contributor stays


def test_different_lessons_on_one_tool_do_not_merge(agent):
    a = memory_upload(content="Always use ruff for linting; the user prefers it over flake8", agent=agent)
    b = memory_upload(content="ruff crashed with a panic error while linting; upgrade ruff to fix it", agent=agent)
    assert a.memory.memory_type == "preference" and b.memory.memory_type == "error"
    assert not b.merged and b.candidate_of is None


def test_soft_band_without_llm_is_not_a_duplicate(agent, settings):
    # Move the thresholds around the measured similarity of the pair so it falls in the band.
    first = memory_upload(**ERROR, agent=agent)
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.999
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.5
    second = memory_upload(**ERROR_REWORDED, agent=agent)
    assert not second.merged
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2
    assert first.memory.pk != second.memory.pk


def test_soft_band_asks_the_llm_and_merges_on_yes(agent, settings, openai_llm):
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.999
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.5
    openai_llm.script('{"memory_type": "error"}')  # classify first
    first = memory_upload(**ERROR, agent=agent)
    openai_llm.script(
        '{"memory_type": "error"}',
        'Sure! ```json\n{"same_subject": true}\n```',
    )
    second = memory_upload(**ERROR_REWORDED, agent=agent)
    assert second.merged and second.match_reason == "llm"
    assert second.memory.pk == first.memory.pk
    assert openai_llm.asked_kinds() == ["classify", "classify", "same_subject"]
    asked = openai_llm.asked()[-1][1]
    assert ERROR["content"] in asked and ERROR_REWORDED["content"] in asked


def test_soft_band_llm_says_no_creates_a_new_memory(agent, settings, openai_llm):
    settings.ULTRON_DUPLICATE_THRESHOLD = 0.999
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.5
    openai_llm.script('{"memory_type": "error"}')
    memory_upload(**ERROR, agent=agent)
    openai_llm.script('{"memory_type": "error"}', '{"same_subject": false}')
    second = memory_upload(**ERROR_REWORDED, agent=agent)
    assert not second.merged
    assert openai_llm.asked_kinds() == ["classify", "classify", "same_subject"]
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2


# Same error and fix, but a different version: close in embedding space, different advice.
PIN_OLD = {"content": "pandas import fails with a numpy ABI error; pin numpy to 1.26.4 in requirements",
           "context": "", "resolution": ""}
PIN_NEW = {"content": "pandas import fails with a numpy ABI error; pin numpy to 2.0.1 in requirements",
           "context": "", "resolution": ""}


def _similarity(a: dict, b: dict) -> float:
    from memories.text import embedding_text

    first, second = services.embed_texts([embedding_text(**a), embedding_text(**b)])
    return float(sum(x * y for x, y in zip(first, second, strict=True)))


def test_conflicting_details_above_the_threshold_are_not_merged_without_llm(agent):
    memory_upload(**PIN_OLD, agent=agent)
    assert _similarity(PIN_OLD, PIN_NEW) >= model_thresholds().duplicate  # similarity alone would merge
    second = memory_upload(**PIN_NEW, agent=agent)
    assert not second.merged
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2


def test_conflicting_details_above_the_threshold_go_to_the_llm(agent, openai_llm):
    openai_llm.script('{"memory_type": "error"}')
    first = memory_upload(**PIN_OLD, agent=agent)
    openai_llm.script('{"memory_type": "error"}', '{"same_subject": true}')
    second = memory_upload(**PIN_NEW, agent=agent)
    assert second.merged and second.match_reason == "llm" and second.memory.pk == first.memory.pk
    asked = openai_llm.chat_requests()[-1]
    assert "2.0.1" in json.dumps(asked) and "1.26.4" in json.dumps(asked)


def test_llm_merge_rewrites_the_memory_reembeds_and_clears_pending(agent, openai_llm, django_capture_on_commit_callbacks):
    openai_llm.script('{"memory_type": "error"}')
    first = memory_upload(**ERROR, agent=agent)
    before = Memory.objects.get(pk=first.memory.pk)
    merged_text = {
        "content": "Django fails with psycopg OperationalError (connection refused) when it starts before PostgreSQL is ready",
        "context": "docker compose starting web and db together",
        "resolution": "healthcheck on db plus depends_on: condition: service_healthy",
        "tags": ["docker", "postgres"],
    }
    openai_llm.script(
        '{"memory_type": "error"}',        # classify the duplicate
        json.dumps(merged_text),            # merge
        '{"summary_l0": "Start Django after PostgreSQL is healthy.", "overview_l1": "Use a healthcheck."}',
    )
    with django_capture_on_commit_callbacks(execute=True):
        second = memory_upload(**ERROR_REWORDED, agent=agent)
    assert second.merged
    after = Memory.objects.get(pk=first.memory.pk)
    assert after.content == merged_text["content"]
    assert after.tags == ["docker", "postgres"]
    assert not after.merge_pending
    assert after.summary_l0 == "Start Django after PostgreSQL is healthy."
    assert after.content_hash != before.content_hash
    assert list(after.embedding) != list(before.embedding)
    assert after.contributions.get().merged_at is not None
    assert openai_llm.asked_kinds() == ["classify", "classify", "merge", "summarize"]
    merge_prompt = openai_llm.asked()[2][1]
    assert ERROR["content"] in merge_prompt and ERROR_REWORDED["content"] in merge_prompt
    assert merged_text["content"] in openai_llm.asked()[3][1]  # the summary is of the merged text


def test_failed_llm_merge_leaves_memory_pending_and_retry_completes_it(agent, openai_llm, django_capture_on_commit_callbacks):
    openai_llm.script('{"memory_type": "error"}')
    first = memory_upload(**ERROR, agent=agent)
    # classify ok, then three garbage merge replies (all attempts fail)
    openai_llm.script('{"memory_type": "error"}', "I cannot help", (500, {"error": "boom"}), "{broken json")
    with django_capture_on_commit_callbacks(execute=True):
        memory_upload(**ERROR_REWORDED, agent=agent)
    memory = Memory.objects.get(pk=first.memory.pk)
    assert memory.merge_pending and memory.content == ERROR["content"]
    assert openai_llm.asked_kinds() == ["classify", "classify", "merge", "merge", "merge"]
    openai_llm.script(
        json.dumps({"content": "Merged: start Django only after PostgreSQL accepts connections",
                    "context": "", "resolution": "db healthcheck", "tags": []}),
        '{"summary_l0": "s", "overview_l1": "o"}',
    )
    assert services.memories_merge_retry() == {"attempted": 1, "merged": 1, "pending": 0}
    memory.refresh_from_db()
    assert not memory.merge_pending and memory.content.startswith("Merged:")
    # the retry asked the model again, with the pending contribution, then summarised the result
    assert openai_llm.asked_kinds()[5:] == ["merge", "summarize"]
    assert ERROR_REWORDED["content"] in openai_llm.asked()[5][1]


def test_merge_that_only_changes_tags_does_not_reembed(agent, openai_llm):
    openai_llm.script('{"memory_type": "error"}')
    first = memory_upload(**ERROR, agent=agent)
    before = Memory.objects.get(pk=first.memory.pk)
    openai_llm.script('{"memory_type": "error"}')
    memory_upload(**ERROR_REWORDED, agent=agent)
    openai_llm.script(json.dumps({**ERROR, "tags": ["compose"]}))  # same body, a new tag
    assert services.memory_merge_contributions(memory_id=first.memory.pk)
    after = Memory.objects.get(pk=first.memory.pk)
    assert after.tags == ["compose"]
    assert after.content_hash == before.content_hash
    assert list(after.embedding) == list(before.embedding)
    assert openai_llm.asked_kinds() == ["classify", "classify", "merge"]  # no summary call


def test_invalid_input_raises_with_the_field(agent):
    with pytest.raises(MemoryInputError) as info:
        memory_upload(content="fine", resolution=123, agent=agent)
    assert info.value.field == "resolution"


@pytest.mark.django_db(transaction=True)
def test_parallel_uploads_of_the_same_memory_create_one_row(agent):
    memory_upload(content="warm-up so the model is loaded", agent=agent)
    errors: list[BaseException] = []
    results = []
    barrier = threading.Barrier(6)

    def worker() -> None:
        try:
            barrier.wait()
            results.append(as_hub(memory_upload)(**ERROR, agent=agent))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert Memory.objects.filter(content=ERROR["content"]).count() == 1
    assert sum(1 for r in results if not r.merged) == 1
    memory = Memory.objects.get(content=ERROR["content"])
    assert memory.hit_count == 1  # one agent's repeats: no use counted (flow.md#hits)
    assert memory.contributions.count() == 5


# --- hits, tiers, archival -----------------------------------------------------------------


def _make(n: int, agent, **overrides) -> list[Memory]:
    vector = [1.0] + [0.0] * 383
    now = timezone.now()
    rows = [
        Memory(
            content=f"memory {i}", memory_type="pattern", embedding=vector, content_hash=f"h{i}",
            hit_count=overrides.get("hits", lambda i: i + 1)(i), agent=agent,
            last_hit_at=now - timedelta(minutes=i), readers=overrides.get("readers", 2),
        )
        for i in range(n)
    ]
    return Memory.objects.bulk_create(rows)


@pytest.mark.parametrize(
    ("n", "hot", "warm", "cold"),
    [(1, 1, 0, 0), (2, 1, 0, 1), (10, 1, 4, 5), (11, 2, 4, 5), (20, 2, 8, 10), (30, 3, 12, 15), (3, 1, 1, 1)],
)
def test_rebalance_percentile_edges(agent, n, hot, warm, cold):
    _make(n, agent)
    result = tiers_rebalance()
    assert (result.hot, result.warm, result.cold) == (hot, warm, cold)
    ordered = list(Memory.objects.order_by("-hit_count").values_list("tier", flat=True))
    assert ordered == [Tier.HOT] * hot + [Tier.WARM] * warm + [Tier.COLD] * cold


def test_rebalance_gives_memories_of_equal_use_one_tier(agent):
    """No tie is broken by upload or hit time: ten memories of five hits each share a tier."""
    _make(10, agent, hits=lambda i: 5)
    tiers_rebalance()
    assert len(set(Memory.objects.values_list("tier", flat=True))) == 1


def test_on_a_fresh_hub_nothing_is_hot_and_nothing_cold_by_upload_order(agent):
    """Day one: every memory has its writer's one hit. None is HOT (no agent used it), and the
    last uploads do not push the first ones COLD."""
    for i in range(8):
        memory_upload(agent=agent, content=f"Rule {i}: never log full card numbers; mask the PAN to the last {i + 1} "
                                           f"digits in service {i}.")
    tiers_rebalance()
    assert set(Memory.objects.values_list("tier", flat=True)) == {Tier.WARM}


def test_rebalance_archives_stale_cold_memories_only(agent, settings):
    rows = _make(10, agent)
    old = timezone.now() - timedelta(days=31)
    coldest = min(rows, key=lambda m: m.hit_count)
    hottest = max(rows, key=lambda m: m.hit_count)
    Memory.objects.filter(pk__in=[coldest.pk, hottest.pk]).update(last_hit_at=old)
    result = tiers_rebalance()
    assert result.archived == 1
    assert Memory.objects.get(pk=coldest.pk).status == Status.ARCHIVED
    assert Memory.objects.get(pk=coldest.pk).archived_at is not None
    assert Memory.objects.get(pk=hottest.pk).status == Status.ACTIVE  # stale but HOT
    settings.ULTRON_ARCHIVE_AFTER_DAYS = 0
    Memory.objects.filter(status=Status.ACTIVE).update(last_hit_at=old)
    assert tiers_rebalance().archived == 0


def test_rebalance_only_writes_rows_whose_tier_changes(agent):
    _make(10, agent)
    assert tiers_rebalance().changed == 6  # 1 hot + 5 cold moved from the default warm
    assert tiers_rebalance().changed == 0


def test_uses_only_touch_active_memories_once_a_day_per_reader(agent):
    a, b = _make(2, agent)
    reader = agent_create(name="reader-rex")
    Memory.objects.filter(pk=b.pk).update(status=Status.ARCHIVED)
    assert services.memory_uses_record(ids=[a.pk, b.pk], reader_id=reader.pk) == {a.pk}
    assert services.memory_uses_record(ids=[a.pk], reader_id=reader.pk) == set()  # the same reader, the same day
    assert services.memory_uses_record(ids=[a.pk], reader_id=agent.pk) == set()  # its writer
    memory = Memory.objects.get(pk=a.pk)
    assert (memory.hit_count, memory.readers) == (a.hit_count + 1, a.readers + 1)


def test_hot_needs_distinct_readers(agent):
    rows = _make(10, agent, readers=0)
    Memory.objects.filter(pk=rows[3].pk).update(readers=2)
    tiers_rebalance()
    assert list(Memory.objects.filter(tier=Tier.HOT).values_list("pk", flat=True)) == [rows[3].pk]


def test_hits_and_tier_changes_update_rows_in_place(agent):
    """With nothing indexed on tier/hit_count/last_hit_at and fillfactor 50, these updates are
    HOT: the rows never go back into the HNSW indexes."""
    rows = _make(10, agent)
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'memories_memory'")
        assert "fillfactor=50" in cursor.fetchone()[0]
        cursor.execute("SELECT pg_stat_get_xact_tuples_hot_updated('memories_memory'::regclass)")
        before = cursor.fetchone()[0]
        changed = tiers_rebalance().changed
        cursor.execute("SELECT pg_stat_get_xact_tuples_hot_updated('memories_memory'::regclass)")
        assert changed > 0 and cursor.fetchone()[0] - before == changed
    # (Hit updates are HOT as well once earlier versions are pruned, which needs separate
    # transactions; bench/rebalance.py measures the effect with every index in place.)
    assert len(rows) == 10
