"""SWE-agent trajectories (``<instance_id>.traj``) and mini-SWE-agent's (``*.traj.json``).

SWE-agent: SWE-agent/SWE-agent ``docs/usage/trajectories.md`` and ``sweagent/types.py`` — one JSON
object ``{"trajectory": [{"response", "thought", "action", "observation", "state", "query",
"execution_time", ...}], "history": [{"role", "content", "message_type", "agent", "is_demo",
"tool_calls", "tool_call_ids", ...}], "info": {"exit_status", "submission", ...}}``. The task is
the first non-demonstration user turn of ``history`` (the issue inside ``<pr_description>`` or
after ``ISSUE:``); each trajectory step becomes the agent's turn (thought, then its action as a
call) and the observation answering it. Actions carry no ids: each step's call is
``swe-agent-<step>``, and its observation answers that id.

mini-SWE-agent: its ``docs/usage/output_files.md`` — ``{"info", "messages": [OpenAI chat
messages], "trajectory_format": "mini-swe-agent-1.1"}``; the command is the fenced ``bash`` block
of an assistant turn and the next user turn reports ``<returncode>N</returncode>`` and
``<output>``. Tool-calling runs carry ``tool_calls``/``tool`` rows and read as OpenAI chat.
"""

from __future__ import annotations

import re
from typing import Any

from ingestion.formats import chat
from ingestion.formats.base import (
    Collector,
    build,
    call_text,
    looks_failed,
    make_call,
    obj,
    result_text,
    stringify,
    text_of,
)

# Commands of SWE-agent's own tool bundles; any other action is a shell command.
_TOOLS = {"str_replace_editor", "open", "goto", "create", "edit", "scroll_up", "scroll_down", "search_file",
          "search_dir", "find_file", "submit", "view", "insert", "filemap", "exit_forfeit", "exit_cost"}
_PATH_FIRST = {"open", "create", "view"}
_ISSUE = [re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.S),
          re.compile(r"<issue_description>\s*(.*?)\s*</issue_description>", re.S),
          re.compile(r"ISSUE:\s*\n(.*?)\n\s*INSTRUCTIONS:", re.S)]
_BASH_BLOCK = re.compile(r"```(?:bash|sh|shell)?\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def claims(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("trajectory"), list) and ("history" in doc or "info" in doc):
        return True
    info = obj(doc.get("info"))
    return isinstance(doc.get("messages"), list) and (
        str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or "mini_version" in info)


def _task(history: Any) -> str:
    for item in history if isinstance(history, list) else []:
        if isinstance(item, dict) and item.get("role") == "user" and not item.get("is_demo"):
            text = text_of(item.get("content"))
            for pattern in _ISSUE:
                found = pattern.search(text)
                if found and found.group(1).strip():
                    return found.group(1)
            return text
    return ""


def _action(action: str, state: Any) -> tuple[str, dict[str, str]]:
    """The tool an action uses and its call arguments (``command`` always; ``path`` for files)."""
    words = action.split()
    tool = words[0] if words and words[0] in _TOOLS else "bash"
    args = {"command": action.strip()}
    if tool == "str_replace_editor" and len(words) > 2:
        args["path"] = words[2]
    elif tool in _PATH_FIRST and len(words) > 1:
        args["path"] = words[1]
    elif tool in ("edit", "insert") and isinstance(state, dict) and isinstance(state.get("open_file"), str):
        args["path"] = state["open_file"]  # edits apply to the file open at the time
    elif isinstance(state, str) and tool in ("edit", "insert"):
        found = re.search(r'"open_file":\s*"([^"]+)"', state)
        if found:
            args["path"] = found.group(1)
    return tool, args


def _swe_agent(doc: dict[str, Any], out: Collector) -> None:
    out.add(build("user", 0, [_task(doc.get("history"))]))
    for number, step in enumerate(doc.get("trajectory") or [], 1):
        if not isinstance(step, dict):
            out.bad("step is not an object")
            continue
        action = stringify(step.get("action") or "")
        thought = stringify(step.get("thought") or "")
        call_id = f"swe-agent-{number}"
        # A thought that only repeats the action is said once, as the call.
        parts = [thought if thought.strip() != action.strip() else ""]
        fields: dict[str, Any] = {}
        if action.strip():
            tool, args = _action(action, step.get("state"))
            call = make_call(call_id, tool, args)
            parts.append(call_text(tool, stringify({"command": args["command"]})))
            fields = {"tool_names": [tool], "calls": [call]}
        out.add(build("assistant", number, parts, **fields))
        observation = stringify(step.get("observation") or "")
        if action.strip() and observation.strip():
            failed = looks_failed(observation)
            out.add(build("tool", number, [result_text(observation, failed)], is_tool_result=True,
                          is_error=failed, call_ids=[call_id]))


def _mini(doc: dict[str, Any], out: Collector) -> None:
    pending = ""
    for number, row in enumerate(doc.get("messages") or [], 1):
        if not isinstance(row, dict):
            out.bad("not an object")
            continue
        text = text_of(row.get("content"))
        returncode = _RETURNCODE.search(text) if row.get("role") in ("user", "tool") else None
        answered = row["tool_call_id"] if isinstance(row.get("tool_call_id"), str) else pending
        if returncode and answered:
            failed = int(returncode.group(1)) != 0
            out.add(build("tool", number, [result_text(text, failed)], is_tool_result=True, is_error=failed,
                          call_ids=[answered]))
            pending = ""
            continue
        message, reason = chat.normalise_row(row, number)
        if message is not None and message.role == "assistant" and not row.get("tool_calls"):
            blocks = _BASH_BLOCK.findall(text)
            if blocks:
                pending = f"mini-swe-agent-{number}"
                message.tool_names.append("bash")
                message.calls.append(make_call(pending, "bash", {"command": blocks[-1]}))
        if message is not None:
            out.messages.append(message)
        elif reason:
            out.bad(reason)
        else:
            out.skipped += 1


def parse(doc: dict[str, Any]) -> Collector:
    out = Collector()
    if isinstance(doc.get("trajectory"), list):
        _swe_agent(doc, out)
    else:
        _mini(doc, out)
    return out
