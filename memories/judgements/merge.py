"""Judgement: one better memory from a memory and the duplicates merged into it. Only an LLM
can write that; without one (or when it fails) the answer is ``None`` and the memory keeps
its text, marked ``merge_pending`` for a later try."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from memories.judgements.prompts import memory_prompt, require_str
from memories.providers.llm import InvalidReply, LLMError, get_llm
from memories.text import estimate_tokens

logger = logging.getLogger("ultron.memories")


@dataclass(frozen=True)
class MergedBody:
    content: str
    context: str
    resolution: str
    tags: list[str]


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
        content = require_str(data, "content")
        context = require_str(data, "context", allow_empty=True) if "context" in data else ""
        resolution = require_str(data, "resolution", allow_empty=True) if "resolution" in data else ""
        raw_tags = data.get("tags", [])
        if not isinstance(raw_tags, list) or not all(isinstance(t, str) for t in raw_tags):
            raise InvalidReply("tags is not a list of strings")
        # A merge that throws most of the text away is not a merge.
        # min(): a current content shorter than five tokens may be merged into one as short.
        if estimate_tokens(content) < min(5, estimate_tokens(current[0])):
            raise InvalidReply("merged content is too short")
        return MergedBody(content, context, resolution, raw_tags)

    system = (
        "Merge several reports of the same experience into ONE better memory: keep every "
        "distinct fact, fix and condition, remove repetition, do not concatenate, do not invent. "
        "Write in the language of the reports. Reply with JSON only: "
        '{"content": "...", "context": "...", "resolution": "...", "tags": ["..."]}'
    )
    blocks = [f"Current memory:\n{memory_prompt(*current)}\nTags: {', '.join(tags)}"]
    for index, addition in enumerate(additions, 1):
        blocks.append(f"Duplicate report {index}:\n{memory_prompt(*addition)}")
    try:
        return llm.ask_json(
            system=system, user="\n\n".join(blocks), validate=validate, max_tokens=2000, purpose="merge"
        )
    except LLMError as exc:
        logger.warning("merge left pending: %s", exc)
        return None
