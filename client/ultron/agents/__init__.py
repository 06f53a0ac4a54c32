"""The coding agents ``ultron setup`` wires the hub into, one adapter each.

Every hook an agent runs calls one entry point, ``ultron hook AGENT EVENT`` (``ultron.hooks``).
An adapter knows where its agent keeps its configuration, what it calls each event, and the
envelope it expects on standard output; the rest (the hub's context, the spool) is shared.

Events, as ``ultron hook`` names them:

- ``session-start``: print the hub's context block for the agent to read;
- ``stop``, ``session-end``, ``pre-compact``: queue the session's transcript for upload.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

SESSION_START = "session-start"
STOP = "stop"
SESSION_END = "session-end"
PRE_COMPACT = "pre-compact"
EVENTS = (SESSION_START, STOP, SESSION_END, PRE_COMPACT)
CAPTURE_EVENTS = (STOP, SESSION_END, PRE_COMPACT)

# A hook command ``ultron setup`` writes: "<program>" [-m ultron] hook AGENT EVENT. Any command
# of that shape is taken for ours, whichever ultron it runs (an older install's path included).
OUR_COMMAND = re.compile(r"\bultron[^\s\"']*[\"']?\s+(?:-m\s+ultron\s+)?hook\s+(?P<agent>[\w-]+)"
                         r"\s+(?P<event>[\w-]+)\s*$")
MCP_NAME = "ultron"


def _key(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


class Agent:
    name = ""
    label = ""
    event_names: dict[str, str] = {}
    timeouts: dict[str, int] = {}
    flat_hooks = False  # Cursor: {event: [{command}]}; the others: {event: [{hooks: [{type, command}]}]}
    mcp_format = "json"  # or "toml" (Codex)
    mcp_fields: dict[str, Any] = {}  # put before command and args in the MCP entry

    def home(self) -> Path:
        raise NotImplementedError

    def found(self) -> bool:
        return self.home().is_dir()

    def hooks_file(self, project: Path | None = None) -> Path:
        raise NotImplementedError

    def mcp_file(self, project: Path | None = None) -> Path:
        raise NotImplementedError

    def event(self, raw: str) -> str | None:
        """Our name for ``raw`` (``session-start``, ``SessionStart`` and ``sessionStart`` alike)."""
        wanted = _key(raw)
        for ours, theirs in self.event_names.items():
            if wanted in (_key(ours), _key(theirs)):
                return ours
        return None

    def start_envelope(self, text: str) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": self.event_names[SESSION_START], "additionalContext": text}}

    def capture_envelope(self) -> dict[str, Any] | None:
        """What a capture hook prints: None for nothing at all."""
        return {}

    def session_of(self, payload: dict[str, Any]) -> tuple[str | None, str | None]:
        """(session id, transcript path) from a hook's payload."""
        session = payload.get("session_id") or payload.get("conversation_id")
        transcript = payload.get("transcript_path")
        return (str(session) if session else None,
                str(transcript) if isinstance(transcript, str) and transcript.strip() else None)


class ClaudeCode(Agent):
    name = "claude-code"
    label = "Claude Code"
    event_names = {SESSION_START: "SessionStart", STOP: "Stop", SESSION_END: "SessionEnd",
                   PRE_COMPACT: "PreCompact"}
    # Seconds. The session-start hook stops itself at 2 s; SessionEnd would get 1.5 s undeclared.
    timeouts = {SESSION_START: 5, STOP: 5, SESSION_END: 5, PRE_COMPACT: 5}
    mcp_fields = {"type": "stdio"}  # as `claude mcp add` writes it

    def home(self) -> Path:
        configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
        return Path(configured).expanduser() if configured else Path.home() / ".claude"

    def hooks_file(self, project: Path | None = None) -> Path:
        # A project's personal settings (Claude Code keeps settings.local.json out of git).
        return project / ".claude" / "settings.local.json" if project else self.home() / "settings.json"

    def mcp_file(self, project: Path | None = None) -> Path:
        if project:
            return project / ".mcp.json"
        configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
        return self.home() / ".claude.json" if configured else Path.home() / ".claude.json"

    def capture_envelope(self) -> dict[str, Any] | None:
        return None  # Claude Code reads nothing from these events' output


class Codex(Agent):
    name = "codex"
    label = "Codex"
    event_names = {SESSION_START: "SessionStart", STOP: "Stop", SESSION_END: "SessionEnd",
                   PRE_COMPACT: "PreCompact"}
    timeouts = {SESSION_START: 5, STOP: 5, SESSION_END: 3, PRE_COMPACT: 5}  # Codex caps SessionEnd at 3 s
    mcp_format = "toml"

    def home(self) -> Path:
        configured = os.environ.get("CODEX_HOME", "").strip()
        return Path(configured).expanduser() if configured else Path.home() / ".codex"

    def hooks_file(self, project: Path | None = None) -> Path:
        return (project / ".codex" if project else self.home()) / "hooks.json"

    def mcp_file(self, project: Path | None = None) -> Path:
        return (project / ".codex" if project else self.home()) / "config.toml"


class Cursor(Agent):
    name = "cursor"
    label = "Cursor"
    event_names = {SESSION_START: "sessionStart", STOP: "stop", SESSION_END: "sessionEnd",
                   PRE_COMPACT: "preCompact"}
    timeouts = {}  # Cursor's hooks.json entries carry the command only
    flat_hooks = True

    def home(self) -> Path:
        return Path.home() / ".cursor"

    def hooks_file(self, project: Path | None = None) -> Path:
        return (project / ".cursor" if project else self.home()) / "hooks.json"

    def mcp_file(self, project: Path | None = None) -> Path:
        return (project / ".cursor" if project else self.home()) / "mcp.json"

    def start_envelope(self, text: str) -> dict[str, Any]:
        return {"additional_context": text}


AGENTS: dict[str, Agent] = {agent.name: agent for agent in (ClaudeCode(), Codex(), Cursor())}
ALIASES = {"claude": "claude-code", "claudecode": "claude-code"}


def get(name: str) -> Agent | None:
    key = name.strip().lower()
    return AGENTS.get(ALIASES.get(key.replace("-", "").replace("_", ""), key))
