"""Context assembly: a prompt-ready block of shared knowledge within a token budget, framed as
evidence (``memories.evidence``): a delimited block, a preface saying these are other agents'
notes to weigh, each memory with its writer, date and verified mark."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.conf import settings

from memories.evidence import BLOCK_CLOSE, BLOCK_OPEN, PREFACE, defuse, provenance
from memories.models import Memory, Status, Tier
from memories.selectors.search import memory_search
from memories.text import estimate_tokens, truncate_tokens


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
        return f"- [{memory_type}] {defuse(overview_l1)}"
    return f"- [{memory_type}] {defuse(summary_l0)}"


def context_assemble(
    *, vector: list[float] | None, token_budget: int, hot_limit: int = 20, relevant_limit: int = 20,
    memory_type: str | None = None, tags: list[str] | None = None, text: str = "", floor: float | None = None,
    space_ids: list[int] | None = None,
) -> AssembledContext:
    """A prompt-ready block within ``token_budget`` (docs/flow.md#context): HOT memories first, one line
    each, then the memories most relevant to the query with their L1 overview. The last
    block that does not fit is cut at a sentence or word; the total never exceeds the budget
    (tokens as :func:`memories.text.estimate_tokens` counts them). ``floor``: the search's
    relevance floor (``memories.selectors.memory_search``). ``space_ids``: the spaces drawn from
    (None: every space the connection's scope reads)."""
    headers = {"hot": "## Shared knowledge (HOT)", "relevant": "## Relevant memories"}
    candidates: list[tuple[str, UUID, str, str]] = []  # section, id, text, provenance
    hot = Memory.objects.filter(status=Status.ACTIVE, tier=Tier.HOT)
    if memory_type:
        hot = hot.filter(memory_type=memory_type)
    if tags:
        hot = hot.filter(tags__contains=tags)
    if space_ids is not None:
        hot = hot.filter(space_id__in=space_ids)
    for row in hot.order_by("-hit_count", "-last_hit_at").values(
        "id", "memory_type", "summary_l0", "overview_l1", "agent__name", "created_at", "verified_at", "screen_flags",
    )[:hot_limit]:
        candidates.append(("hot", row["id"], _render(row["memory_type"], row["summary_l0"], row["overview_l1"], full=False),
                           provenance(writer=row["agent__name"], created=row["created_at"],
                                      verified=row["verified_at"] is not None, flags=row["screen_flags"] or [])))
    if vector is not None:
        seen = {c[1] for c in candidates}
        for hit in memory_search(vector=vector, limit=relevant_limit, memory_type=memory_type, tags=tags,
                                 mode=settings.ULTRON_SEARCH_MODE, text=text, floor=floor, space_ids=space_ids):
            if hit.id not in seen:
                candidates.append(("relevant", hit.id, _render(hit.memory_type, hit.summary_l0, hit.overview_l1, full=True),
                                   provenance(writer=hit.writer, created=hit.created_at, verified=hit.verified,
                                              flags=hit.flags)))
    blocks: list[ContextBlock] = []
    lines: list[str] = []
    # The frame (the block's tags and its preface) is paid for by the first memory (flow.md#context).
    frame_cost = estimate_tokens(BLOCK_OPEN) + estimate_tokens(PREFACE) + estimate_tokens(BLOCK_CLOSE)
    used = 0
    section = None
    for kind, memory_id, text, source in candidates:
        # Headers count against the budget (flow.md#context), paid by the first block of their section.
        header_cost = (estimate_tokens(headers[kind]) if kind != section else 0) + (frame_cost if not blocks else 0)
        source_cost = estimate_tokens(source)
        remaining = token_budget - used - header_cost - source_cost
        if remaining <= 3:
            break
        cost = estimate_tokens(text)
        if cost > remaining:
            # One token is left for the "…" that marks the cut (memories.text.truncate_tokens).
            text = truncate_tokens(text, remaining - 1)
            cost = estimate_tokens(text)
            if cost > remaining or not text:
                break
        if kind != section:
            lines.append(headers[kind])
            section = kind
        lines.append(text + source)
        used += header_cost + cost + source_cost
        blocks.append(ContextBlock(memory_id, kind, text + source, cost + source_cost))
    framed = [BLOCK_OPEN, PREFACE, *lines, BLOCK_CLOSE] if blocks else []
    return AssembledContext("\n".join(framed), used, blocks)
