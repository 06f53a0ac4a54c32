"""The memory service's model-backed judgements, each with its offline fallback.

- ``classify``: the memory type (LLM, else rules).
- ``summarize``: L0 and L1 (LLM, else extractive).
- ``same_subject``: the 0.75-0.85 similarity band (LLM, else "not a duplicate").
- ``merge``: one better memory from a memory and its duplicates (LLM, else ``None``:
  the memory keeps its text and stays ``merge_pending``).

Everything passed here has already been redacted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from memories.models import MemoryType
from memories.providers.llm import InvalidReply, LLMError, get_llm
from memories.text import (
    classify_offline,
    estimate_tokens,
    extractive_l0,
    extractive_l1,
    normalise_space,
    truncate_tokens,
)

logger = logging.getLogger("ultron.memories")

L0_TOKENS = 64
L1_TOKENS = 256
_FIELD_PROMPT_TOKENS = 3000  # per field, so one huge memory cannot blow the input budget


@dataclass(frozen=True)
class MergedBody:
    content: str
    context: str
    resolution: str
    tags: list[str]


def _body(content: str, context: str, resolution: str) -> str:
    parts = [f"Content: {truncate_tokens(content, _FIELD_PROMPT_TOKENS)}"]
    if context:
        parts.append(f"Context: {truncate_tokens(context, _FIELD_PROMPT_TOKENS)}")
    if resolution:
        parts.append(f"Resolution: {truncate_tokens(resolution, _FIELD_PROMPT_TOKENS)}")
    return "\n".join(parts)


def _require_str(data: Any, key: str, *, allow_empty: bool = False) -> str:
    if not isinstance(data, dict):
        raise InvalidReply("reply is not an object")
    value = data.get(key)
    if not isinstance(value, str):
        raise InvalidReply(f"{key} is not a string")
    value = value.strip()
    if not value and not allow_empty:
        raise InvalidReply(f"{key} is empty")
    return value


def classify(content: str, context: str, resolution: str) -> str:
    llm = get_llm()
    if not llm.available:
        return classify_offline(content, context, resolution)

    def validate(data: Any) -> str:
        value = _require_str(data, "memory_type").lower()
        if value not in MemoryType.values:
            raise InvalidReply(f"unknown memory_type {value!r}")
        return value

    system = (
        "You classify one piece of shared agent experience. Types: "
        "error (an error or failure and how it was fixed), security (vulnerabilities, leaked "
        "secrets, unsafe practice), correction (a mistaken belief corrected), pattern (a "
        "reusable approach or best practice), preference (how a user or team wants things "
        "done), life (a shareable everyday fact). Reply with JSON only: "
        '{"memory_type": "<type>"}'
    )
    try:
        return llm.ask_json(
            system=system, user=_body(content, context, resolution), validate=validate,
            max_tokens=50, purpose="classify",
        )
    except LLMError as exc:
        logger.warning("classification fell back to rules: %s", exc)
        return classify_offline(content, context, resolution)


def summarize(content: str, context: str, resolution: str) -> tuple[str, str]:
    llm = get_llm()
    if not llm.available:
        return extractive_l0(content, L0_TOKENS), extractive_l1(content, context, resolution, L1_TOKENS)

    def validate(data: Any) -> tuple[str, str]:
        l0 = normalise_space(_require_str(data, "summary_l0"))
        l1 = _require_str(data, "overview_l1")
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
            system=system, user=_body(content, context, resolution), validate=validate,
            max_tokens=600, purpose="summarize",
        )
    except LLMError as exc:
        logger.warning("summaries fell back to extractive: %s", exc)
        return extractive_l0(content, L0_TOKENS), extractive_l1(content, context, resolution, L1_TOKENS)


def same_subject(new: tuple[str, str, str], existing: tuple[str, str, str]) -> bool:
    """Do two memories in the soft-similarity band share one core subject? Without an LLM, or
    when it fails, the answer is no: a wrong merge destroys knowledge, a missed one does not."""
    llm = get_llm()
    if not llm.available:
        return False

    def validate(data: Any) -> bool:
        if not isinstance(data, dict) or not isinstance(data.get("same_subject"), bool):
            raise InvalidReply("same_subject is not a boolean")
        return bool(data["same_subject"])

    system = (
        "Two pieces of agent experience are given. Answer whether they describe the same core "
        "subject (the same problem, fix, rule or fact), so that one merged memory could "
        'replace both. Reply with JSON only: {"same_subject": true} or {"same_subject": false}'
    )
    user = f"A:\n{_body(*new)}\n\nB:\n{_body(*existing)}"
    try:
        return llm.ask_json(system=system, user=user, validate=validate, max_tokens=20, purpose="same_subject")
    except LLMError as exc:
        logger.warning("same-subject check failed, treating as distinct: %s", exc)
        return False


def merge(
    current: tuple[str, str, str], additions: list[tuple[str, str, str]], tags: list[str]
) -> MergedBody | None:
    """Synthesize one memory from ``current`` and its duplicate ``additions``.

    Returns ``None`` when no LLM is configured or it fails: the caller keeps the text and
    leaves the memory ``merge_pending``.
    """
    llm = get_llm()
    if not llm.available or not additions:
        return None

    def validate(data: Any) -> MergedBody:
        content = _require_str(data, "content")
        context = _require_str(data, "context", allow_empty=True) if "context" in data else ""
        resolution = _require_str(data, "resolution", allow_empty=True) if "resolution" in data else ""
        raw_tags = data.get("tags", [])
        if not isinstance(raw_tags, list) or not all(isinstance(t, str) for t in raw_tags):
            raise InvalidReply("tags is not a list of strings")
        # A merge that throws most of the text away is not a merge.
        if estimate_tokens(content) < min(5, estimate_tokens(current[0])):
            raise InvalidReply("merged content is too short")
        return MergedBody(content, context, resolution, raw_tags)

    system = (
        "Merge several reports of the same experience into ONE better memory: keep every "
        "distinct fact, fix and condition, remove repetition, do not concatenate, do not invent. "
        "Write in the language of the reports. Reply with JSON only: "
        '{"content": "...", "context": "...", "resolution": "...", "tags": ["..."]}'
    )
    blocks = [f"Current memory:\n{_body(*current)}\nTags: {', '.join(tags)}"]
    for index, addition in enumerate(additions, 1):
        blocks.append(f"Duplicate report {index}:\n{_body(*addition)}")
    try:
        return llm.ask_json(
            system=system, user="\n\n".join(blocks), validate=validate, max_tokens=2000, purpose="merge"
        )
    except LLMError as exc:
        logger.warning("merge left pending: %s", exc)
        return None


def llm_available() -> bool:
    return get_llm().available


def extractive_summaries(content: str, context: str, resolution: str) -> tuple[str, str]:
    return extractive_l0(content, L0_TOKENS), extractive_l1(content, context, resolution, L1_TOKENS)
