"""Search: active memories for a query, ranked in SQL (docs/flow.md#search)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction

from agents.models import Agent
from core.replicas import read_alias, read_connection
from core.spaces import scope_current, space_scope
from memories.models import Memory, MemoryType, Tier
from memories.selectors.keywords import (
    QueryTerms,
    keyword_query,
    lexeme_quote,
    query_terms,
    selective_terms,
    term_weights,
    tight_query,
)
from memories.vectors import vector_literal


@dataclass
class SearchHit:
    id: UUID
    memory_type: str
    tier: str
    tags: list[str]
    hit_count: int
    summary_l0: str
    overview_l1: str
    context: str
    similarity: float
    score: float
    last_hit_at: datetime | None
    created_at: datetime
    space_id: int = 0
    # Knowledge that changed (docs/flow.md#supersession): the memories this one replaced; for a
    # superseded memory returned as history (include_superseded), the one that replaced it.
    supersedes: list[UUID] = field(default_factory=list)
    superseded_by: UUID | None = None
    valid_until: datetime | None = None
    # Provenance (docs/flow.md#screening): who wrote it, whether a curator vouched for it, and
    # what the poisoning screen noted when it let the memory through.
    writer: str | None = None
    agent_id: int | None = None
    verified: bool = False
    flags: list[dict] = field(default_factory=list)
    keyword: bool = False  # the keyword side found it (it shares the query's selective words)


SEARCH_MODES = ("semantic", "keyword", "hybrid")


def _flags(value: Any) -> list[dict]:
    """A jsonb column read by a raw query (psycopg hands it back as text here)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value or [])
RRF_K = 60

# Redaction's placeholders for who someone is (a person's name, a user name).
_IDENTITY_TAGS = re.compile(r"<(?:PERSON|USER)>")


def query_embedding_text(text: str) -> str:
    """The text of a (redacted) query that is embedded for the vector side: without the
    placeholders that stand for a person. A name says who, never what; left in, the placeholder
    pulls the query towards memories full of names (greetings, people addressed by name).
    The keyword side never sees them: PostgreSQL's parser drops them as tags."""
    stripped = " ".join(_IDENTITY_TAGS.sub(" ", text).split())
    # A query that is nothing but a name keeps its placeholder (flow.md#search): an empty text finds nothing.
    return stripped if any(ch.isalnum() for ch in stripped) else text


# The tier and hotness factors of the score (docs/flow.md#search), as SQL over a row's tier and last hit.
_FACTORS = """
    CASE {alias}tier WHEN 'hot' THEN %(boost_hot)s WHEN 'warm' THEN %(boost_warm)s ELSE %(boost_cold)s END
    * (1 - %(weight)s + %(weight)s * exp(
          -%(decay)s * GREATEST(
              EXTRACT(EPOCH FROM (now() - COALESCE({alias}last_hit_at, {alias}created_at))), 0
          ) / 86400.0))"""
# Candidate lists, each ranked by its own relevance times the tier and hotness factors, so the
# fused list keeps the tier and hotness preferences without letting a boost swamp the fusion: the vector
# side through the HNSW index, the keyword side through the GIN index on the tsvector.
_SEMANTIC_CTE = """
semantic AS (
    SELECT id, row_number() OVER (ORDER BY (1 - distance) * factor DESC, id) AS rank FROM (
        SELECT id, embedding <=> %(query)s::vector AS distance, {factors} AS factor
        FROM {table} WHERE {where}
        ORDER BY embedding <=> %(query)s::vector
        LIMIT %(candidates)s
    ) nearest
)"""
_KEYWORD_CTE = """
keyword AS (
    SELECT id, row_number() OVER (ORDER BY relevance * factor DESC, id) AS rank FROM (
        SELECT id, {relevance} AS relevance, {factors} AS factor
        FROM ({matches}) capped
        ORDER BY relevance DESC, id
        LIMIT %(candidates)s
    ) matched
)"""
# The rows the keyword side ranks: those matching the tsquery ``{query}`` and not ``{exclude}`` (a
# tsquery, or NULL), at most ``keyword_cap`` of them, a bound on the work whatever the query.
# As the tables' owner (the hub's upkeep), read straight from the table through the GIN index
# memory_fts_space_active, on the words and the space of each memory (migration memories.0015).
_KEYWORD_ROWS = """
    SELECT id, search_vector, embedding, tier, last_hit_at, created_at FROM {table}
    WHERE {where} AND (search_vector || memories_space_lexeme(space_id)) @@ {match}{exclusion}
    LIMIT %(keyword_cap)s"""
