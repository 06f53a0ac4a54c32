"""Our table in Codex's ``config.toml``, edited as text: the file is the user's, with their
comments and layout, and the standard library only reads TOML (``tomllib``, Python 3.11+). We
append one marked table and later remove exactly that table; everything else keeps its bytes.
Where ``tomllib`` exists, the edited text is parsed before it is written, so a file we could not
extend safely (an inline ``mcp_servers = {...}`` table, say) is left alone."""

from __future__ import annotations

import json
from typing import Any

from ultron.agents import MCP_NAME

MARKER = "# Added by `ultron setup`; `ultron setup --uninstall` removes this table."
HEADER = f"[mcp_servers.{MCP_NAME}]"

try:
    import tomllib
except ImportError:  # Python 3.10: edits go unchecked; doctor says it cannot tell
    tomllib = None  # type: ignore[assignment]


def read(text: str) -> dict[str, Any] | None:
    """The parsed document, or None when it cannot be parsed (or there is no parser)."""
    if tomllib is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def block(entry: dict[str, Any]) -> str:
    lines = [MARKER, HEADER, f"command = {_string(entry['command'])}",
             "args = [" + ", ".join(_string(a) for a in entry["args"]) + "]"]
    if entry.get("env"):
        pairs = ", ".join(f"{k} = {_string(v)}" for k, v in entry["env"].items())
        lines.append(f"env = {{ {pairs} }}")
    return "\n".join(lines) + "\n"


def _span(lines: list[str]) -> tuple[int, int] | None:
    """Where our marked table stands: [first line, end) including the blank line before it."""
    for i, line in enumerate(lines):
        if line.strip() == HEADER and i > 0 and lines[i - 1].strip() == MARKER:
            end = i + 1
            while end < len(lines):
                head = lines[end].lstrip()
                if head.startswith("[") and not head.startswith(f"[mcp_servers.{MCP_NAME}."):
                    break
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1  # the blank lines before the next table are not ours
            start = i - 1
            if start > 0 and not lines[start - 1].strip():
                start -= 1
            return start, end
    return None


def has_server(text: str) -> bool | None:
    """Whether an ``ultron`` MCP server is configured (None: cannot parse)."""
    data = read(text)
    if data is None:
        return None if tomllib is None or text.strip() else False
    servers = data.get("mcp_servers")
    return isinstance(servers, dict) and MCP_NAME in servers


def add(text: str, entry: dict[str, Any]) -> tuple[str | None, str]:
    """(new text or None, status): ``added``, ``present``, ``foreign`` (someone else's ``ultron``
    server) or ``unsafe`` (the result would not parse)."""
    lines = text.splitlines(keepends=True)
    wanted = block(entry)
    span = _span(lines)
    if span is not None:
        start, end = span
        current = "".join(line for line in lines[start:end] if line.strip())
        if current == wanted:
            return None, "present"
        head = "".join(lines[:start])
        new = head + ("\n" if head.strip() else "") + wanted + "".join(lines[end:])
    else:
        if tomllib is not None and has_server(text):
            return None, "foreign"
        body = text if not text or text.endswith("\n") else text + "\n"
        new = body + ("\n" if body.strip() else "") + wanted
    if tomllib is not None and read(new) is None:
        return None, "unsafe"
    return new, "added"


def remove(text: str) -> str | None:
    """The text without our table (None when it is not there)."""
    lines = text.splitlines(keepends=True)
    span = _span(lines)
    if span is None:
        return None
    start, end = span
    return "".join(lines[:start] + lines[end:])
