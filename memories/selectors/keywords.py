"""The keyword side of search: the query's lexemes as PostgreSQL makes them, how many memories
contain each (the hub's own counts, exact and current: docs/flow.md#keyword-counts), which of
them are selective enough to pick matches, the tsquery built from them, and what each one weighs."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from core.replicas import read_connection
from memories.models import LexemeCount

# Stems that PostgreSQL's English stop list keeps but that carry nothing in a question
# (and the tails of contractions: you're, I've, we'll).
_EXTRA_STOPWORDS = ["yes", "could", "would", "may", "might", "shall", "must", "also", "let", "re", "ve", "ll"]
# A lexeme whose count is spread over more pieces than this is folded into one row when a query
# reads it (the pipeline folds all of them): reading stays a handful of index entries per word.
COMPACT_PIECES = 32
# A tightened keyword query combines at most this many of the rarest selecting terms: any three of
# six is twenty conjunctions, and the combinations grow fast beyond.
TIGHT_TERMS = 6


@dataclass(frozen=True)
class QueryTerms:
    """A query's lexemes in order of first appearance, how many active memories contain each
    (``counts``), and how many active memories there are (``rows``)."""

    terms: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    # How many memories the whole hub holds for each one the searched spaces hold (at least 1):
    # the full-text index's posting lists are the hub's, so a word in a fifth of a small space's
    # memories may be in thousands of the hub's (the index's work), if the spaces speak alike.
    hub_scale: float = 1.0

    def count(self, term: str) -> int:
        return self.counts.get(term, 0)


_TERMS_SQL = f"""
WITH query AS (
    SELECT lexeme, positions[1] AS position FROM unnest(to_tsvector('english', %(text)s))
    WHERE lexeme <> ALL(%(stop)s) AND length(lexeme) > 1
    ORDER BY positions[1] LIMIT %(limit)s
), wanted AS (
    SELECT lexeme, position FROM query UNION ALL SELECT '', NULL
)
SELECT w.lexeme, COALESCE(sum(c.memories), 0), count(c.id),
       -- the hub's active memories, every space's (migration 0018): one number, no row of any space
       (SELECT memories_active_total())
FROM wanted w LEFT JOIN {LexemeCount._meta.db_table} c ON c.lexeme = w.lexeme
GROUP BY w.lexeme, w.position
ORDER BY w.position NULLS FIRST
"""


def query_terms(text: str, *, limit: int = 10) -> QueryTerms:
    """The query's distinct lexemes as the database's English configuration makes them (stemmed,
    its stop words gone, plus a few more stop words that questions are full of; at most
    ``limit``), each with the number of active memories containing it: one statement."""
    if not text.strip():
        return QueryTerms([])
    with read_connection().cursor() as cursor:  # a read replica's inside core.replicas.on_replica
        # The search API takes queries of at most 4,000 characters (MemorySearchApi); other callers' text is
        # cut alike.
        cursor.execute(_TERMS_SQL, {"text": text[:4000], "stop": _EXTRA_STOPWORDS, "limit": limit})
        rows = cursor.fetchall()
    spread = [lexeme for lexeme, _, pieces, _ in rows if pieces > COMPACT_PIECES]
    if spread:
        lexeme_counts_compact(spread)
    total = next((int(count) for lexeme, count, _, _ in rows if lexeme == ""), 0)
    terms = [(lexeme, int(count)) for lexeme, count, _, _ in rows if lexeme != ""]
    hub_rows = float(rows[0][3] or 0) if rows else 0.0
    scale = max(1.0, hub_rows / total) if total > 0 and hub_rows > 0 else 1.0
    return QueryTerms([term for term, _ in terms], dict(terms), total, scale)


def lexeme_counts_compact(lexemes: list[str] | None = None) -> int:
    """Fold each lexeme's count pieces (``lexemes``, or every lexeme that has more than one)
    into a single row; returns the rows removed. Safe beside writers and other compactions:
    each piece is summed by the one statement that deletes it."""
    table = LexemeCount._meta.db_table
    if lexemes is None:
        chosen, params = f"SELECT lexeme FROM {table} GROUP BY space_id, lexeme HAVING count(*) > 1", []
    else:
        chosen, params = "SELECT unnest(%s::text[])", [list(lexemes)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH gone AS (
                DELETE FROM {table} WHERE lexeme IN ({chosen}) RETURNING space_id, lexeme, memories
            ), folded AS (
                INSERT INTO {table} (space_id, lexeme, memories)
                SELECT space_id, lexeme, sum(memories) FROM gone GROUP BY space_id, lexeme HAVING sum(memories) <> 0
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM folded)
            """,
            params,
        )
        return int(cursor.fetchone()[0])