# Under the spaces' policies the GIN index cannot pick them (``@@`` is not LEAKPROOF, so it is
# checked after the policy's condition, on every readable row): the function of migration
# memories.0014 reads the index as the owner, within the spaces the session reads.
_KEYWORD_ROWS_POLICED = """
    SELECT * FROM memories_keyword_matches(%({query})s::tsquery, {exclude}::tsquery, %(keyword_cap)s,
                                           %(spaces)s::bigint[], %(kind)s, %(level)s, %(tags)s::varchar[],
                                           %(by_space)s)"""
# When the plain query may match more than the cap, the tight query's matches come first, and the
# plain query is read (the tight matches left out) only if they are fewer than the candidates.
_KEYWORD_TIGHT_CTE = """
keyword_tight AS ({tight})"""
_KEYWORD_TIGHT_MATCHES = """
    SELECT * FROM keyword_tight
    UNION ALL
    SELECT * FROM ({plain}) plain WHERE (SELECT count(*) FROM keyword_tight) < %(candidates)s"""


def _keyword_rows(query: str, exclude: str | None, *, condition: str, policed: bool) -> str:
    """The statement reading the keyword side's rows (``_KEYWORD_ROWS``) for the parameters named
    ``query`` and ``exclude``; ``policed``: the connection is bound by the spaces' policies."""
    if policed:
        return _KEYWORD_ROWS_POLICED.format(query=query, exclude=f"%({exclude})s" if exclude else "NULL")
    exclusion = f" AND NOT search_vector @@ %({exclude})s::tsquery" if exclude else ""
    # The spaces searched, when named, are asked of the index with the words.
    match = (f"(%({query})s::tsquery && memories_spaces_query(%(spaces)s::bigint[]))" if "%(spaces)s" in condition
             else f"%({query})s::tsquery")
    return _KEYWORD_ROWS.format(table=Memory._meta.db_table, where=condition, match=match, exclusion=exclusion)


_SCORED_SQL = """
WITH {ctes}, fused AS (
    SELECT id, {base} AS base, bool_or(keyword) AS keyword FROM ({union}) ranked GROUP BY id
), scored AS (
    SELECT m.id, m.space_id, m.memory_type, m.tier, m.tags, m.hit_count, m.summary_l0, m.overview_l1,
           m.context, m.last_hit_at, m.created_at, m.agent_id, a.name AS writer,
           m.verified_at IS NOT NULL AS verified, m.screen_flags,
           1 - (m.embedding <=> %(query)s::vector) AS similarity,
           {score} * (1 + %(feedback_step)s * m.feedback) AS score, f.keyword
    FROM fused f JOIN {table} m ON m.id = f.id LEFT JOIN {agents} a ON a.id = m.agent_id
)
SELECT * FROM scored
WHERE score >= %(min_score)s{relevant}
ORDER BY score DESC, similarity DESC, id
LIMIT %(limit)s
"""
# The relevance floor: a memory less similar to the query than this is no answer, unless the keyword side found it.
_RELEVANT = " AND (similarity >= %(floor)s OR keyword)"


def _search_filters(*, memory_type: str | None, tier: str | None, tags: list[str] | None,
                    space_ids: list[int] | None = None) -> tuple[str, dict]:
    """The WHERE condition for active memories matching the filters, and its parameters.
    ``memory_type`` and ``tier`` are checked against their choices and written as literals (the
    planner's row estimates then see the value). ``space_ids``: the spaces searched (None: every
    space the connection's scope reads; the database's policies apply either way)."""
    where = ["status = 'active'"]
    # The same filters as parameters, for the keyword side's function (``_KEYWORD_ROWS_POLICED``).
    params: dict[str, Any] = {"spaces": None, "kind": memory_type, "level": tier, "tags": list(tags) if tags else None}
    if space_ids is not None:
        where.append("space_id = ANY(%(spaces)s::bigint[])")
        params["spaces"] = [int(i) for i in space_ids]
    if memory_type is not None:
        if memory_type not in MemoryType.values:
            raise ValueError(f"unknown memory_type {memory_type!r}")
        where.append(f"memory_type = '{memory_type}'")
    if tier is not None:
        if tier not in Tier.values:
            raise ValueError(f"unknown tier {tier!r}")
        where.append(f"tier = '{tier}'")
    if tags:
        # Containment: a memory must carry every tag asked for (flow.md#filters), read from the GIN index on tags.
        where.append("tags @> %(tags)s::varchar[]")
    return " AND ".join(where), params


def _keyword_relevance(terms: int) -> str:
    """A keyword match's relevance: the weights of the query's terms it contains (each term's
    inverse document frequency), plus its cosine similarity to the query. The similarity is at
    most 1, below the weight of any word fewer than a third of the memories contain, so it
    mostly orders memories that share the same words (docs/flow.md#search-modes)."""
    parts = [f"CASE WHEN search_vector @@ %(term_{i})s::tsquery THEN %(weight_{i})s ELSE 0 END" for i in range(terms)]
    return "(" + " + ".join([*parts, "(1 - (embedding <=> %(query)s::vector))"]) + ")"


