"""What every session format is normalised to (``Message``, ``ParsedSession``) and the small
helpers the format parsers share: clipping, the target of a tool call, exit codes in tool output.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ROLES = {"user", "assistant", "system", "tool"}
MAX_MESSAGE_CHARS = 20_000
THINKING_CHARS = 600
CALL_CHARS = 2_000
RESULT_CHARS = 4_000
TARGET_CHARS = 500

# Tools whose target is the command they run, and tools whose target is the file they touch
# (names compared lower-cased, across the formats: Claude Code, Codex, SWE-agent, OpenHands, Gemini CLI).
SHELL_TOOLS = {
    "bash", "shell", "shell_command", "local_shell", "local_shell_call", "container.exec", "exec_command",
    "run_shell_command", "execute_bash", "execute_command", "run_command", "terminal", "run", "cmdrunaction",
}
FILE_TOOLS = {
    "edit", "write", "read", "multiedit", "notebookedit", "notebookread", "str_replace_editor",
    "str_replace_based_edit_tool", "file_editor", "edit_file", "write_file", "read_file", "replace",
    "create_file", "create", "open", "view", "apply_patch", "fileeditaction", "filereadaction",
    "filewriteaction",
}
_PATH_KEYS = ("file_path", "path", "absolute_path", "notebook_path", "filename", "target_file", "file")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
# "Exit code: 1" (Codex), "Process exited with code 1" (Codex exec_command), "Exit Code: 1" (Gemini
# CLI), "[Command finished with exit code 1]" / "[The command completed with exit code 1.]"
# (OpenHands), "exit status 1" (Go and friends): looked for in the first and last lines only, so a
# file that merely mentions an exit code is not taken for a failure.
_EXIT = re.compile(
    r"^\W*(?:exit code|exit status|exit_code|process exited with code|command finished with exit code|"
    r"the command completed with exit code)\W*(-?\d+)",
    re.I,
)


@dataclass
class Message:
    role: str
    text: str
    line: int
    is_tool_result: bool = False
    is_error: bool = False
    tool_names: list[str] = field(default_factory=list)
    # Tool calls made in this message: {"id", "name", "target"} (target: the command of a shell
    # tool, the path of a file tool, else ""). On tool results: the ids of the calls answered.
    calls: list[dict[str, str]] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text, "line": self.line, "tool_result": self.is_tool_result,
                "error": self.is_error, "tools": self.tool_names, "calls": self.calls, "call_ids": self.call_ids}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(data["role"], data["text"], data["line"], data.get("tool_result", False),
                   data.get("error", False), list(data.get("tools", [])),
                   [dict(c) for c in data.get("calls", [])], list(data.get("call_ids", [])))


@dataclass
class ParsedSession:
    messages: list[Message]
    lines: int
    malformed: Counter
    skipped: int
    format: str = ""  # claude-code, anthropic, openai-chat, plain, codex, swe-agent, openhands, aider, gemini-cli
    reason: str = ""  # why there are no messages, when there are none


class Collector:
    """Messages, malformed rows by reason and skipped rows, as a format parser meets them."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.malformed: Counter = Counter()
        self.skipped = 0

    def add(self, message: Message | None) -> None:
        if message is None:
            self.skipped += 1
        else:
            self.messages.append(message)

    def bad(self, reason: str) -> None:
        self.malformed[reason] += 1

    def session(self, fmt: str, lines: int) -> ParsedSession:
        return ParsedSession(self.messages, lines, self.malformed, self.skipped, fmt)


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" …[{len(text) - limit} more characters]"


def stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    """Text of a content value: a string, or a list of text parts ({"text": …} or strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return "" if value is None else stringify(value)


def build(role: str, line: int, parts: list[str], **fields: Any) -> Message | None:
    """A message from its text parts, or None when nothing is left (an empty turn carries nothing)."""
    text = clip("\n".join(p for p in parts if p and p.strip()).strip())
    return Message(role=role, text=text, line=line, **fields) if text else None


def arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict: OpenAI-style JSON strings are decoded; anything else is {}."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}


def command_text(command: Any) -> str:
    """A shell command as one string; ``["bash", "-lc", "make test"]`` is ``make test``."""
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        # Codex runs commands as ["bash", "-lc", "…"]: the command inside is what the chains compare.
        if len(command) == 3 and command[1] in ("-lc", "-c") and command[0].rsplit("/", 1)[-1] in (
                "bash", "sh", "zsh"):
            return command[2]
        return shlex.join(command)
    return ""


def call_target(name: str, args: dict[str, Any], raw: str = "") -> str:
    """The command of a shell tool, the file of a file tool, else "" (clipped to 500 characters)."""
    lowered = name.lower()
    target = ""
    # Known shell tools, and tools of the user's own naming (OpenAI-style functions) that take a command.
    if lowered in SHELL_TOOLS or (lowered not in FILE_TOOLS and ("command" in args or "cmd" in args)):
        target = command_text(args.get("command", args.get("cmd")))
    elif lowered == "apply_patch":
        patch = args.get("input") or args.get("patch") or raw
        found = _PATCH_FILE.search(patch) if isinstance(patch, str) else None
        target = found.group(1).strip() if found else ""
    if not target and (lowered in FILE_TOOLS or "file_path" in args or "notebook_path" in args):
        target = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]), "")
    return target.strip()[:TARGET_CHARS]


def make_call(call_id: Any, name: str, args: dict[str, Any], raw: str = "") -> dict[str, str]:
    return {"id": call_id if isinstance(call_id, str) else "" if call_id is None else str(call_id),
            "name": name, "target": call_target(name, args, raw)}


def exit_code(text: str) -> int | None:
    """An exit code reported in the first or last lines of a tool's output, if any."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for line in lines[:3] + lines[-4:]:
        found = _EXIT.match(line)
        if found:
            return int(found.group(1))
    return None


def looks_failed(text: str) -> bool:
    """A tool output that reports its own failure: a non-zero exit code, or an error first."""
    code = exit_code(text)
    if code is not None:
        return code != 0
    return text.lstrip().lower().startswith(("error", "traceback", "fatal:"))


def call_text(name: str, args: str) -> str:
    return f"[tool call {name}] {clip(args, CALL_CHARS)}"


def result_text(text: str, error: bool) -> str:
    return f"[tool result{' ERROR' if error else ''}] {clip(text, RESULT_CHARS)}"


def spoken_first(parts: list[str]) -> list[str]:
    """A turn's parts with what the agent says to the user ahead of its thinking, so that a turn
    that thinks and then answers reads as an answer (the readers know a turn by how it begins:
    ``[thinking]``, ``[tool call …]`` or words said aloud). Thinking stays ahead of tool calls."""
    said = [p for p in parts if not p.startswith(("[thinking]", "[tool call", "[tool result"))]
    if not said or not parts or not parts[0].startswith("[thinking]"):
        return parts
    return said + [p for p in parts if p not in said]


def thinking_text(text: str) -> str:
    return f"[thinking] {clip(text, THINKING_CHARS)}" if text.strip() else ""
