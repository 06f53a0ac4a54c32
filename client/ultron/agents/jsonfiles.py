"""Our entries in the agents' JSON files: hooks (settings.json, hooks.json) and the MCP server
(.claude.json, .mcp.json, mcp.json). Each function changes a parsed document in place and says
whether it changed anything, so a file whose entries are already right is never rewritten;
everything else in the document (other tools' hooks and servers, unknown keys, key order) stays.
The text round trip keeps the file's indentation and final newline."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ultron.agents import MCP_NAME, OUR_COMMAND, Agent


@dataclass(frozen=True)
class Style:
    indent: str | int = 2
    newline: bool = True


def parse(text: str) -> tuple[dict[str, Any], Style]:
    """A JSON object and how it was written; ValueError when the text is not one (a blank file
    is an empty object)."""
    if not text.strip():
        return {}, Style()
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the file is not a JSON object")
    found = re.search(r"\n([ \t]+)\S", text)
    indent: str | int = 2 if not found else (len(found.group(1)) if " " in found.group(1) else found.group(1))
    return data, Style(indent=indent, newline=text.endswith("\n"))


def dump(data: dict[str, Any], style: Style) -> str:
    return json.dumps(data, indent=style.indent, ensure_ascii=False) + ("\n" if style.newline else "")


def is_ours(command: Any, agent: Agent | None = None) -> bool:
    if not isinstance(command, str):
        return False
    found = OUR_COMMAND.search(command)
    return found is not None and (agent is None or found.group("agent") == agent.name)


def _handler(agent: Agent, command: str, event: str) -> dict[str, Any]:
    if agent.flat_hooks:
        return {"command": command}
    handler: dict[str, Any] = {"type": "command", "command": command}
    if event in agent.timeouts:
        handler["timeout"] = agent.timeouts[event]
    return handler


def our_hooks(data: dict[str, Any], agent: Agent) -> list[tuple[str, int, int, str]]:
    """Our handlers in a hooks document: (agent's event name, group index, handler index,
    command); for a flat file the handler index is 0."""
    found: list[tuple[str, int, int, str]] = []
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            if not isinstance(group, dict):
                continue
            if agent.flat_hooks:
                if is_ours(group.get("command"), agent):
                    found.append((event, g, 0, group["command"]))
                continue
            for h, handler in enumerate(group.get("hooks") or []):
                if isinstance(handler, dict) and is_ours(handler.get("command"), agent):
                    found.append((event, g, h, handler["command"]))
    return found


def add_hooks(data: dict[str, Any], agent: Agent, commands: dict[str, str]) -> bool:
    """Register ``commands`` (our event name -> command line) once each. An older command of
    ours for the same event (another install's path) is replaced where it stands."""
    changed = False
    if agent.flat_hooks and "version" not in data:
        data["version"] = 1
        changed = True
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("its \"hooks\" is not an object")
    for event, command in commands.items():
        name = agent.event_names[event]
        wanted = _handler(agent, command, event)
        groups = hooks.setdefault(name, [])
        if not isinstance(groups, list):
            raise ValueError(f"its hooks.{name} is not a list")
        mine = [(g, h) for e, g, h, _ in our_hooks({"hooks": {name: groups}}, agent)]
        if len(mine) == 1:
            g, h = mine[0]
            current = groups[g] if agent.flat_hooks else groups[g]["hooks"][h]
            if current == wanted or (agent.flat_hooks and current.get("command") == command):
                continue
        _drop(groups, agent, mine)
        groups.append(wanted if agent.flat_hooks else {"hooks": [wanted]})
        changed = True
    return changed


def _drop(groups: list[Any], agent: Agent, mine: list[tuple[int, int]]) -> None:
    for g, h in sorted(mine, reverse=True):
        if agent.flat_hooks:
            del groups[g]
            continue
        handlers = groups[g]["hooks"]
        del handlers[h]
        if not handlers:
            del groups[g]


def remove_hooks(data: dict[str, Any], agent: Agent) -> bool:
    """Take out every hook of ours; a list or object left empty by that goes too."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for name in list(hooks):
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        mine = [(g, h) for _, g, h, _ in our_hooks({"hooks": {name: groups}}, agent)]
        if mine:
            _drop(groups, agent, mine)
            changed = True
            if not groups:
                del hooks[name]
    if changed and not hooks:
        del data["hooks"]
        if agent.flat_hooks and set(data) == {"version"}:
            del data["version"]
    return changed


def mcp_entry(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": argv[0], "args": [*argv[1:], "mcp"]}
    if env:
        entry["env"] = env
    return entry


def looks_like_ours(entry: Any) -> bool:
    """An MCP entry that runs ``ultron mcp`` (or ``python -m ultron mcp``)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    program = re.split(r"[\\/]", entry["command"])[-1].lower()
    args = entry.get("args") or []
    return (program.startswith("ultron") and args == ["mcp"]) or args == ["-m", "ultron", "mcp"]


def add_mcp(data: dict[str, Any], entry: dict[str, Any], *, replace: bool) -> str:
    """``added``, ``present`` (already as wanted) or ``foreign`` (an ``ultron`` server someone
    else registered, left alone unless ``replace``: it is one we wrote before)."""
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValueError("its \"mcpServers\" is not an object")
    current = servers.get(MCP_NAME)
    if current == entry:
        return "present"
    if current is not None and not replace:
        return "foreign"
    servers[MCP_NAME] = entry
    return "added"


def remove_mcp(data: dict[str, Any]) -> bool:
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not looks_like_ours(servers.get(MCP_NAME)):
        return False
    del servers[MCP_NAME]
    if not servers:
        del data["mcpServers"]
    return True
