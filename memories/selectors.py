"""Every read of the memory service, including the pgvector queries."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from pgvector.django import CosineDistance

from memories.models import EmbeddingSpace, Memory, MemoryType, Status, Tier
from memories.text import details_conflict, memory_body

_LIST_FIELDS_DEFERRED = ("embedding", "search_vector")


@dataclass(frozen=True)
class DuplicateMatch:
    memory: Memory
    similarity: float
    reason: str  # exact | similar | llm | ask (ask the LLM, then decide again)


def embedding_column_dimensions() -> int | None:
    """The dimension of the stored vector column, read from the catalog."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'",
            [Memory._meta.db_table],
        )
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] and row[0] > 0 else None


def embedding_space_get() -> EmbeddingSpace | None:
    return EmbeddingSpace.objects.first()


def memory_find_duplicate(
    *, memory_type: str, body_hash: str, vector: list[float], verdicts: dict[Any, bool], body: str = ""
) -> DuplicateMatch | None:
    """Find the active memory of the same type that a new upload duplicates (SPEC §4.5).

    Exact body hash first; then the nearest neighbours through the per-type partial HNSW
    index: similarity >= ULTRON_DUPLICATE_THRESHOLD is a duplicate unless the two bodies'
    details conflict (``details_conflict``: different numbers or versions, one negated,
    opposite words); within the soft band, and for such a conflicting pair, the LLM's verdict
    (``verdicts``, filled in by the caller) decides, and a candidate with no verdict yet comes
    back with reason ``ask`` when an LLM is configured. ``body`` is the upload's text
    (content, context, resolution joined by newlines).
    """
    from memories.intelligence import llm_available

    exact = (
        Memory.objects.defer(*_LIST_FIELDS_DEFERRED)
        .filter(status=Status.ACTIVE, memory_type=memory_type, content_hash=body_hash)
        .order_by("created_at")
        .first()
    )
    if exact is not None:
        return DuplicateMatch(exact, 1.0, "exact")
    candidates = (
        Memory.objects.defer(*_LIST_FIELDS_DEFERRED)
        .filter(status=Status.ACTIVE, memory_type=memory_type)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")[:5]
    )
    can_ask = None
    for candidate in candidates:
        similarity = 1.0 - float(candidate.distance)
        if similarity < settings.ULTRON_DUPLICATE_SOFT_THRESHOLD:
            break
        if similarity >= settings.ULTRON_DUPLICATE_THRESHOLD and not details_conflict(
            body, memory_body(candidate.content, candidate.context, candidate.resolution)
        ):
            return DuplicateMatch(candidate, similarity, "similar")
        verdict = verdicts.get(candidate.pk)
        if verdict is True:
            return DuplicateMatch(candidate, similarity, "llm")
        if verdict is None:
            if can_ask is None:
                can_ask = llm_available()
            if can_ask:
                return DuplicateMatch(candidate, similarity, "ask")
    return None


# --- search --------------------------------------------------------------------------------


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


SEARCH_MODES = ("semantic", "keyword", "hybrid")
RRF_K = 60

# Candidate lists: the vector side through the HNSW index, the keyword side through the GIN
# index on the generated tsvector. Each returns (id, rank).
# The spec's tier and hotness factors (SPEC §7), as SQL over a row's tier and last hit.
_FACTORS = """
    CASE {alias}tier WHEN 'hot' THEN %(boost_hot)s WHEN 'warm' THEN %(boost_warm)s ELSE %(boost_cold)s END
    * (1 - %(weight)s + %(weight)s * exp(
          -%(decay)s * GREATEST(
              EXTRACT(EPOCH FROM (now() - COALESCE({alias}last_hit_at, {alias}created_at))), 0
          ) / 86400.0))"""
