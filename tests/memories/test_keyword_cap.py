"""The keyword side when a query's words match more memories than it ranks
(ULTRON_SEARCH_KEYWORD_CAP): the memories holding more of the query's rare words are read first."""

from __future__ import annotations

import numpy as np
import pytest

from memories.models import Memory
from memories.selectors import keywords, memory_search

pytestmark = pytest.mark.django_db


def unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=384)
    return list(v / np.linalg.norm(v))


def bulk(texts: list[str], seed: int) -> list[Memory]:
    return Memory.objects.bulk_create([
        Memory(content=text, memory_type="pattern", embedding=unit(seed + i), content_hash=f"cap-{seed}-{i}")
        for i, text in enumerate(texts)
    ])


@pytest.fixture(params=["owner", "hubs-role"])
def reader(request):
    """The keyword side read as the hub's upkeep does (the tables' owner, straight from the GIN
    index) and as a served request does (the spaces' policies, through memories_keyword_matches)."""
    from agents.selectors import space_or_shared
    from core.spaces import space_scope

    if request.param == "owner":
        yield
        return
    shared = space_or_shared(None)
    with space_scope(read=[shared], write=[shared]):
        yield


def query(counts: dict[str, int], rows: int = 100_000) -> keywords.QueryTerms:
    return keywords.QueryTerms(list(counts), counts, rows)


def test_a_query_under_the_cap_is_not_tightened():
    assert keywords.tight_query(query({"talk": 400, "later": 500}), ["talk", "later"], 1000) == ""
    assert keywords.tight_query(query({"talk": 4000}), ["talk"], 1000) == ""  # one word: nothing to tighten
    # three or more: any two together, so the bound is the rarer of each pair
    three = query({"a": 900, "b": 100, "c": 50})
    assert keywords.estimated_matches(three, ["a", "b", "c"]) == 100 + 50 + 50
    assert keywords.tight_query(three, ["a", "b", "c"], 1000) == ""


def test_over_the_cap_a_pair_must_hold_both_and_more_words_any_three_of_the_rarest():
    assert keywords.tight_query(query({"talk": 900, "later": 800}), ["talk", "later"], 1000) == "'later' & 'talk'"
    counts = {f"w{i}": 1000 + i for i in range(8)}
    tight = keywords.tight_query(query(counts), list(counts), 1000)
    clauses = tight.split(" | ")
    assert len(clauses) == 20  # any three of the rarest six
    assert "'w6'" not in tight and "'w7'" not in tight
    assert clauses[0] == "('w0' & 'w1' & 'w2')"


def test_over_the_cap_the_memories_with_both_words_are_ranked(settings, reader):
    settings.ULTRON_SEARCH_KEYWORD_CAP = 50
    one_word = bulk([f"kubernetes note {i}" for i in range(60)] + [f"ingress note {i}" for i in range(60)], 0)
    both = bulk([f"kubernetes ingress note {i}" for i in range(45)], 1000)
    # 45 memories hold both words: more than the 40 candidates of a top 10, so only they are read
    hits = memory_search(vector=unit(5), mode="keyword", text="kubernetes ingress", limit=10)
    assert len(hits) == 10
    assert {h.id for h in hits} <= {m.pk for m in both}
    assert not {h.id for h in hits} & {m.pk for m in one_word}


def test_too_few_tight_matches_fall_back_to_the_plain_query(settings, reader):
    settings.ULTRON_SEARCH_KEYWORD_CAP = 50
    one_word = bulk([f"kubernetes note {i}" for i in range(60)] + [f"ingress note {i}" for i in range(60)], 0)
    both = bulk([f"kubernetes ingress note {i}" for i in range(3)], 1000)
    bulk([f"unrelated filler {i}" for i in range(300)], 2000)  # so that the two words weigh more than a similarity
    hits = memory_search(vector=unit(5), mode="keyword", text="kubernetes ingress", limit=20)
    ids = [h.id for h in hits]
    assert len(ids) == 20
    # the three holding both words rank first; the rest of the list holds one of them
    assert set(ids[:3]) == {m.pk for m in both}
    assert set(ids[3:]) <= {m.pk for m in one_word}
    assert len(set(ids)) == len(ids)


def test_the_gin_indexes_keep_no_pending_list():
    """New words go straight into the indexes: with a pending list (PostgreSQL's default) every
    search would read the words still waiting there, thousands of uploads' worth."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reloptions FROM pg_class WHERE relname IN ('memory_fts_space_active', 'memory_tags_gin')")
        options = dict(cursor.fetchall())
    assert options == {"memory_fts_space_active": ["fastupdate=off"], "memory_tags_gin": ["fastupdate=off"]}
