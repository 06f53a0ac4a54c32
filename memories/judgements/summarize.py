"""Judgement: the two short forms of a memory — L0, one sentence for a quick scan, and L1, an
overview of problem, scenario and solution. With an LLM the model writes them; without one,
or when it fails, they are cut from the memory's own text (extractive)."""

from __future__ import annotations

import logging
from typing import Any

from memories.judgements.prompts import memory_prompt, require_str
from memories.providers.llm import LLMError, get_llm
from memories.text import estimate_tokens, first_sentence, normalise_space, truncate_tokens

logger = logging.getLogger("ultron.memories")

L0_TOKENS = 64
L1_TOKENS = 256


def summarize(content: str, context: str, resolution: str) -> tuple[str, str]:
    llm = get_llm()
    if not llm.available:
        return extractive_l0(content, L0_TOKENS), extractive_l1(content, context, resolution, L1_TOKENS)

    def validate(data: Any) -> tuple[str, str]:
        # L0 is one sentence for a quick scan: line breaks in the model's answer are folded.
        l0 = normalise_space(require_str(data, "summary_l0"))
        l1 = require_str(data, "overview_l1")
        # Hold the model to the budgets: cut rather than store an over-long summary.
        return truncate_tokens(l0, L0_TOKENS), truncate_tokens(l1, L1_TOKENS)

    system = (
        "Summarise one piece of shared agent experience, in the language it is written in. "
        f"summary_l0: one sentence, at most {L0_TOKENS} tokens, for a quick scan. "
        f"overview_l1: at most {L1_TOKENS} tokens covering the problem, the scenario and the "
        'solution. Reply with JSON only: {"summary_l0": "...", "overview_l1": "..."}'
    )
    try:
        return llm.ask_json(
            system=system, user=memory_prompt(content, context, resolution), validate=validate,
            max_tokens=600, purpose="summarize",
        )
    # Summaries never fail the caller: the extractive pair stands in, as without an LLM (flow.md, "Without an LLM").
    except LLMError as exc:
        logger.warning("summaries fell back to extractive: %s", exc)
        return extractive_l0(content, L0_TOKENS), extractive_l1(content, context, resolution, L1_TOKENS)


def extractive_summaries(content: str, context: str, resolution: str) -> tuple[str, str]:
    return extractive_l0(content, L0_TOKENS), extractive_l1(content, context, resolution, L1_TOKENS)


# --- offline: extractive ----------------------------------------------------------------------


def extractive_l0(content: str, budget: int = 64) -> str:
    return truncate_tokens(first_sentence(content), budget)


def extractive_l1(content: str, context: str, resolution: str, budget: int = 256) -> str:
    """Problem / scenario / solution in a 70/15/15 token budget; unused shares flow to the rest."""
    parts = [("", content, 70), ("Context: ", context, 15), ("Resolution: ", resolution, 15)]
    present = [(label, normalise_space(text), share) for label, text, share in parts if text.strip()]
    if not present:
        return ""
    total_share = sum(share for _, _, share in present)
    # Give each field its share; a field that needs less hands the rest to the others.
    budgets = {i: budget * share // total_share for i, (_, _, share) in enumerate(present)}
    spare = 0
    for i, (label, text, _) in enumerate(present):
        need = estimate_tokens(label + text)
        if need < budgets[i]:
            spare += budgets[i] - need
            budgets[i] = need
    for i, (label, text, _) in enumerate(present):
        need = estimate_tokens(label + text)
        if spare and need > budgets[i]:
            extra = min(spare, need - budgets[i])
            budgets[i] += extra
            spare -= extra
    lines = []
    for i, (label, text, _) in enumerate(present):
        label_tokens = estimate_tokens(label)
        kept = truncate_tokens(text, max(budgets[i] - label_tokens, 1))
        lines.append(f"{label}{kept}")
    return "\n".join(lines)
