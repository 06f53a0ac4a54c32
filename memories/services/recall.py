"""What agents read — search, details, context — as services: each redacts and embeds the
query, asks the selectors, and counts a use of every memory it hands back, once per reading
agent a day and never its writer's own (docs/flow.md#hits), so the tiers follow what proves
useful to many agents. Search, context and the
admin's ranking leave out what is below the embedding space's relevance floor and no keyword
supports: a query about nothing in the hub answers nothing."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.conf import settings

from memories import selectors
from memories.models import Memory
from memories.redaction.policy import Occasion, redact_one_for
from memories.selectors import AssembledContext, SearchHit
from memories.services.embedding_space import configured_space, embed_texts
from memories.services.inputs import tags_normalise
from memories.services.uses import uses_defer
from memories.thresholds import NO_FLOOR, model_thresholds


@dataclass(frozen=True)
class SearchOutcome:
    hits: list[SearchHit]
    mode: str


# Recent queries, redacted and embedded, per process: an agent repeating a question, or many
# agents asking the same one, costs neither redaction nor embedding again. Keyed by a digest of
# the query as sent and the configured embedding space; the raw query itself is not kept.
QUERY_CACHE_SIZE = 512
_query_cache: OrderedDict[tuple, tuple[str, np.ndarray | None]] = OrderedDict()
_query_cache_lock = threading.Lock()


def query_cache_forget() -> None:
    """Drop the cached query embeddings (tests; a process sees a settings change this way)."""
    with _query_cache_lock:
        _query_cache.clear()


def query_prepare(query: str) -> tuple[str, list[float] | None]:
    """The query redacted (what the keyword side matches) and its embedding (None for an empty
    query), from the cache when this process has seen the same query in the same space."""
    key = (hashlib.blake2b(query.encode("utf-8", "surrogatepass"), digest_size=16).digest(), configured_space())
    with _query_cache_lock:
        cached = _query_cache.get(key)
        if cached is not None:
            _query_cache.move_to_end(key)
    # Redacted and embedded outside the lock: one slow query does not hold up the others' cache lookups.
    if cached is None:
        # A blank query (a context block asked without one) needs no redaction and no vector: HOT memories only.
        text = redact_one_for(Occasion.QUERY, query).text if query.strip() else ""
        vector = (np.asarray(embed_texts([selectors.query_embedding_text(text)])[0], dtype=np.float32)
                  if text else None)
        cached = (text, vector)
        with _query_cache_lock:
            _query_cache[key] = cached
            while len(_query_cache) > QUERY_CACHE_SIZE:
                _query_cache.popitem(last=False)
    text, vector = cached
    return text, (vector.tolist() if vector is not None else None)


def relevance_floor() -> float | None:
    """The configured embedding space's relevance floor (``memories.thresholds``), None when off."""
    floor = model_thresholds().floor
    return None if floor <= NO_FLOOR else floor


def memories_search(
    *,
    query: str,
    limit: int = 10,
    memory_type: str | None = None,
    tier: str | None = None,
    tags: list[str] | None = None,
    min_score: float = 0.0,
    mode: str | None = None,
    space_ids: list[int] | None = None,
    include_superseded: bool = False,
    reader_id: int | None = None,
) -> SearchOutcome:
    """Active memories for a query (redacted before it is embedded or matched), ranked, each
    counted as hit and saying which memories it replaced (``supersedes``); ``mode`` defaults
    to ``ULTRON_SEARCH_MODE``; ``space_ids``: the spaces searched (None: all the connection's
    scope reads); ``reader_id``: the searching agent, whose use is counted. ``include_superseded``: each hit is followed by the memories it replaced
    (history: ``superseded_by`` set, not counted as hits), never placed above it."""
    mode = mode or settings.ULTRON_SEARCH_MODE
    text, vector = query_prepare(query)
    if vector is None:  # nothing to search for: the API refuses blank queries before this
        return SearchOutcome([], mode)
    hits = selectors.memory_search(
        vector=vector, limit=limit, memory_type=memory_type, tier=tier, tags=tags_normalise(tags or []),
        min_score=min_score, mode=mode, text=text, floor=relevance_floor(), space_ids=space_ids,
    )
    counted = uses_defer(ids=[hit.id for hit in hits], reader_id=reader_id)
    replaced = selectors.memories_superseded_by(ids=[hit.id for hit in hits]) if hits else {}
    # The counts handed back include the hit just recorded when uses are written in the request
    # (ULTRON_HITS_FLUSH_SECONDS=0); deferred, they are the stored ones (flow.md#hits).
    current = [replace(hit, hit_count=hit.hit_count + (hit.id in counted), supersedes=replaced.get(hit.id, []))
               for hit in hits]
    if include_superseded and replaced:
        current = _with_history(current, vector)
    return SearchOutcome(current, mode)


