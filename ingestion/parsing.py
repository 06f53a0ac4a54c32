"""Conversation ``.jsonl`` in the formats agents produce, normalised to ``Message`` rows.

Formats: plain ``{role, content}``; OpenAI chat (assistant ``tool_calls``, ``tool`` rows);
Anthropic content blocks (``text``, ``tool_use``, ``tool_result``, ``thinking``); Claude Code
session exports (envelope rows with ``type`` and ``message``; progress, snapshots and other
non-message rows are skipped). A whole file holding one JSON array of such rows is accepted too.
Malformed lines are counted by reason and never abort the file.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ROLES = {"user", "assistant", "system", "tool"}
_ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "developer": "system", "function": "tool"}
# Claude Code rows that carry no conversation.
_ENVELOPE_SKIP = {"progress", "file-history-snapshot", "queue-operation", "summary", "system", "attachment"}
MAX_MESSAGE_CHARS = 20_000
_THINKING_CHARS = 600


@dataclass
class Message:
    role: str
    text: str
    line: int
    is_tool_result: bool = False
    is_error: bool = False
    tool_names: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text, "line": self.line, "tool_result": self.is_tool_result,
                "error": self.is_error, "tools": self.tool_names}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(data["role"], data["text"], data["line"], data.get("tool_result", False),
                   data.get("error", False), list(data.get("tools", [])))


@dataclass
class ParsedSession:
    messages: list[Message]
    lines: int
    malformed: Counter
    skipped: int


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" …[{len(text) - limit} more characters]"


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


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
            parts.append(_stringify(block.get("text", "")))
        elif kind == "thinking":
            thought = _stringify(block.get("thinking", ""))
            if thought.strip():
                parts.append(f"[thinking] {_clip(thought, _THINKING_CHARS)}")
        elif kind == "tool_use":
            name = _stringify(block.get("name", "tool"))
            message.tool_names.append(name)
            parts.append(f"[tool call {name}] {_clip(_stringify(block.get('input', {})), 2000)}")
        elif kind == "tool_result":
            message.is_tool_result = True
            error = bool(block.get("is_error"))
            message.is_error = message.is_error or error
            inner = block.get("content", "")
            if isinstance(inner, list):
                inner = "\n".join(_stringify(b.get("text", b)) if isinstance(b, dict) else _stringify(b) for b in inner)
            parts.append(f"[tool result{' ERROR' if error else ''}] {_clip(_stringify(inner), 4000)}")
        elif kind in ("image", "document"):
            parts.append(f"[{kind}]")
    return parts


def normalise_row(row: Any, line: int) -> tuple[Message | None, str | None]:
    """One parsed JSON row → a Message, or (None, reason) for malformed, (None, None) for skipped."""
    if not isinstance(row, dict):
        return None, "not an object"
    if "message" in row and isinstance(row.get("type"), str):  # Claude Code envelope
        if row["type"] in _ENVELOPE_SKIP or row["type"] not in ("user", "assistant"):
            return None, None
        inner = row["message"]
        if not isinstance(inner, dict):
            return None, "envelope without a message object"
        row = {"role": inner.get("role", row["type"]), "content": inner.get("content"), **{
            k: inner[k] for k in ("tool_calls",) if k in inner}}
    elif "role" not in row and isinstance(row.get("type"), str) and row["type"] in _ENVELOPE_SKIP:
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
        parts.append(_stringify(content))
    for call in row.get("tool_calls") or []:  # OpenAI assistant tool calls
        if isinstance(call, dict):
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            name = _stringify(function.get("name", call.get("name", "tool")))
            message.tool_names.append(name)
            parts.append(f"[tool call {name}] {_clip(_stringify(function.get('arguments', '')), 2000)}")
    if role == "tool":
        message.is_tool_result = True
        text = "\n".join(parts)
        message.is_error = bool(row.get("is_error")) or text.lstrip().lower().startswith(("error", "traceback"))
        parts = [f"[tool result{' ERROR' if message.is_error else ''}] {_clip(text, 4000)}"]
    message.text = _clip("\n".join(p for p in parts if p and p.strip()).strip())
    if not message.text:
        return None, None  # an empty turn carries nothing
    return message, None


def parse_jsonl(data: bytes) -> ParsedSession:
    messages: list[Message] = []
    malformed: Counter = Counter()
    skipped = 0
    stripped = data.lstrip()
    rows: list[tuple[int, Any]] | None = None
    if stripped.startswith(b"["):  # a whole-file JSON array of rows
        try:
            array = json.loads(data.decode("utf-8"))
            if isinstance(array, list):
                rows = list(enumerate(array, 1))
        except (UnicodeDecodeError, ValueError):
            rows = None
    if rows is None:
        rows = []
        for number, raw in enumerate(data.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                malformed["bad encoding"] += 1
                continue
            if "\x00" in text:
                malformed["binary data"] += 1
                continue
            try:
                rows.append((number, json.loads(text)))
            except ValueError:
                malformed["bad JSON"] += 1
    lines = len(data.splitlines())
    for number, row in rows:
        message, reason = normalise_row(row, number)
        if message is not None:
            messages.append(message)
        elif reason:
            malformed[reason] += 1
        else:
            skipped += 1
    return ParsedSession(messages=messages, lines=lines, malformed=malformed, skipped=skipped)
