"""The memory list's search box: the hub's own hybrid search, in the order an agent would get
(no hits counted), and a "match" column saying how close each row is to what was asked, so a
curator sees where the relevant rows end (``match_bands``)."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, CharField, FloatField, IntegerField, Value, When
from django.utils.html import format_html

from memories.services.recall import memories_rank_matches
from memories.thresholds import model_thresholds

SEARCH_LIMIT = 200


class RankedSearchMixin:
    """For the memory admin (``list_display`` gains ``match`` while a search is shown)."""

    def get_search_results(self, request, queryset, search_term):
        """Rank by the hub's hybrid search; each row carries its similarity and whether its
        words matched."""
        term = search_term.strip()
        if not term:
            return queryset, False
        ranked = request.__dict__.setdefault("_memory_ranking", {})  # facet counts re-filter: search once
        if term not in ranked:
            ranked[term] = memories_rank_matches(query=term, limit=SEARCH_LIMIT)
        hits = ranked[term]
        if not hits:
            return queryset.none(), False
        order = Case(*[When(pk=h.id, then=Value(i)) for i, h in enumerate(hits)], output_field=IntegerField())
        similarity = Case(*[When(pk=h.id, then=Value(h.similarity)) for h in hits], output_field=FloatField())
        bands = match_bands(hits)
        band = Case(*[When(pk=h.id, then=Value(bands[h.id])) for h in hits], output_field=CharField())
        return (queryset.filter(pk__in=[h.id for h in hits])
                .annotate(search_rank=order, search_similarity=similarity, search_band=band)
                .order_by("search_rank")), False

    def get_ordering(self, request):
        if request.GET.get("q"):
            return ()  # keep the search's ranking
        return super().get_ordering(request)  # type: ignore[misc]

    def get_list_display(self, request):
        shown = list(super().get_list_display(request))  # type: ignore[misc]
        if request.GET.get("q", "").strip():
            shown.insert(1, "match")
        return shown

    def match(self, memory: Any) -> str:
        """The row's band (``match_bands``) and its similarity to the query."""
        similarity = getattr(memory, "search_similarity", None)
        if similarity is None:
            return ""
        band = memory.search_band
        return format_html('<span class="hub-badge hub-match-{}" title="similarity {}: {}">{} {}%</span>',
                           band, f"{similarity:.2f}", BANDS[band], band, round(100 * similarity))

    match.short_description = "match"  # type: ignore[attr-defined]


# How near the best match a row must be to count as one of the answers; a row further down is
# listed only because it passed the relevance floor or shares a word.
CLOSE_TO_BEST = 0.15
BANDS = {
    "close": "about as near the query as the best match",
    "words": "further from the query's meaning, but shares its less common words",
    "weak": "far below the best match and sharing none of its less common words",
}


def match_bands(hits: list[Any]) -> dict[Any, str]:
    """Each hit's band: ``close`` within ``CLOSE_TO_BEST`` of the best similarity (and above the
    relevance floor), else ``words`` when the keyword side found it, else ``weak``. Relative to
    the best, because how similar a short query and a long memory can be differs from query to
    query (a paraphrase of the right answer scores 0.5, a near copy 0.9)."""
    floor = max(model_thresholds().floor, 0.0)
    best = max((h.similarity for h in hits), default=0.0)
    return {h.id: "close" if h.similarity >= max(best - CLOSE_TO_BEST, floor)
            else "words" if h.keyword else "weak" for h in hits}
