"""``ultron setup`` and ``ultron setup --uninstall``: register the hub with the agents found on
this machine (their MCP server entry and their hooks), and take it all out again.

Setup writes nothing that is already right (a second run leaves every byte as it was), writes
no token (the MCP server and the hooks read the login from the client's own 0600 config file),
and writes into a project folder only when ``--project DIR`` names one. Every file it changes is
logged first (``ultron.agents.edits``); uninstall replays the log backwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ultron.agents import AGENTS, EVENTS, Agent, jsonfiles, tomlfile
from ultron.agents.edits import (
    EditLog,
    atomic_write,
    read_bytes,
    remove_created_dirs,
    restore,
    unchanged_since_written,
)
from ultron.localstate import command_line, display, ultron_argv


@dataclass
class Change:
    agent: str
    what: str  # "MCP server" or "hooks"
    path: Path
    status: str  # added, present, foreign, unsafe, invalid / restored, removed, cleaned, kept, gone
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "what": self.what, "path": str(self.path), "status": self.status,
                "detail": self.detail}


def choose(name: str | None) -> tuple[list[Agent], list[Agent]]:
    """(agents to set up, agents skipped as not found). ``--agent X`` forces one; ``all`` or
    nothing means every agent whose config directory exists."""
    if name and name != "all":
        return [AGENTS[name]], []
    found = [a for a in AGENTS.values() if a.found()]
    return found, [a for a in AGENTS.values() if a not in found]


def hook_commands(agent: Agent, argv: list[str]) -> dict[str, str]:
    return {event: command_line([*argv, "hook", agent.name, event]) for event in EVENTS}


def mcp_env() -> dict[str, str] | None:
    """The variables the MCP server needs to find the login when the agent starts it with a
    bare environment (Codex passes few): only a non-default config directory, never a token."""
    configured = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return {"XDG_CONFIG_HOME": configured} if configured and Path(configured).is_absolute() else None


def _edit_json(log: EditLog, path: Path, agent: Agent, kind: str,
               mutate: Callable[[dict[str, Any]], str]) -> tuple[str, str]:
    current = read_bytes(path)
    try:
        data, style = jsonfiles.parse(current.decode("utf-8") if current else "")
        status = mutate(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return "invalid", f"{exc}; left unchanged"
    if status == "added":
        log.write(path, jsonfiles.dump(data, style).encode("utf-8"), agent=agent.name, kind=kind)
    return status, ""


def install_agent(log: EditLog, agent: Agent, *, project: Path | None, argv: list[str]) -> list[Change]:
    changes: list[Change] = []
    entry = {**agent.mcp_fields, **jsonfiles.mcp_entry(argv, mcp_env())}
    mcp_path = agent.mcp_file(project)
    ours_before = str(mcp_path) in log.files
    if agent.mcp_format == "toml":
        current = read_bytes(mcp_path)
        text = current.decode("utf-8", errors="strict") if current else ""
        new, status = tomlfile.add(text, entry)
        if new is not None:
            log.write(mcp_path, new.encode("utf-8"), agent=agent.name, kind="mcp-toml")
        detail = "" if status != "unsafe" else "the file would not parse with our table; add it by hand:\n" + \
            tomlfile.block(entry)
    else:
        status, detail = _edit_json(log, mcp_path, agent, "mcp-json",
                                    lambda data: jsonfiles.add_mcp(data, entry, replace=ours_before))
    if status == "foreign":
        detail = "an `ultron` MCP server of your own is registered there; left as it is"
    changes.append(Change(agent.name, "MCP server", mcp_path, status, detail))

    commands = hook_commands(agent, argv)
    hooks_path = agent.hooks_file(project)
    status, detail = _edit_json(log, hooks_path, agent, "hooks",
                                lambda data: "added" if jsonfiles.add_hooks(data, agent, commands) else "present")
    changes.append(Change(agent.name, "hooks", hooks_path, status, detail))
    return changes


def setup(*, agent: str | None = None, project: Path | None = None,
          executable: str | None = None) -> tuple[list[Change], list[Agent]]:
    chosen, skipped = choose(agent)
    argv = ultron_argv(executable)
    log = EditLog()
    changes: list[Change] = []
    for one in chosen:
        changes.extend(install_agent(log, one, project=project.resolve() if project else None, argv=argv))
    return changes, skipped


def _clean(path: Path, kind: str, agent: Agent | None) -> bool:
    """Take only our entries out of a file someone else changed since; whether it changed."""
    current = read_bytes(path)
    if current is None:
        return False
    text = current.decode("utf-8", errors="replace")
    if kind == "mcp-toml":
        new = tomlfile.remove(text)
        if new is None:
            return False
        atomic_write(path, new.encode("utf-8"), mode=path.stat().st_mode & 0o7777)
        return True
    try:
        data, style = jsonfiles.parse(text)
    except ValueError:
        return False
    if kind == "mcp-json":
        changed = jsonfiles.remove_mcp(data)
    else:
        changed = agent is not None and jsonfiles.remove_hooks(data, agent)
    if changed:
        atomic_write(path, jsonfiles.dump(data, style).encode("utf-8"), mode=path.stat().st_mode & 0o7777)
    return changed


def uninstall() -> list[Change]:
    """Undo every logged edit; the log is emptied as each file is dealt with."""
    log = EditLog()
    changes: list[Change] = []
    records = list(log.files.values())
    for key in sorted(log.files, reverse=True):
        record = log.files[key]
        path = Path(key)
        what = "hooks" if record.kind == "hooks" else "MCP server"
        if read_bytes(path) is None:
            status = "gone"
        elif unchanged_since_written(record):
            status = restore(record)
        else:
            status = "cleaned" if _clean(path, record.kind, AGENTS.get(record.agent)) else "kept"
        changes.append(Change(record.agent, what, path, status))
        log.forget(key)
    remove_created_dirs(records)
    return changes


SETUP_WORDS = {"added": "added", "present": "already there", "foreign": "left alone",
               "unsafe": "NOT written", "invalid": "NOT written"}
UNDO_WORDS = {"restored": "restored to its bytes before setup", "removed": "removed (setup created it)",
              "cleaned": "our entries removed (the file changed since setup: the rest kept)",
              "kept": "nothing of ours left in it", "gone": "already gone"}


def describe_setup(changes: list[Change], skipped: list[Agent], argv: list[str]) -> list[str]:
    lines: list[str] = []
    for agent in AGENTS.values():
        mine = [c for c in changes if c.agent == agent.name]
        if not mine:
            if agent in skipped:
                lines.append(f"{agent.label}: {display(agent.home())} not found, skipped "
                             f"(`ultron setup --agent {agent.name}` sets it up anyway)")
            continue
        lines.append(f"{agent.label}:")
        for c in mine:
            target = "ultron → " + command_line([*argv, "mcp"]) if c.what == "MCP server" else \
                ", ".join(agent.event_names.values()) + " → " + command_line([*argv, "hook", agent.name, "EVENT"])
            lines.append(f"  {c.what:<10}  {display(c.path)}: {target}  [{SETUP_WORDS.get(c.status, c.status)}]")
            if c.detail:
                lines.append(f"  {'':<10}  {c.detail}")
        if agent.name == "codex":
            lines.append("  Codex skips a hook until it is trusted: open /hooks in Codex and trust the Ultron hooks "
                         "(again whenever setup changes them); `ultron doctor` says which are not yet trusted.")
    names = {c.agent for c in changes}
    if {"claude-code", "cursor"} <= names:
        lines.append("Cursor also runs Claude Code's hooks: the Claude Code hooks skip the events Cursor hands them "
                     "(their payload carries cursor_version), so each session is captured once, by the Cursor hooks.")
    if changes:
        lines.append("No token was written: the MCP server and the hooks read your `ultron login`. "
                     "`ultron setup --uninstall` undoes these edits; `ultron doctor` checks them.")
    return lines


def describe_uninstall(changes: list[Change]) -> list[str]:
    if not changes:
        return ["Nothing to undo: no file edited by `ultron setup` is on record."]
    return [f"{display(c.path)}: {UNDO_WORDS.get(c.status, c.status)}" for c in changes]
