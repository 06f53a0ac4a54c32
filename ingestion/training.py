"""Training data: the best task segments as chat fine-tuning records (docs/api.md#training-data).

Each segment scoring at least ``min_score`` becomes one JSON line ``{"messages": [...]}`` in the
OpenAI chat fine-tuning shape: ``system`` / ``user`` / ``assistant`` messages with their text,
an assistant's tool calls as ``tool_calls`` (``{"id", "type": "function", "function": {"name",
"arguments"}}``) and each tool's output as a ``tool`` message answering its ``tool_call_id``.

A segment keeps its messages in the normalised form ingestion stores (``Message.as_dict``):
a call is the line ``[tool call NAME] ARGUMENTS`` in its assistant's text, an output the text
after ``[tool result] `` (or ``[tool result ERROR] ``), reasoning ``[thinking] …``. This module
reads that form back: calls and outputs are paired by the ids the session gave them (renamed
``call_1``, ``call_2``… so no session id leaves the hub), consecutive assistant turns (Claude
Code writes text and each call as separate rows) become one, reasoning is left out, and a call
without its output (or an output whose call lies outside the segment) is dropped, so every
record is one a fine-tuning API accepts. A segment with no assistant turn left is skipped.

The stored messages were redacted when the session was segmented; every text of a record is
redacted again here, with today's rules, before it leaves: a segment stored before a rule
existed does not leak what the rule now catches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ingestion.judgements.score import TASK_TYPES
from ingestion.selectors import segments_for_training
from memories.redaction.policy import Occasion, redact_for

__all__ = ["TASK_TYPES", "chat_messages", "sft_lines", "sft_records"]

_CALL = re.compile(r"^\[tool call ([^\]\n]*)\] ?", re.M)
_RESULT = re.compile(r"^\[tool result(?: ERROR)?\] ?", re.M)
_THINKING = "[thinking]"


def _without_thinking(text: str) -> str:
    """Text with a leading reasoning part (up to the first blank line) left out."""
    if not text.startswith(_THINKING):
        return text
    _, _, rest = text.partition("\n\n")
    return rest.strip()


def _arguments(chunk: str) -> tuple[str, str]:
    """A call's arguments (the shortest run of whole lines that is JSON, else the first line)
    and the text that follows them."""
    lines = chunk.split("\n")
    for end in range(1, len(lines) + 1):
        candidate = "\n".join(lines[:end]).strip()
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate, "\n".join(lines[end:]).strip()
    return lines[0].strip(), "\n".join(lines[1:]).strip()


def _assistant(message: dict[str, Any], new_id: Any) -> dict[str, Any]:
    text = message.get("text", "")
    markers = list(_CALL.finditer(text))
    parts = [_without_thinking(text[: markers[0].start()] if markers else text).strip()]
    calls = list(message.get("calls") or [])
    tool_calls = []
    for number, marker in enumerate(markers):
        end = markers[number + 1].start() if number + 1 < len(markers) else len(text)
        arguments, after = _arguments(text[marker.end() : end])
        original = calls[number].get("id", "") if number < len(calls) else ""
        tool_calls.append({"id": new_id(original), "type": "function",
                           "function": {"name": marker.group(1).strip() or "tool", "arguments": arguments}})
        parts.append(after)
    content = "\n\n".join(p for p in parts if p)
    out: dict[str, Any] = {"role": "assistant"}
    if content:
        out["content"] = content
    if tool_calls:
        out["tool_calls"] = tool_calls
    return out


def _results(message: dict[str, Any]) -> tuple[list[tuple[str, str]], str]:
    """A tool-result message's outputs as (original call id or "", output), and any other text."""
    text = message.get("text", "")
    markers = list(_RESULT.finditer(text))
    if not markers:
        return [], text.strip()
    ids = list(message.get("call_ids") or [])
    outputs = []
    for number, marker in enumerate(markers):
        end = markers[number + 1].start() if number + 1 < len(markers) else len(text)
        outputs.append((ids[number] if number < len(ids) else "", text[marker.end() : end].strip()))
    return outputs, text[: markers[0].start()].strip()


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A segment's stored messages as OpenAI chat fine-tuning messages (not yet redacted)."""
    renamed: dict[str, str] = {}
    counter = iter(range(1, 1_000_000))

    # Fresh ids only, so that no id the session gave leaves the hub; ``renamed`` pairs outputs with them.
    def new_id(original: Any) -> str:
        fresh = f"call_{next(counter)}"
        if original:
            renamed.setdefault(str(original), fresh)
        return fresh

    out: list[dict[str, Any]] = []
    unanswered: list[str] = []  # calls of the latest assistant turn still waiting for their output
    for message in messages:
        role = message.get("role")
        if message.get("tool_result") or role == "tool":
            outputs, other = _results(message)
            for original, output in outputs:
                # An output without an id answers the oldest call still waiting, as in chains.steps_of.
                call_id = renamed.get(original) if original else (unanswered[0] if unanswered else None)
                # A tool message must follow its call's turn (or another output of it): a fine-tuning API refuses a
                # record where it does not.
                if call_id in unanswered and out and out[-1]["role"] in ("assistant", "tool"):
                    unanswered.remove(call_id)
                    out.append({"role": "tool", "tool_call_id": call_id, "content": output})
            if other:
                out.append({"role": "user", "content": other})
            continue
        if role == "assistant":
            turn = _assistant(message, new_id)
            if len(turn) == 1:
                continue  # only reasoning
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and not last.get("tool_calls"):
                if "content" in turn:  # text, then more text or calls, in one turn
                    last["content"] = "\n\n".join(p for p in (last.get("content"), turn["content"]) if p)
                if "tool_calls" in turn:
                    last["tool_calls"] = turn["tool_calls"]
                turn = last
            elif last is not None and last["role"] == "assistant" and "content" not in turn:
                last["tool_calls"] += turn["tool_calls"]  # parallel calls, one row each
                turn = last
            else:
                out.append(turn)
            unanswered = [call["id"] for call in turn.get("tool_calls", [])]
            continue
        if role in ("user", "system") and message.get("text", "").strip():
            out.append({"role": role, "content": message["text"].strip()})
    return _answered_only(out)