def search_sql(*, mode: str, condition: str, keyword: bool, terms: int = 0, tight: bool = False,
               floor: bool = False, policed: bool = True) -> str:
    """The ranking statement for ``mode`` over the rows matching ``condition``; ``keyword``
    says whether the query has keyword terms (without them hybrid ranks by the vector side),
    ``terms`` how many of them rank the matches, ``tight`` whether a tight query is tried first,
    ``floor`` whether rows below the ``floor`` parameter's similarity are dropped (unless the
    keyword side found them), ``policed`` whether the connection is bound by the spaces' policies
    (not in the hub's upkeep, ``core.spaces.maintenance``)."""
    table = Memory._meta.db_table
    factors = _FACTORS.format(alias="")
    ctes, lists = [], []
    if mode in ("semantic", "hybrid"):
        ctes.append(_SEMANTIC_CTE.format(table=table, where=condition, factors=factors))
        lists.append("SELECT id, rank, false AS keyword FROM semantic")
    if mode in ("keyword", "hybrid") and keyword:
        if tight:
            ctes.append(_KEYWORD_TIGHT_CTE.format(tight=_keyword_rows("tight", None, condition=condition,
                                                                      policed=policed)))
            matches = _KEYWORD_TIGHT_MATCHES.format(plain=_keyword_rows("tsquery", "tight", condition=condition,
                                                                        policed=policed))
        else:
            matches = _keyword_rows("tsquery", None, condition=condition, policed=policed)
        ctes.append(_KEYWORD_CTE.format(matches=matches, factors=factors, relevance=_keyword_relevance(terms)))
        lists.append("SELECT id, rank, true AS keyword FROM keyword")
    if mode == "semantic":
        # similarity × tier boost × (1 − w + w × hotness)
        base = "0"
        score = "(1 - (m.embedding <=> %(query)s::vector)) * " + _FACTORS.format(alias="m.")
    else:
        # Reciprocal-rank fusion of the (already boosted) lists: 1.0 for first in every list.
        base = f"sum(1.0 / ({RRF_K} + rank)) * {RRF_K + 1}.0 / {len(lists)}"
        score = "f.base"
    return _SCORED_SQL.format(ctes=",".join(ctes), union=" UNION ALL ".join(lists), table=table, base=base,
                              score=score, relevant=_RELEVANT if floor else "", agents=Agent._meta.db_table)


def search_params(
    *, vector: list[float], terms: QueryTerms, tsquery: str, limit: int, min_score: float, tight: str = "",
) -> dict[str, Any]:
    """The parameters every ranking statement takes: the query, the ranking knobs from settings."""
    return {
        "query": vector_literal(vector),
        "tsquery": tsquery,
        "tight": tight,
        **{f"term_{i}": lexeme_quote(term) for i, term in enumerate(terms.terms)},
        **{f"weight_{i}": weight for i, weight in enumerate(term_weights(terms))},
        "candidates": _candidates(limit),
        "keyword_cap": settings.ULTRON_SEARCH_KEYWORD_CAP,
        "limit": limit,
        "min_score": min_score,
        "boost_hot": settings.ULTRON_TIER_BOOST_HOT,
        "boost_warm": settings.ULTRON_TIER_BOOST_WARM,
        "boost_cold": settings.ULTRON_TIER_BOOST_COLD,
        "feedback_step": settings.ULTRON_FEEDBACK_STEP,
        "weight": settings.ULTRON_HOTNESS_WEIGHT,
        "decay": settings.ULTRON_HOTNESS_DECAY,
    }


# pgvector >= 0.8: when rows the index scan found fail the query's other conditions (a type,
# tier or tag filter; a row another transaction deleted), the scan goes on through the graph
# until the LIMIT is met (or hnsw.max_scan_tuples, 20,000 by default, were visited), instead
# of returning the few that passed. Relaxed order: the rows come nearly sorted; every query
# here ranks them again by its own score.
ITERATIVE_SCAN = "SET LOCAL hnsw.iterative_scan = relaxed_order"


# The searched spaces hold at most this part of the hub (hub rows / their rows >= 2, a half) for
# the keyword side to intersect words and spaces inside the index (migration memories.0017). The
# index then reads the words' entries at the spaces' own (GIN's fast scan skips through the longer
# list); without it, every match of a word hub-wide is fetched and its space checked. Measured at
# 1M memories in ten spaces (each call planned for its values, 0019): for one space of ten,
# intersecting read 1,000 matches of a common word in 13–20 ms against 60–90 ms; for five of ten the
# two ways cost the same; for nine of ten intersecting cost twice as much (the spaces' lexemes are
# nearly as long as the table).
BY_SPACE_SCALE = 2.0


def _candidates(limit: int) -> int:
    return max(limit * 4, 40)