# Candidate lists, each ranked by its own relevance times the tier and hotness factors, so the
# fused list keeps the spec's preferences without letting a boost swamp the fusion: the vector
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
        SELECT id, ts_rank_cd(search_vector, %(rankquery)s::tsquery, 32) AS relevance,
               {factors} AS factor
        FROM (
            -- at most this many matches are ranked: a bound on the work, whatever the query
            SELECT id, search_vector, tier, last_hit_at, created_at FROM {table}
            WHERE {where} AND search_vector @@ %(tsquery)s::tsquery
            LIMIT %(keyword_cap)s
        ) capped
        ORDER BY relevance DESC, id
        LIMIT %(candidates)s
    ) matched
)"""
_SCORED_SQL = """
WITH {ctes}, fused AS (
    SELECT id, {base} AS base FROM ({union}) ranked GROUP BY id
), scored AS (
    SELECT m.id, m.memory_type, m.tier, m.tags, m.hit_count, m.summary_l0, m.overview_l1,
           m.context, m.last_hit_at, m.created_at,
           1 - (m.embedding <=> %(query)s::vector) AS similarity,
           {score} AS score
    FROM fused f JOIN {table} m ON m.id = f.id
)
SELECT * FROM scored
WHERE score >= %(min_score)s
ORDER BY score DESC, similarity DESC, id
LIMIT %(limit)s
"""


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def keyword_terms(text: str, *, limit: int = 10) -> list[str]:
    """The query's distinct lexemes in order of first appearance, as the database's English
    configuration makes them (stemmed, its stop words gone), plus a few more stop words that
    questions are full of; at most ``limit``."""
    if not text.strip():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector('english', %s)) "
            "WHERE lexeme <> ALL(%s) AND length(lexeme) > 1 ORDER BY positions[1] LIMIT %s",
            [text[:4000], _EXTRA_STOPWORDS, limit],
        )
        return [row[0] for row in cursor.fetchall()]


# Stems that PostgreSQL's English stop list keeps but that carry nothing in a question
# (and the tails of contractions: you're, I've, we'll).
_EXTRA_STOPWORDS = ["yes", "could", "would", "may", "might", "shall", "must", "also", "let", "re", "ve", "ll"]
_STATS_TTL = 300.0
_stats_cache: dict[str, tuple[float, dict[str, float]]] = {}


def lexeme_counts() -> dict[str, float]:
    """Estimated number of memories containing each of the most common lexemes, from the
    planner's statistics on the full-text column (``pg_stats`` × the table's row estimate,
    refreshed by ANALYZE/autovacuum); cached per process for a few minutes. Empty before the
    table has been analysed."""
    key = connection.settings_dict["NAME"]
    cached = _stats_cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < _STATS_TTL:
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
            "FROM pg_stats s JOIN pg_class c ON c.oid = (quote_ident(s.schemaname) || '.' || "
            "quote_ident(s.tablename))::regclass "
            "WHERE s.schemaname = current_schema() AND s.tablename = %s AND s.attname = 'search_vector'",
            [Memory._meta.db_table],
        )
        row = cursor.fetchone()
    counts: dict[str, float] = {}
    if row and row[0] and row[2] and row[2] > 0:
        # The frequency array ends with three summary figures: zip stops at the last element.
        counts = {lexeme: freq * row[2] for lexeme, freq in zip(row[0], row[1], strict=False)}
    _stats_cache[key] = (time.monotonic(), counts)
    return counts


def selective_terms(terms: list[str]) -> list[str]:
    """The terms that select keyword matches: those in at most ULTRON_SEARCH_KEYWORD_COMMON_ROWS
    memories; if fewer than two are, the rarest two. The rest still count in the ranking."""
    counts = lexeme_counts()
    limit = settings.ULTRON_SEARCH_KEYWORD_COMMON_ROWS
    rare = [term for term in terms if counts.get(term, 0.0) <= limit]
    if len(rare) >= 2 or len(terms) <= 2:
        return rare or terms
    rarest = set(sorted(terms, key=lambda term: counts.get(term, 0.0))[:2])
    return [term for term in terms if term in rarest]


def _lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def keyword_query(terms: list[str]) -> str:
    """A tsquery over lexemes: with one or two, either; with more, any two of them together.
    Questions rarely share every word with the memory that answers them, but a memory sharing a
    single common word ("error", "install") with the query is no match — and an OR of common
    words would make PostgreSQL rank a large part of the table."""
    quoted = [_lexeme(term) for term in terms]
    if len(quoted) <= 2:
        return " | ".join(quoted)
    return " | ".join(f"({a} & {b})" for i, a in enumerate(quoted) for b in quoted[i + 1 :])


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
) -> list[SearchHit]:
    """Active memories for a query, ranked by SPEC §7's score, computed in SQL.

    ``semantic``: similarity from the HNSW candidates (a few times ``limit``), score =
    ``similarity × tier_boost × (1 − w + w × hotness)``. ``keyword``: PostgreSQL full-text
    search over content, context and resolution, ranked by text relevance × the same factors.
    ``hybrid``: both lists (each ranked by its relevance × the factors) fused by reciprocal rank
    (k = 60), normalised so that first in every list is 1. Every result carries its raw cosine
    similarity too. Filters on type use
    that type's partial index; tier and tag filters widen the vector side's candidate list,
    because pgvector applies them after the index scan.
    """
    if mode not in SEARCH_MODES:
        raise ValueError(f"unknown mode {mode!r}")
    # memory_type and tier are checked against their choices and written as literals, so the
    # planner can match the partial indexes' predicates.
    where = ["status = 'active'"]
    params: dict[str, Any] = {}
    if memory_type is not None:
        if memory_type not in MemoryType.values:
            raise ValueError(f"unknown memory_type {memory_type!r}")
        where.append(f"memory_type = '{memory_type}'")
    if tier is not None:
        if tier not in Tier.values:
            raise ValueError(f"unknown tier {tier!r}")
        where.append(f"tier = '{tier}'")
    if tags:
        where.append("tags @> %(tags)s::varchar[]")
        params["tags"] = list(tags)
    terms = keyword_terms(text) if mode != "semantic" else []
    tsquery = keyword_query(selective_terms(terms))
    if mode == "keyword" and not tsquery:
        return []
    candidates = max(limit * 4, 40)
    filtered = tier is not None or bool(tags)
    ef = max(settings.ULTRON_SEARCH_FILTERED_EF if filtered else settings.ULTRON_SEARCH_EF, candidates)
    table = Memory._meta.db_table
    condition = " AND ".join(where)
    ctes, union = [], []
    factors = _FACTORS.format(alias="")
    if mode in ("semantic", "hybrid"):
        ctes.append(_SEMANTIC_CTE.format(table=table, where=condition, factors=factors))
        union.append("SELECT id, rank FROM semantic")
    if mode in ("keyword", "hybrid") and tsquery:
        ctes.append(_KEYWORD_CTE.format(table=table, where=condition, factors=factors))
        union.append("SELECT id, rank FROM keyword")
    if mode == "semantic":
        # SPEC §7: similarity × tier boost × (1 − w + w × hotness)
        base = "0"
        score = "(1 - (m.embedding <=> %(query)s::vector)) * " + _FACTORS.format(alias="m.")
    else:
        # Reciprocal-rank fusion of the (already boosted) lists: 1.0 for first in every list.
        base = f"sum(1.0 / ({RRF_K} + rank)) * {RRF_K + 1}.0 / {len(union)}"
        score = "f.base"
    sql = _SCORED_SQL.format(ctes=",".join(ctes), union=" UNION ALL ".join(union), table=table, base=base,
                             score=score)
    params.update(
        query=_vector_literal(vector),
        tsquery=tsquery,
        rankquery=" | ".join(_lexeme(term) for term in terms),
        candidates=candidates,
        keyword_cap=settings.ULTRON_SEARCH_KEYWORD_CAP,
        limit=limit,
        min_score=min_score,
        boost_hot=settings.ULTRON_TIER_BOOST_HOT,
        boost_warm=settings.ULTRON_TIER_BOOST_WARM,
        boost_cold=settings.ULTRON_TIER_BOOST_COLD,
        weight=settings.ULTRON_HOTNESS_WEIGHT,
        decay=settings.ULTRON_HOTNESS_DECAY,
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {int(min(ef, 1000))}")
        cursor.execute(sql, params)
        columns = [col.name for col in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    return [
        SearchHit(
            id=row["id"], memory_type=row["memory_type"], tier=row["tier"], tags=list(row["tags"]),
            hit_count=row["hit_count"], summary_l0=row["summary_l0"], overview_l1=row["overview_l1"],
            context=row["context"], similarity=float(row["similarity"]), score=float(row["score"]),
            last_hit_at=row["last_hit_at"], created_at=row["created_at"],
        )
        for row in rows
    ]


def memory_details(*, ids: list[Any]) -> list[Memory]:
    """Full records of the active memories among ``ids``, in the order asked."""
    found = {
        m.pk: m
        for m in Memory.objects.defer(*_LIST_FIELDS_DEFERRED)
        .select_related("agent")
        .filter(pk__in=ids, status=Status.ACTIVE)
    }
    return [found[i] for i in ids if i in found]


def memory_stats() -> dict[str, Any]:
    rows = Memory.objects.values("status", "tier", "memory_type").annotate(n=Count("pk"))
    by_status: dict[str, int] = {s: 0 for s in Status.values}
    by_tier: dict[str, int] = {t: 0 for t in Tier.values}
    by_type: dict[str, int] = {t: 0 for t in MemoryType.values}
    for row in rows:
        by_status[row["status"]] += row["n"]
        if row["status"] == Status.ACTIVE:
            by_tier[row["tier"]] += row["n"]
            by_type[row["memory_type"]] += row["n"]
    space = embedding_space_get()
    return {
        "total": sum(by_status.values()),
        "by_status": by_status,
        "by_tier": by_tier,
        "by_type": by_type,
        "merge_pending": Memory.objects.filter(status=Status.ACTIVE, merge_pending=True).count(),
        "embedding": (
            {"provider": space.provider, "model": space.model, "dimensions": space.dimensions}
            if space else None
        ),
    }


def memory_list(
    *, memory_type: str | None = None, tier: str | None = None, status: str = Status.ACTIVE,
    tag: str | None = None,
):
    queryset = Memory.objects.defer(*_LIST_FIELDS_DEFERRED).filter(status=status)
    if memory_type:
        queryset = queryset.filter(memory_type=memory_type)
    if tier:
        queryset = queryset.filter(tier=tier)
    if tag:
        queryset = queryset.filter(tags__contains=[tag.strip().lower()])
    return queryset.order_by("-hit_count", "-created_at")


# --- context assembly ----------------------------------------------------------------------


@dataclass
class ContextBlock:
    id: UUID
    section: str  # hot | relevant
    text: str
    tokens: int


@dataclass
class AssembledContext:
    text: str
    tokens: int
    blocks: list[ContextBlock]


def _render(memory_type: str, summary_l0: str, overview_l1: str, *, full: bool) -> str:
    if full and overview_l1:
        return f"- [{memory_type}] {overview_l1}"
    return f"- [{memory_type}] {summary_l0}"


def context_assemble(
    *, vector: list[float] | None, token_budget: int, hot_limit: int = 20, relevant_limit: int = 20,
    memory_type: str | None = None, tags: list[str] | None = None, text: str = "",
) -> AssembledContext:
    """A prompt-ready block within ``token_budget`` (SPEC §7): HOT memories first, one line
    each, then the memories most relevant to the query with their L1 overview. The last
    block that does not fit is cut at a sentence or word; the total never exceeds the budget
    (tokens as :func:`memories.text.estimate_tokens` counts them)."""
    from memories.text import estimate_tokens, truncate_tokens

    headers = {"hot": "## Shared knowledge (HOT)", "relevant": "## Relevant memories"}
    candidates: list[tuple[str, UUID, str]] = []
    hot = Memory.objects.filter(status=Status.ACTIVE, tier=Tier.HOT)
    if memory_type:
        hot = hot.filter(memory_type=memory_type)
    if tags:
        hot = hot.filter(tags__contains=tags)
    for row in hot.order_by("-hit_count", "-last_hit_at").values(
        "id", "memory_type", "summary_l0", "overview_l1"
    )[:hot_limit]:
        candidates.append(("hot", row["id"], _render(row["memory_type"], row["summary_l0"], row["overview_l1"], full=False)))
    if vector is not None:
        seen = {c[1] for c in candidates}
        for hit in memory_search(vector=vector, limit=relevant_limit, memory_type=memory_type, tags=tags,
                                 mode=settings.ULTRON_SEARCH_MODE, text=text):
            if hit.id not in seen:
                candidates.append(("relevant", hit.id, _render(hit.memory_type, hit.summary_l0, hit.overview_l1, full=True)))
    blocks: list[ContextBlock] = []
    lines: list[str] = []
    used = 0
    section = None
    for kind, memory_id, text in candidates:
        header_cost = estimate_tokens(headers[kind]) if kind != section else 0
        remaining = token_budget - used - header_cost
        if remaining <= 3:
            break
        cost = estimate_tokens(text)
        if cost > remaining:
            text = truncate_tokens(text, remaining - 1)
            cost = estimate_tokens(text)
            if cost > remaining or not text:
                break
        if kind != section:
            lines.append(headers[kind])
            used += header_cost
            section = kind
        lines.append(text)
        used += cost
        blocks.append(ContextBlock(memory_id, kind, text, cost))
    return AssembledContext("\n".join(lines), used, blocks)


def memory_pairs_near_duplicate(*, limit: int) -> list[tuple[Any, Any, float]]:
    """Active same-type pairs at or above the duplicate threshold: (older id, newer id, similarity).
    Looks at the newest ``limit × 20`` memories of each type (a bounded run), each one's nearest
    same-type neighbour coming from the type's partial HNSW index."""
    table = Memory._meta.db_table
    threshold = settings.ULTRON_DUPLICATE_THRESHOLD
    pairs: list[tuple[Any, Any, float]] = []
    seen: set[Any] = set()
    for memory_type in MemoryType.values:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT m.id, n.id, 1 - (m.embedding <=> n.embedding) AS similarity
                FROM {table} m
                CROSS JOIN LATERAL (
                    SELECT id, embedding, created_at FROM {table} o
                    WHERE o.status = 'active' AND o.memory_type = '{memory_type}' AND o.id <> m.id
                    ORDER BY o.embedding <=> m.embedding LIMIT 1
                ) n
                WHERE m.id IN (
                    SELECT id FROM {table} WHERE status = 'active' AND memory_type = '{memory_type}'
                    ORDER BY created_at DESC LIMIT %s
                  )
                  AND 1 - (m.embedding <=> n.embedding) >= %s AND m.created_at <= n.created_at
                ORDER BY similarity DESC
                LIMIT %s
                """,
                [limit * 20, threshold, limit],
            )
            for older, newer, similarity in cursor.fetchall():
                if older in seen or newer in seen:
                    continue
                seen.update((older, newer))
                pairs.append((older, newer, float(similarity)))
        if len(pairs) >= limit:
            break
    return pairs[:limit]
