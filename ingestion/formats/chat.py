"""Chat-message rows: plain ``{role, content}``, OpenAI chat, Anthropic content blocks and Claude
Code session exports, one JSON object per line (or one JSON array of them).

Shapes: OpenAI Chat Completions messages (``tool_calls`` with ``id`` and ``function.name`` /
``function.arguments``; ``tool`` rows with ``tool_call_id``), Anthropic Messages content blocks
(``text``, ``thinking``, ``tool_use`` with ``id``/``name``/``input``, ``tool_result`` with
``tool_use_id``/``is_error``), Claude Code's ``~/.claude/projects/*/*.jsonl`` envelopes
(``{"type": "user"|"assistant", "message": {...}}`` beside progress, snapshot and summary rows).
"""

from __future__ import annotations

from typing import Any

from ingestion.formats.base import (
    ROLES,
    Collector,
    Message,
    arguments,
    call_text,
    clip,
    exit_code,
    make_call,
    result_text,
    spoken_first,
    stringify,
    thinking_text,
)

_ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "developer": "system", "function": "tool"}
# Claude Code rows that carry no conversation.
ENVELOPE_SKIP = {"progress", "file-history-snapshot", "queue-operation", "summary", "system", "attachment"}


def _failed(text: str, flag: bool) -> bool:
    code = exit_code(text)
    return flag or (code is not None and code != 0) or text.lstrip().lower().startswith(("error", "traceback"))


def _blocks(content: list[Any], message: Message) -> list[str]:
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(stringify(block.get("text", "")))
        elif kind == "thinking":
            parts.append(thinking_text(stringify(block.get("thinking", ""))))
        elif kind == "tool_use":
            name = stringify(block.get("name", "tool"))
            message.tool_names.append(name)
            message.calls.append(make_call(block.get("id"), name, arguments(block.get("input"))))
            parts.append(call_text(name, stringify(block.get("input", {}))))
        elif kind == "tool_result":
            message.is_tool_result = True
            if isinstance(block.get("tool_use_id"), str):
                message.call_ids.append(block["tool_use_id"])
            inner = block.get("content", "")
            if isinstance(inner, list):
                inner = "\n".join(stringify(b.get("text", b)) if isinstance(b, dict) else stringify(b) for b in inner)
            text = stringify(inner)
            error = _failed(text, bool(block.get("is_error"))) if text.strip() else bool(block.get("is_error"))
            message.is_error = message.is_error or error
            parts.append(result_text(text, error))
        elif kind in ("image", "document"):
            parts.append(f"[{kind}]")
    return parts


def variant(row: Any) -> str | None:
    """Which chat format a row belongs to, or None if it is not a chat row."""
    if not isinstance(row, dict):
        return None
    if "message" in row and isinstance(row.get("type"), str):
        return "claude-code"
    if "role" not in row and isinstance(row.get("type"), str) and row["type"] in ENVELOPE_SKIP:
        return "claude-code"
    if "role" not in row:
        return None
    if row.get("tool_calls") or row.get("role") == "tool" or "tool_call_id" in row:
        return "openai-chat"
    content = row.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and "type" in b for b in content):
        return "anthropic"
    return "plain"


def normalise_row(row: Any, line: int) -> tuple[Message | None, str | None]:
    """One parsed JSON row → a Message, or (None, reason) for malformed, (None, None) for skipped."""
    if not isinstance(row, dict):
        return None, "not an object"
    if "message" in row and isinstance(row.get("type"), str):  # Claude Code envelope
        # Only user and assistant envelopes carry the conversation; the other row types are Claude Code's own
        # records (progress, file snapshots, queue operations, summaries), skipped (flow.md#formats).
        if row["type"] in ENVELOPE_SKIP or row["type"] not in ("user", "assistant"):
            return None, None
        inner = row["message"]
        if not isinstance(inner, dict):
            return None, "envelope without a message object"
        row = {"role": inner.get("role", row["type"]), "content": inner.get("content"), **{
            k: inner[k] for k in ("tool_calls",) if k in inner}}
    elif "role" not in row and isinstance(row.get("type"), str) and row["type"] in ENVELOPE_SKIP:
        return None, None
    role = row.get("role")
    if not isinstance(role, str):
        return None, "missing role"
    role = _ROLE_ALIASES.get(role.lower(), role.lower())
    if role not in ROLES:
        return None, "unknown role"
    message = Message(role=role, text="", line=line)
    content = row.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(_blocks(content, message))
    elif content is not None:
        parts.append(stringify(content))
    for call in row.get("tool_calls") or []:  # OpenAI assistant tool calls
        if isinstance(call, dict):
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            name = stringify(function.get("name", call.get("name", "tool")))
            message.tool_names.append(name)
            message.calls.append(make_call(call.get("id"), name, arguments(function.get("arguments"))))
            parts.append(call_text(name, stringify(function.get("arguments", ""))))
    if role == "tool":
        message.is_tool_result = True
        if isinstance(row.get("tool_call_id"), str):
            message.call_ids.append(row["tool_call_id"])
        text = "\n".join(parts)
        message.is_error = _failed(text, bool(row.get("is_error")))
        parts = [result_text(text, message.is_error)]
    message.text = clip("\n".join(p for p in spoken_first(parts) if p and p.strip()).strip())
    if not message.text:
        return None, None  # an empty turn carries nothing
    return message, None


def parse(rows: list[tuple[int, Any]]) -> tuple[Collector, str]:
    """Chat rows → messages, and the format's name (the most specific variant met)."""
    out = Collector()
    seen: set[str] = set()
    for number, row in rows:
        kind = variant(row)
        if kind:
            seen.add(kind)
        message, reason = normalise_row(row, number)
        if message is not None:
            out.messages.append(message)
        elif reason:
            out.bad(reason)
        else:
            out.skipped += 1
    label = next((k for k in ("claude-code", "anthropic", "openai-chat") if k in seen), "plain")
    return out, label