def _answered_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop calls that got no output (the segment ended, or the output was lost) and assistant
    turns left with nothing."""
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    kept = []
    for message in messages:
        if message["role"] == "assistant" and "tool_calls" in message:
            calls = [c for c in message["tool_calls"] if c["id"] in answered]
            message = {k: v for k, v in message.items() if k != "tool_calls"}
            if calls:
                message["tool_calls"] = calls
            if len(message) == 1:
                continue
        kept.append(message)
    return kept


def _redacted(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every text of the record through redaction, in one batch."""
    slots: list[tuple[dict[str, Any], str]] = []
    for message in messages:
        if "content" in message:
            slots.append((message, "content"))
        for call in message.get("tool_calls", []):
            slots.append((call["function"], "name"))
            slots.append((call["function"], "arguments"))
    for (holder, key), result in zip(slots, redact_for(Occasion.TRAINING, [h[k] for h, k in slots]), strict=True):
        holder[key] = result.text
    return messages


def sft_records(
    *, min_score: float, task_type: str | None = None, since: datetime | None = None,
    space_ids: list[int] | None = None,
) -> Iterator[dict[str, Any]]:
    """One ``{"messages": [...]}`` record per segment scoring at least ``min_score`` (of
    ``task_type``, created at or after ``since``, of ``space_ids``), oldest first, redacted."""
    for segment in segments_for_training(min_score=min_score, task_type=task_type, since=since,
                                         space_ids=space_ids):
        messages = chat_messages(segment.messages)
        if any(m["role"] == "assistant" for m in messages):
            yield {"messages": _redacted(messages)}


def sft_lines(*, min_score: float, task_type: str | None = None, since: datetime | None = None,
              space_ids: list[int] | None = None) -> Iterator[str]:
    """:func:`sft_records` as JSON lines (JSONL, each ending in a newline)."""
    for record in sft_records(min_score=min_score, task_type=task_type, since=since, space_ids=space_ids):
        yield json.dumps(record, ensure_ascii=False) + "\n"