def term_weights(query: QueryTerms) -> list[float]:
    """Each term's weight in the keyword ranking: its inverse document frequency as BM25 has it,
    ln(1 + (N − n + 0.5) / (n + 0.5)), so a rare word counts for more than a common one. Every
    term weighs 1 while no memory is stored."""
    if query.rows <= 0:
        return [1.0 for _ in query.terms]
    weights = []
    for term in query.terms:
        # Never more holders than memories, or the weight would turn negative.
        n = min(query.count(term), query.rows)
        weights.append(math.log(1 + (query.rows - n + 0.5) / (n + 0.5)))
    return weights


def selective_terms(query: QueryTerms) -> list[str]:
    """The terms that select keyword matches: those in at most ULTRON_SEARCH_KEYWORD_COMMON_ROWS
    memories; if fewer than two are, the rarest two. The rest still count in the ranking."""
    terms = query.terms
    # Counted as the index reads them: over the whole hub, where the searched spaces are part of it.
    limit = settings.ULTRON_SEARCH_KEYWORD_COMMON_ROWS / query.hub_scale
    rare = [term for term in terms if query.count(term) <= limit]
    if len(rare) >= 2 or len(terms) <= 2:
        return rare or terms
    rarest = set(sorted(terms, key=query.count)[:2])
    return [term for term in terms if term in rarest]


def lexeme_quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def keyword_query(terms: list[str]) -> str:
    """A tsquery over lexemes: with one or two, either; with more, any two of them together.
    Questions rarely share every word with the memory that answers them, but a memory sharing a
    single common word ("error", "install") with the query is no match — and an OR of common
    words would make PostgreSQL rank a large part of the table."""
    quoted = [lexeme_quote(term) for term in terms]
    if len(quoted) <= 2:
        return " | ".join(quoted)
    return " | ".join(f"({a} & {b})" for i, a in enumerate(quoted) for b in quoted[i + 1 :])


def estimated_matches(query: QueryTerms, terms: list[str]) -> int:
    """At most how many active memories ``keyword_query(terms)`` matches, from the terms' counts:
    the sum of their counts for one or two terms, the sum over pairs of the rarer one's for more."""
    counts = [query.count(term) for term in terms]
    if len(counts) <= 2:
        return sum(counts)
    return sum(min(a, b) for a, b in itertools.combinations(counts, 2))


def tight_query(query: QueryTerms, terms: list[str], cap: int) -> str:
    """A stricter tsquery to try before ``keyword_query(terms)`` when that may match more than
    ``cap`` memories (more than the ranking reads, which would then rank an arbitrary part of
    the matches): both terms of a pair; with three or more, any three of the rarest
    ``TIGHT_TERMS`` together. Memories holding more of the query's rare words are the better
    keyword matches, and a conjunction is cheap to look up in the index where a disjunction of
    common words is not. Empty when the plain query stays under the cap or has a single term."""
    if len(terms) < 2 or estimated_matches(query, terms) <= cap:
        return ""
    quoted = [lexeme_quote(term) for term in sorted(terms, key=query.count)[:TIGHT_TERMS]]
    if len(quoted) == 2:
        return " & ".join(quoted)
    return " | ".join(f"({a} & {b} & {c})" for a, b, c in itertools.combinations(quoted, 3))
