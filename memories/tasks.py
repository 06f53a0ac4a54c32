"""django-q2 tasks of the memory service: load by id, call the service."""

from __future__ import annotations

from agents.scoping import in_space_of
from memories import selectors, services
from memories.models import KnowledgeChange, Memory

_MEMORIES = Memory._meta.db_table
_CHANGES = KnowledgeChange._meta.db_table


def memory_summarize_task(memory_id: str) -> bool:
    with in_space_of(_MEMORIES, memory_id):  # the memory's space, and only it
        return services.memory_summarize(memory_id=memory_id)


def memory_merge_task(memory_id: str) -> bool:
    with in_space_of(_MEMORIES, memory_id):
        return services.memory_merge_contributions(memory_id=memory_id)


def change_judge_task(change_id: int) -> str | None:
    """An open conflict put to the LLM (docs/flow.md#supersession)."""
    with in_space_of(_CHANGES, change_id):
        return services.conflict_llm_judge(change_id=change_id)


def merge_retry_step() -> dict[str, int]:
    return services.memories_merge_retry()


def tier_rebalance_step() -> dict[str, int]:
    result = services.tiers_rebalance()
    return result.__dict__.copy()


def keyword_counts_step() -> dict[str, int]:
    """Fold the keyword counts' pieces (docs/flow.md#keyword-counts) into one row per word."""
    return {"pieces_folded": selectors.lexeme_counts_compact()}


def consolidation_step() -> dict[str, int]:
    return services.memories_consolidate()