def _with_history(hits: list[SearchHit], vector: list[float]) -> list[SearchHit]:
    """Each hit followed by the memories it replaced (and those they replaced), scored no higher
    than the hit: a superseded memory never ranks above the memory that replaced it."""
    out: list[SearchHit] = []
    for hit in hits:
        out.append(hit)
        for old in selectors.memory_history(memory_id=hit.id):
            similarity = float(np.dot(np.asarray(old.embedding, dtype=float), np.asarray(vector, dtype=float)))
            out.append(SearchHit(
                id=old.pk, memory_type=old.memory_type, tier=old.tier, tags=list(old.tags), hit_count=old.hit_count,
                summary_l0=old.summary_l0, overview_l1=old.overview_l1, context=old.context, similarity=similarity,
                score=min(hit.score, similarity), last_hit_at=old.last_hit_at, created_at=old.created_at,
                space_id=old.space_id,  # type: ignore[arg-type]  # never null (stubs read a default as optional)
                superseded_by=old.superseded_by_id, valid_until=old.valid_until))
    return out


def memories_read(*, ids: list[Any], space_ids: list[int] | None = None,
                  reader_id: int | None = None) -> tuple[list[Memory], list[Any]]:
    """Full records of the active memories among ``ids`` (in the order asked, each counted as a
    use by ``reader_id``, like a search result) and the ids not found (a memory of a space not in
    ``space_ids`` is not found, nor a held one unless ``reader_id`` wrote it)."""
    ids = list(dict.fromkeys(ids))
    memories = selectors.memory_details(ids=ids, space_ids=space_ids, writer_id=reader_id)
    counted = uses_defer(ids=[m.pk for m in memories], reader_id=reader_id)
    for memory in memories:
        memory.hit_count += memory.pk in counted
    found = {m.pk for m in memories}
    return memories, [i for i in ids if i not in found]


def context_build(
    *, query: str = "", token_budget: int, memory_type: str | None = None, tags: list[str] | None = None,
    space_ids: list[int] | None = None, reader_id: int | None = None,
) -> AssembledContext:
    """A prompt-ready block of shared knowledge within ``token_budget``: HOT memories, then
    those relevant to ``query``. Only the relevant ones count as uses (by ``reader_id``): HOT
    ones are included for every caller, and counting them would keep them HOT forever."""
    text, vector = query_prepare(query.strip())
    assembled = selectors.context_assemble(
        vector=vector, token_budget=token_budget, memory_type=memory_type, tags=tags_normalise(tags or []),
        text=text, floor=relevance_floor() if vector is not None else None, space_ids=space_ids,
    )
    uses_defer(ids=[b.id for b in assembled.blocks if b.section == "relevant"], reader_id=reader_id)
    return assembled


def memories_rank_matches(*, query: str, limit: int = 200) -> list[SearchHit]:
    """Active memories in the order an agent's search would rank them (the default search
    mode), each with its similarity to the query and whether its words matched, without
    counting hits: for people browsing in the admin site."""
    text, vector = query_prepare(query)
    if vector is None:
        return []
    return selectors.memory_search(vector=vector, limit=limit, mode=settings.ULTRON_SEARCH_MODE, text=text,
                                   floor=relevance_floor())


def memories_rank(*, query: str, limit: int = 200) -> list[Any]:
    """The ids of ``memories_rank_matches``."""
    return [hit.id for hit in memories_rank_matches(query=query, limit=limit)]
