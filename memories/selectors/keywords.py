"""The keyword side of search: the query's lexemes as PostgreSQL makes them, which of them are
selective enough to pick matches, the tsquery built from them, and what each one weighs."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from memories.models import Memory


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
# The planner's own guess for a lexeme missing from the statistics (tsquery_opr_selec): half the
# least frequent listed lexeme, and never more than this share of the rows.
_UNLISTED_SHARE_MAX = 0.005


@dataclass(frozen=True)
class LexemeStats:
    """Estimated document frequencies of the full-text column: ``counts`` for the most common
    lexemes, ``unlisted`` for any other, out of ``rows`` memories (all zero before ANALYZE)."""

    counts: dict[str, float]
    unlisted: float
    rows: float

    def count(self, term: str) -> float:
        return self.counts.get(term, self.unlisted)


_NO_STATS = LexemeStats({}, 0.0, 0.0)
_stats_cache: dict[str, tuple[float, LexemeStats]] = {}


def lexeme_counts_forget() -> None:
    """Drop this process's cached lexeme statistics (tests, and after a bulk load + ANALYZE)."""
    _stats_cache.clear()


def lexeme_stats() -> LexemeStats:
    """Estimated number of memories containing each lexeme, from the planner's statistics on
    the full-text column (``pg_stats`` × the table's row estimate, refreshed by
    ANALYZE/autovacuum); cached per process for a few minutes. Empty before the table has been
    analysed."""
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
    stats = _NO_STATS
    if row and row[0] and row[2] and row[2] > 0:
        lexemes, freqs, rows = row[0], row[1], float(row[2])
        # For a tsvector the frequencies are followed by the least and the greatest of them.
        least = freqs[len(lexemes)] if len(freqs) > len(lexemes) else min(freqs)
        stats = LexemeStats(
            counts={lexeme: freq * rows for lexeme, freq in zip(lexemes, freqs, strict=False)},
            unlisted=min(least / 2, _UNLISTED_SHARE_MAX) * rows,
            rows=rows,
        )
    _stats_cache[key] = (time.monotonic(), stats)
    return stats


def lexeme_counts() -> dict[str, float]:
    """Estimated number of memories containing each of the most common lexemes (see
    :func:`lexeme_stats`)."""
    return lexeme_stats().counts


def term_weights(terms: list[str]) -> list[float]:
    """Each term's weight in the keyword ranking: its inverse document frequency as BM25 has it,
    ln(1 + (N − n + 0.5) / (n + 0.5)) with the planner's estimates of n and N, so a rare word
    counts for more than a common one. Every term weighs 1 before the table has statistics."""
    if not terms:
        return []
    stats = lexeme_stats()
    if stats.rows <= 0:
        return [1.0 for _ in terms]
    weights = []
    for term in terms:
        n = min(stats.count(term), stats.rows)
        weights.append(math.log(1 + (stats.rows - n + 0.5) / (n + 0.5)))
    return weights


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
