from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from agents.selectors import space_or_shared
from memories import selectors
from memories.models import LexemeCount, Memory, Status, Tier
from memories.selectors import (
    keywords,
    memory_duplicate_neighbours,
    memory_search,
    query_embedding_text,
    selective_terms,
)
from memories.selectors import search as search_module
from memories.selectors.duplicates import _neighbours_sql
from memories.vectors import vector_literal

pytestmark = pytest.mark.django_db

DIMS = 384


def unit(seed: int, base: np.ndarray | None = None, noise: float = 0.0) -> list[float]:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=DIMS) if base is None else base + noise * rng.normal(size=DIMS)
    return list(v / np.linalg.norm(v))


def make(vector, *, tier=Tier.WARM, days_since_hit=0.0, memory_type="pattern", tags=(), status=Status.ACTIVE, **kw):
    return Memory.objects.create(
        content=kw.pop("content", "x"), memory_type=memory_type, tier=tier, tags=list(tags), status=status,
        embedding=vector, content_hash=kw.pop("content_hash", str(np.random.rand())),
        last_hit_at=timezone.now() - timedelta(days=days_since_hit), **kw,
    )


def test_score_follows_the_spec_formula():
    query = np.array(unit(1))
    rows = [
        make(unit(2, query, 0.02), tier=Tier.HOT, days_since_hit=0),
        make(unit(3, query, 0.02), tier=Tier.WARM, days_since_hit=10),
        make(unit(4, query, 0.02), tier=Tier.COLD, days_since_hit=100),
    ]
    hits = {h.id: h for h in memory_search(vector=list(query), limit=10)}
    boosts = {Tier.HOT: 1.2, Tier.WARM: 1.0, Tier.COLD: 0.8}
    for row, days in zip(rows, (0, 10, 100), strict=True):
        similarity = float(np.dot(query, np.array(row.embedding)))
        expected = similarity * boosts[row.tier] * (1 - 0.1 + 0.1 * math.exp(-0.05 * days))
        assert hits[row.pk].similarity == pytest.approx(similarity, abs=1e-5)
        assert hits[row.pk].score == pytest.approx(expected, abs=1e-4)
    ordered = [h.id for h in memory_search(vector=list(query), limit=10)]
    assert ordered == [r.pk for r in rows]


def test_hot_tier_can_outrank_a_slightly_more_similar_cold_memory():
    query = np.array(unit(10))
    cold = make(unit(11, query, 0.01), tier=Tier.COLD)
    hot = make(unit(12, query, 0.03), tier=Tier.HOT)
    hits = memory_search(vector=list(query), limit=2)
    assert hits[0].similarity < hits[1].similarity
    assert [h.id for h in hits] == [hot.pk, cold.pk]


def test_archived_memories_never_come_back():
    query = unit(20)
    make(query, status=Status.ARCHIVED)
    assert memory_search(vector=query, limit=10) == []


def test_filters_by_type_tier_tags_and_min_score():
    query = np.array(unit(30))
    a = make(unit(31, query, 0.05), memory_type="error", tier=Tier.HOT, tags=["docker", "ci"])
    b = make(unit(32, query, 0.05), memory_type="pattern", tier=Tier.COLD, tags=["docker"])
    make(unit(33), memory_type="error", tier=Tier.WARM)
    q = list(query)
    assert [h.id for h in memory_search(vector=q, memory_type="error", min_score=0.5)] == [a.pk]
    assert [h.id for h in memory_search(vector=q, tier=Tier.COLD)] == [b.pk]
    assert {h.id for h in memory_search(vector=q, tags=["docker"])} == {a.pk, b.pk}
    assert [h.id for h in memory_search(vector=q, tags=["docker", "ci"])] == [a.pk]
    assert memory_search(vector=q, tags=["nope"]) == []


