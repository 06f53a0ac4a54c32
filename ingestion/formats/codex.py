"""Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Shape, from openai/codex ``codex-rs/protocol/src/protocol.rs`` (``RolloutLine``: ``timestamp``
plus a ``RolloutItem`` tagged ``type``/``payload``: ``session_meta``, ``response_item``,
``compacted``, ``turn_context``, ``event_msg``) and ``codex-rs/protocol/src/models.rs``
(``ResponseItem``: ``message`` {role, content: [input_text|output_text|input_image]},
``reasoning`` {summary: [summary_text], content?}, ``function_call`` {name, arguments (a JSON
string), call_id}, ``function_call_output`` {call_id, output}, ``local_shell_call`` {call_id,
action: {type: exec, command: [...]}}, ``custom_tool_call`` {name, input, call_id} and its
output, ``web_search_call``). Shell output reaches the model as ``{"output", "metadata":
{"exit_code", "duration_seconds"}}`` or as text headed ``Exit code: N`` / ``Process exited with
code N`` (``codex-rs/core/src/tools/mod.rs``, ``handlers/unified_exec.rs``). Early rollouts wrote
the bare ``ResponseItem`` rows after a first metadata line; they are read the same way.

``event_msg`` rows repeat the conversation for the UI (user_message, agent_message, …) and are
skipped, as are the harness's own injected user turns (environment context, AGENTS.md, …).
"""

from __future__ import annotations

import json
from typing import Any

from ingestion.formats.base import (
    Collector,
    Message,
    arguments,
    build,
    call_text,
    exit_code,
    looks_failed,
    make_call,
    obj,
    result_text,
    stringify,
    text_of,
    thinking_text,
)

ROW_TYPES = {"session_meta", "response_item", "compacted", "turn_context", "event_msg"}
ITEM_TYPES = {"message", "reasoning", "function_call", "function_call_output", "local_shell_call",
              "custom_tool_call", "custom_tool_call_output", "web_search_call"}
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>",
             "<turn_aborted>")
_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}


def claims(row: Any) -> bool:
    if not isinstance(row, dict):
        return False
    if row.get("type") in ROW_TYPES and isinstance(row.get("payload"), dict):
        return True
    return row.get("type") in ITEM_TYPES and "payload" not in row and ("call_id" in row or "role" in row
                                                                        or "summary" in row)


def _output(value: Any) -> tuple[str, bool]:
    """Tool output → (text, failed)."""
    success: Any = None
    if isinstance(value, dict):  # older rollouts: {"content", "success"}
        success = value.get("success")
        value = value.get("content", "")
    if isinstance(value, list):  # content items
        value = text_of(value)
    text = stringify(value)
    code = None
    if text.startswith("{"):
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and "output" in decoded:
            metadata = decoded.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            text = stringify(decoded["output"])
    if not isinstance(code, int):
        code = exit_code(text)
    failed = success is False or (code != 0 if code is not None else looks_failed(text))
    return text, failed


def _call(item: dict[str, Any], line: int) -> Message | None:
    kind = item["type"]
    call_id = item.get("call_id") or item.get("id")
    if kind == "local_shell_call":
        action = obj(item.get("action"))
        name, raw, args = "local_shell", stringify(action), {"command": action.get("command")}
    elif kind == "web_search_call":
        name, raw, args = "web_search", stringify(item.get("action", {})), {}
    elif kind == "custom_tool_call":
        name, raw = stringify(item.get("name", "tool")), stringify(item.get("input", ""))
        args = arguments(raw)
    else:
        name, raw = stringify(item.get("name", "tool")), stringify(item.get("arguments", ""))
        args = arguments(raw)
    return build("assistant", line, [call_text(name, raw)], tool_names=[name],
                 calls=[make_call(call_id, name, args, raw)])


def _item(item: dict[str, Any], line: int) -> Message | None:
    kind = item.get("type")
    if kind == "message":
        role = {"developer": "system"}.get(str(item.get("role")), str(item.get("role")))
        if role not in ("user", "assistant", "system"):
            return None
        parts = []
        for block in item.get("content") or []:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and block.get("type") == "input_image":
                parts.append("[image]")
        text = "\n".join(parts)
        # The harness's injected turns (environment context, AGENTS.md) are not the user speaking: read as
        # goal turns, they would split and label segments.
        if role == "user" and text.lstrip().startswith(_INJECTED):
            return None
        return build(role, line, [text])
    if kind == "reasoning":
        text = "\n".join(filter(None, [text_of(item.get("summary")), text_of(item.get("content"))]))
        return build("assistant", line, [thinking_text(text)])
    if kind in _CALLS:
        return _call(item, line)
    if kind in ("function_call_output", "custom_tool_call_output"):
        text, failed = _output(item.get("output"))
        ids = [item["call_id"]] if isinstance(item.get("call_id"), str) else []
        # An empty output still answers its call: without it, the call would look unanswered to the chains
        # and to the training export.
        return build("tool", line, [result_text(text or "(no output)", failed)], is_tool_result=True,
                     is_error=failed, call_ids=ids)
    return None  # ghost snapshots, compaction markers, item types to come


def parse(rows: list[tuple[int, Any]]) -> Collector:
    out = Collector()
    for number, row in rows:
        if not isinstance(row, dict):
            out.bad("not an object")
            continue
        if row.get("type") == "response_item":
            item = row.get("payload")
        elif row.get("type") in ITEM_TYPES and "payload" not in row:
            item = row  # early rollouts: bare response items
        else:
            out.skipped += 1  # session_meta, turn_context, event_msg, compacted, state rows
            continue
        if not isinstance(item, dict):
            out.bad("response item without a payload object")
            continue
        out.add(_item(item, number))
    return out
