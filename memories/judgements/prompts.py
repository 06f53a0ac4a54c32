"""What every judgement's LLM path shares: how a memory is shown to the model, how a reply
field is checked, and whether a model is configured at all."""

from __future__ import annotations

from typing import Any

from memories.providers.llm import InvalidReply, get_llm
from memories.text import truncate_tokens

FIELD_PROMPT_TOKENS = 3000  # per field, so one huge memory cannot blow the input budget


def llm_available() -> bool:
    return get_llm().available


def memory_prompt(content: str, context: str, resolution: str) -> str:
    parts = [f"Content: {truncate_tokens(content, FIELD_PROMPT_TOKENS)}"]
    if context:
        parts.append(f"Context: {truncate_tokens(context, FIELD_PROMPT_TOKENS)}")
    if resolution:
        parts.append(f"Resolution: {truncate_tokens(resolution, FIELD_PROMPT_TOKENS)}")
    return "\n".join(parts)


def require_str(data: Any, key: str, *, allow_empty: bool = False) -> str:
    if not isinstance(data, dict):
        raise InvalidReply("reply is not an object")
    value = data.get(key)
    if not isinstance(value, str):
        raise InvalidReply(f"{key} is not a string")
    value = value.strip()
    if not value and not allow_empty:
        raise InvalidReply(f"{key} is empty")
    return value