def _bulk_random(n: int, *, memory_type: str = "pattern", tag: str | None = None, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIMS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = timezone.now()
    Memory.objects.bulk_create(
        [
            Memory(content=f"bulk {seed}-{i}", memory_type=memory_type, embedding=list(v),
                   content_hash=f"bulk-{seed}-{i}", tags=[tag] if tag else [], last_hit_at=now)
            for i, v in enumerate(vectors)
        ],
        batch_size=1000,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")


def _search_sql(**kwargs) -> tuple[str, dict]:
    """Run a search and return the SQL and parameters of its main query."""
    captured: list = []

    def capture(execute, sql, params, many, context):
        if "semantic AS (" in sql:
            captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        memory_search(**kwargs)
    return captured[0]


def _explain(sql: str, params, *settings: str) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in settings:
            cursor.execute(setting)
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.slow
def test_search_and_dedup_use_the_hnsw_indexes_at_a_realistic_row_count(settings):
    # A few thousand rows: the size from which the planner prefers the indexes (bench/search.py
    # checks the same plans at 2,000); more only makes the inserts slower.
    _bulk_random(2500, memory_type="pattern")
    _bulk_random(1200, memory_type="error", seed=1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
    query = unit(99)
    # Search: the CTE's ORDER BY ... LIMIT runs on the one HNSW index over active memories.
    assert "memory_emb_active_hnsw" in _explain(*_search_sql(vector=query, limit=10))
    # A type filter can run on it too (applied during the scan); at this size, a third of the rows
    # of one type, the planner fairly prefers reading them exactly, so sequential scans are off here.
    sql, params = _search_sql(vector=query, limit=10, memory_type="error")
    plan = _explain(sql, params, "SET LOCAL enable_seqscan = off")
    assert "memory_emb_active_hnsw" in plan, plan
    # It is the table's only vector index: a memory costs one graph entry.
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%USING hnsw%%'",
                       [Memory._meta.db_table])
        assert [row[0] for row in cursor.fetchall()] == ["memory_emb_active_hnsw"]
    # Dedup: the nearest active neighbours, through the same index.
    plan = _explain(_neighbours_sql(False), {"vector": vector_literal(query), "hash": "none", "exclude": None,
                                             "space": space_or_shared(None)})
    assert "memory_emb_active_hnsw" in plan, plan


@pytest.mark.slow
def test_filtered_search_still_finds_rare_tagged_rows_among_many():
    _bulk_random(5000, memory_type="pattern")
    target = np.array(unit(500))
    rare = [make(unit(501 + i, target, 0.9), tags=["rare"]) for i in range(3)]
    hits = memory_search(vector=list(target), tags=["rare"], limit=10)
    assert {h.id for h in hits} == {r.pk for r in rare}
    # A rare type far from the query: the scan goes on through the graph past thousands of
    # other rows until it has the candidates the filter lets through (min_score -1: unrelated
    # random vectors score around 0, half of them below).
    far = [make(unit(600 + i), memory_type="life") for i in range(12)]
    # The graph, not an exact read of the dozen rows the planner would rightly prefer here (the
    # test's transaction keeps the setting).
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off")
    sql, params = _search_sql(vector=list(target), memory_type="life", limit=10, min_score=-1.0)
    assert "memory_emb_active_hnsw" in _explain(sql, params)
    hits = memory_search(vector=list(target), memory_type="life", limit=10, min_score=-1.0)
    assert len(hits) == 10 and {h.id for h in hits} <= {m.pk for m in far}


def memory_find_duplicate(*, body_hash, vector, verdicts):
    from memories.judgements.duplicate import duplicate_decide

    return duplicate_decide(body="", neighbours=memory_duplicate_neighbours(body_hash=body_hash, vector=vector,
                                                                                space_id=space_or_shared(None)),
                            verdicts=verdicts)


def test_duplicate_finder_looks_across_types_and_respects_the_threshold(settings):
    base = np.array(unit(40))
    near = make(unit(41, base, 0.01), memory_type="error")
    make(unit(43, base, 0.2), memory_type="pattern")  # farther, other type
    [match] = memory_find_duplicate(body_hash="none", vector=list(base), verdicts={})
    assert match.memory.pk == near.pk and match.reason == "similar"
    # The type is a judgement two reports of one lesson may not share: it does not hide a duplicate.
    other_base = np.array(unit(45))
    security = make(unit(46, other_base, 0.01), memory_type="security")
    [match] = memory_find_duplicate(body_hash="none", vector=list(other_base), verdicts={})
    assert match.memory.pk == security.pk
    far = unit(42)
    assert memory_find_duplicate(body_hash="none", vector=far, verdicts={}) == []


def test_keyword_and_hybrid_modes_find_exact_identifiers():
    query = np.array(unit(60))
    semantic_twin = make(unit(61, query, 0.01), content="connection pooling advice for busy web servers")
    identifier = make(unit(62), content="pip fails with error E0602 when the wheel cache is corrupted")
    text = "what is error E0602"
    keyword = memory_search(vector=list(query), mode="keyword", text=text)
    assert [h.id for h in keyword] == [identifier.pk]
    hybrid = memory_search(vector=list(query), mode="hybrid", text=text, limit=5)
    assert {h.id for h in hybrid} == {identifier.pk, semantic_twin.pk}
    assert all(-1.0 <= h.similarity <= 1.0 for h in hybrid)
    assert memory_search(vector=list(query), mode="keyword", text="???") == []
    with pytest.raises(ValueError):
        memory_search(vector=list(query), mode="fuzzy")


def test_hybrid_score_is_one_for_a_memory_first_in_both_lists():
    query = np.array(unit(70))
    top = make(unit(71, query, 0.01), content="kubernetes ingress timeout fix", tier=Tier.WARM, days_since_hit=0)
    hits = memory_search(vector=list(query), mode="hybrid", text="kubernetes ingress timeout")
    assert hits[0].id == top.pk and hits[0].score == pytest.approx(1.0, abs=1e-3)


def test_a_hot_memory_does_not_swamp_a_clearly_better_hybrid_match():
    query = np.array(unit(80))
    best = make(unit(81, query, 0.005), content="npm EACCES when installing packages globally", tier=Tier.WARM)
    make(unit(82, query, 0.9), content="pip install fails inside docker", tier=Tier.HOT)
    hits = memory_search(vector=list(query), mode="hybrid", text="EACCES npm global install")
    assert hits[0].id == best.pk


def test_keyword_terms_are_the_databases_lexemes_without_stop_words():
    assert selectors.query_terms("What have you got for the Docker deploys, again?").terms == ["got", "docker", "deploy"]
    assert selectors.query_terms("   ").terms == []
    assert selectors.query_terms("it's a 'quoted' back\\slash").terms == ["quot", "back", "slash"]


def test_a_query_stop_word_does_not_turn_a_pair_into_a_single_word_match():
    query = np.array(unit(90))
    both = make(unit(91), content="docker compose keeps failing on the healthcheck")
    make(unit(92), content="a docker question for later")  # shares one word only
    hits = memory_search(vector=list(query), mode="keyword", text="docker compose failing again")
    assert [h.id for h in hits] == [both.pk]


def test_common_terms_rank_but_do_not_select(settings):
    settings.ULTRON_SEARCH_KEYWORD_COMMON_ROWS = 100
    counts = {"error": 5000, "instal": 3000, "docker": 50}

    def query(*terms):
        return keywords.QueryTerms(list(terms), counts, 10_000)

    assert selective_terms(query("error", "docker", "compos")) == ["docker", "compos"]
    # fewer than two rare terms: the two rarest select
    assert selective_terms(query("error", "instal", "docker")) == ["instal", "docker"]
    assert selective_terms(query("error", "instal")) == ["error", "instal"]


def test_keyword_counts_are_exact_right_after_a_bulk_load_without_analyze(settings):
    """A bulk insert (one statement, as an import or a restore makes them) is counted by the
    database's own triggers: nothing waits for ANALYZE, and the planner's statistics are never
    read."""
    Memory.objects.bulk_create([
        Memory(content=f"kubernetes ingress note {i}" if i % 2 else f"plain note {i}", memory_type="pattern",
               embedding=unit(200 + i), content_hash=f"bulk{i}")
        for i in range(60)
    ])
    terms = selectors.query_terms("Kubernetes notes on healthchecks")
    assert terms.terms == ["kubernet", "note", "healthcheck"]
    assert terms.counts == {"kubernet": 30, "note": 60, "healthcheck": 0}
    assert terms.rows == 60
    settings.ULTRON_SEARCH_KEYWORD_COMMON_ROWS = 40
    assert selective_terms(terms) == ["kubernet", "healthcheck"]  # "note" is in every memory
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'memories_memory'")
        assert cursor.fetchone()[0] == 0  # never analysed: the counts above did not come from there


def test_keyword_counts_follow_archive_restore_edit_and_delete():
    note = make(unit(370), content="kubernetes ingress note")
    make(unit(371), content="kubernetes pod note")
    counts = lambda: selectors.query_terms("kubernetes ingress pod note")  # noqa: E731
    assert counts().counts == {"kubernet": 2, "ingress": 1, "pod": 1, "note": 2} and counts().rows == 2
    Memory.objects.filter(pk=note.pk).update(status=Status.ARCHIVED)
    assert counts().counts == {"kubernet": 1, "ingress": 0, "pod": 1, "note": 1} and counts().rows == 1
    Memory.objects.filter(pk=note.pk).update(status=Status.ACTIVE, content="helm ingress")
    assert counts().counts == {"kubernet": 1, "ingress": 1, "pod": 1, "note": 1} and counts().rows == 2
    Memory.objects.filter(pk=note.pk).update(hit_count=5, tier=Tier.HOT)  # counts nothing, calls nothing
    assert counts().counts["ingress"] == 1
    Memory.objects.filter(pk=note.pk).delete()
    assert counts().counts == {"kubernet": 1, "ingress": 0, "pod": 1, "note": 1} and counts().rows == 1


def test_keyword_count_pieces_are_folded_by_a_search_that_reads_them():
    for i in range(keywords.COMPACT_PIECES + 3):
        make(unit(500 + i), content=f"flaky healthcheck {i}")
    pieces = lambda: LexemeCount.objects.filter(lexeme="healthcheck").count()  # noqa: E731
    assert pieces() == keywords.COMPACT_PIECES + 3
    assert selectors.query_terms("healthcheck").counts == {"healthcheck": keywords.COMPACT_PIECES + 3}
    assert pieces() == 1 and LexemeCount.objects.filter(lexeme="").count() == 1
    assert selectors.query_terms("healthcheck").counts == {"healthcheck": keywords.COMPACT_PIECES + 3}
    assert selectors.lexeme_counts_compact() > 0  # the pipeline step folds every other word
    assert not LexemeCount.objects.values("lexeme").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert selectors.query_terms("flaky healthcheck zzz").counts == {
        "flaki": keywords.COMPACT_PIECES + 3, "healthcheck": keywords.COMPACT_PIECES + 3, "zzz": 0}


def test_a_rare_query_word_weighs_more_than_a_common_one():
    for i in range(40):
        make(unit(300 + i), content=f"deploy log entry {i}")
    make(unit(350), content="flaky healthcheck on the staging box")
    terms = keywords.QueryTerms(["deploy", "healthcheck", "zzunseen"],
                                selectors.query_terms("deploy healthcheck zzunseen").counts, 41)
    assert selectors.query_terms("deploy").rows == 41
    deploy, healthcheck, unseen = keywords.term_weights(terms)
    assert deploy < healthcheck < unseen
    assert deploy > 0


def test_every_term_weighs_the_same_while_no_memory_is_stored():
    assert keywords.term_weights(selectors.query_terms("docker compose")) == [1.0, 1.0]


def test_keyword_matches_rank_by_the_weight_of_the_words_they_share(monkeypatch):
    query = np.array(unit(400))
    # The closer one shares the common word: similarity adds less than a word's weight.
    common = make(unit(401, query, 0.01), content="docker build failing again")
    rare = make(unit(402), content="healthcheck failing again")
    weights = {"docker": 0.5, "healthcheck": 4.0, "fail": 0.5}
    monkeypatch.setattr(search_module, "term_weights", lambda query: [weights.get(t, 1.0) for t in query.terms])
    hits = memory_search(vector=list(query), mode="keyword", text="docker healthcheck failing")
    assert [h.id for h in hits] == [rare.pk, common.pk]


def test_among_memories_sharing_the_same_words_the_more_similar_ranks_first():
    query = np.array(unit(410))
    near = make(unit(412, query, 0.05), content="docker compose fails on the healthcheck step")
    far = make(unit(411), content="docker compose fails on the healthcheck")  # hit more recently
    hits = memory_search(vector=list(query), mode="keyword", text="docker compose healthcheck")
    assert [h.id for h in hits] == [near.pk, far.pk]


@pytest.mark.parametrize(
    ("text", "embedded"),
    [
        ("When did <PERSON> go camping with <PERSON>?", "When did go camping with ?"),
        ("files under /home/<USER>/project vanish", "files under /home/ /project vanish"),
        ("rotate <GITHUB_TOKEN> after the leak", "rotate <GITHUB_TOKEN> after the leak"),
        ("<PERSON>", "<PERSON>"),
    ],
)
def test_the_embedded_query_leaves_out_name_placeholders_only(text, embedded):
    assert query_embedding_text(text) == embedded


def test_the_tier_rebalance_counts_what_it_archives_once_for_the_statement(settings):
    """The rebalance archives in bulk and takes the archived memories out of the keyword counts
    itself (the row trigger stands aside for it); the counts stay exact."""
    from memories.services import tiers_rebalance

    settings.ULTRON_ARCHIVE_AFTER_DAYS = 30
    for i in range(8):
        make(unit(600 + i), content=f"kubernetes fresh note {i}", hit_count=10 + i)
    stale = [make(unit(620 + i), content="kubernetes stale ingress", days_since_hit=100, hit_count=1)
             for i in range(2)]
    assert selectors.query_terms("kubernetes ingress").counts == {"kubernet": 10, "ingress": 2}
    result = tiers_rebalance()
    assert result.archived == 2
    assert not Memory.objects.filter(pk__in=[m.pk for m in stale], status=Status.ACTIVE).exists()
    terms = selectors.query_terms("kubernetes ingress")
    assert terms.counts == {"kubernet": 8, "ingress": 0} and terms.rows == 8
    # a later archive or restore in the same session is counted by the trigger again
    Memory.objects.filter(pk=stale[0].pk).update(status=Status.ACTIVE)
    assert selectors.query_terms("ingress").counts == {"ingress": 1}
