"""Judgement: is a memory the duplicate of another? The one place the duplicate rule is written,
used by uploads, edits and the consolidation step alike (docs/flow.md#duplicate-check).

The rule: the same body (exact hash) is a duplicate. Otherwise the nearest active memories are
looked at, nearest first, whatever their type (a type is itself a judgement and can differ for two
reports of one lesson). Similarity at or above the embedding model's duplicate threshold with no
conflicting details (``details_conflicts``: other versions, numbers, negations, names) merges
automatically. Below it down to the soft threshold, or above it with conflicting details, the
pair is only a candidate: the LLM's "same subject?" verdict decides when one is configured, else a
curator does (a merge candidate). Thresholds are per embedding model (``memories.thresholds``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memories.judgements.prompts import llm_available
from memories.judgements.same_subject import details_conflicts
from memories.text import memory_body
from memories.thresholds import model_thresholds

# How many neighbours in the candidate band are judged per upload (asked of the LLM, or kept
# as candidates): more would ask the LLM more for every upload, and a curator rarely needs a
# third look-alike to decide.
CANDIDATES_PER_UPLOAD = 2


@dataclass(frozen=True)
class DuplicateMatch:
    memory: Any
    similarity: float
    # exact | similar | llm: a duplicate, merge. ask: ask the LLM, then decide again.
    # candidate: not sure, record a merge candidate beside the new memory.
    reason: str
    conflicts: tuple[str, ...] = ()


def duplicate_decide(
    *, body: str, neighbours: Iterable[Any], verdicts: Mapping[Any, bool | None], ask_llm: bool | None = None,
) -> list[DuplicateMatch]:
    """One match to merge into, or the merge candidates (at most ``CANDIDATES_PER_UPLOAD``), or
    nothing. ``neighbours``: memories with ``similarity`` (cosine) and ``exact`` (same body
    hash) attributes, as ``memories.selectors.memory_duplicate_neighbours`` reads them.
    ``body``: the new text (content, context, resolution joined by newlines). ``verdicts``: the
    LLM's answers so far, by neighbour id. ``ask_llm``: whether an undecided pair may go to the
    LLM (default: when one is configured); without, it is a candidate."""
    rows = list(neighbours)
    for row in rows:
        # The same normalised body is a duplicate whatever its similarity or details: the hash leaves nothing
        # that could differ but case and spacing (flow.md#embedding).
        if row.exact:
            return [DuplicateMatch(row, 1.0, "exact")]
    if ask_llm is None:
        ask_llm = llm_available()
    limits = model_thresholds()
    candidates: list[DuplicateMatch] = []
    judged = 0
    for neighbour in sorted(rows, key=lambda row: -row.similarity):
        # Nearest first, so the first neighbour below the soft threshold ends the search: every later one is
        # further still.
        if neighbour.similarity < limits.soft or judged >= CANDIDATES_PER_UPLOAD:
            break
        conflicts = tuple(details_conflicts(body, memory_body(neighbour.content, neighbour.context,
                                                               neighbour.resolution)))
        # Near enough and nothing contradicts: the same lesson, merged without asking anyone.
        if neighbour.similarity >= limits.duplicate and not conflicts:
            return [DuplicateMatch(neighbour, neighbour.similarity, "similar")]
        judged += 1
        verdict = verdicts.get(neighbour.pk)
        if verdict is True:
            return [DuplicateMatch(neighbour, neighbour.similarity, "llm", conflicts)]
        if verdict is False:
            continue  # the LLM said distinct: recorded as a dismissed candidate by the caller
        # Not asked yet: the caller asks the LLM outside the advisory lock, then decides again under it with
        # the verdict known (flow.md#concurrency).
        if neighbour.pk not in verdicts and ask_llm:
            return [DuplicateMatch(neighbour, neighbour.similarity, "ask", conflicts)]
        # No verdict (no LLM, or it failed: ``None``): the pair waits for a curator as a merge candidate.
        candidates.append(DuplicateMatch(neighbour, neighbour.similarity, "candidate", conflicts))
    return candidates