def memory_search(
    *,
    vector: list[float],
    limit: int = 10,
    memory_type: str | None = None,
    tier: str | None = None,
    tags: list[str] | None = None,
    min_score: float = 0.0,
    mode: str = "semantic",
    text: str = "",
    floor: float | None = None,
    space_ids: list[int] | None = None,
) -> list[SearchHit]:
    """Active memories for a query, ranked in SQL, in ``space_ids`` (see ``_search_filters``).

    ``semantic``: similarity from the HNSW candidates (a few times ``limit``), score =
    ``similarity × tier_boost × (1 + step × feedback) × (1 − w + w × hotness)`` (feedback: the
    capped net vote of agents, docs/api.md#feedback). ``keyword``: PostgreSQL full-text
    search over content, context and resolution, ranked by relevance (the inverse document
    frequencies of the query's words a memory contains, plus its similarity) × the same factors.
    ``hybrid``: both lists (each ranked by its relevance × the factors) fused by reciprocal rank
    (k = 60), normalised so that first in every list is 1. Every result carries its raw cosine
    similarity too. Type, tier and tag filters are applied during the vector side's index scan
    (``ITERATIVE_SCAN``): the one graph over active memories serves every filter.
    ``floor`` (the embedding space's relevance floor, ``memories.thresholds``): a memory whose
    similarity is below it is left out unless the keyword side found it; None keeps every one.
    """
    if mode not in SEARCH_MODES:
        raise ValueError(f"unknown mode {mode!r}")
    scope = scope_current()
    narrowed = None
    if not scope.maintenance and space_ids is not None:
        # Bound by the spaces' policies: the spaces asked for are searched by narrowing the
        # database's scope to them, not by a second condition on space_id beside the policy's
        # (the planner, multiplying the two estimates, took one space of ten for a hundredth of
        # the table and read it whole instead of walking the vector index).
        wanted = set(space_ids) & set(scope.read)
        narrowed = sorted(wanted) if wanted != set(scope.read) else None
        space_ids = None
    if narrowed is not None:
        with space_scope(read=narrowed):
            return memory_search(vector=vector, limit=limit, memory_type=memory_type, tier=tier, tags=tags,
                                 min_score=min_score, mode=mode, text=text, floor=floor)
    condition, params = _search_filters(memory_type=memory_type, tier=tier, tags=tags, space_ids=space_ids)
    terms = query_terms(text) if mode != "semantic" else QueryTerms([])
    selecting = selective_terms(terms)
    tsquery = keyword_query(selecting)
    tight = tight_query(terms, selecting, settings.ULTRON_SEARCH_KEYWORD_CAP) if tsquery else ""
    # No usable word: keyword mode has nothing to match, while hybrid still ranks by the vector side.
    if mode == "keyword" and not tsquery:
        return []
    # Type, tier and tag filters are applied during the index scan, which goes on until enough rows
    # pass them (flow.md#search-modes). Never fewer entries than the candidates wanted.
    ef = max(settings.ULTRON_SEARCH_EF, _candidates(limit))
    sql = search_sql(mode=mode, condition=condition, keyword=bool(tsquery), terms=len(terms.terms), tight=bool(tight),
                     floor=floor is not None, policed=not scope.maintenance)
    params.update(search_params(vector=vector, terms=terms, tsquery=tsquery, limit=limit, min_score=min_score,
                                tight=tight))
    params["floor"] = floor
    # The index is asked for the searched spaces with the words only when they hold at most half of
    # the hub (migration memories.0017): beyond that the spaces' lexemes cost more than they save.
    params["by_space"] = terms.hub_scale >= BY_SPACE_SCALE
    # On a read replica inside core.replicas.on_replica, else on the primary.
    with transaction.atomic(using=read_alias()), read_connection().cursor() as cursor:
        # SET LOCAL, inside the transaction: the next query on this connection gets the defaults back.
        # pgvector accepts ef_search up to 1000.
        cursor.execute(f"SET LOCAL hnsw.ef_search = {int(min(ef, 1000))}; {ITERATIVE_SCAN}")
        cursor.execute(sql, params)
        columns = [col.name for col in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    return [
        SearchHit(
            id=row["id"], memory_type=row["memory_type"], tier=row["tier"], tags=list(row["tags"]),
            hit_count=row["hit_count"], summary_l0=row["summary_l0"], overview_l1=row["overview_l1"],
            context=row["context"], similarity=float(row["similarity"]), score=float(row["score"]),
            last_hit_at=row["last_hit_at"], created_at=row["created_at"], space_id=row["space_id"],
            writer=row["writer"], agent_id=row["agent_id"], verified=row["verified"], flags=_flags(row["screen_flags"]),
            keyword=bool(row["keyword"]),
        )
        for row in rows
    ]
