"""Aider chat history (``.aider.chat.history.md``).

Shape, from Aider-AI/aider ``aider/io.py`` (``InputOutput``): each run appends ``# aider chat
started at <time>``; ``user_input`` writes the user's lines as ``#### <line>`` (two trailing
spaces in recent versions); ``ai_output`` writes the reply as plain Markdown after a blank line;
``tool_output`` / ``tool_error`` / ``confirm_ask`` write ``> <text>`` ending in two spaces (a
multi-line message continues on unquoted lines until that ending). ``aider/commands.py``:
``/run`` and ``!`` run a shell command, ``/test`` runs one and adds its output to the chat only
when it exits non-zero (``Added N lines of output to the chat.``); commands the model suggests
run after ``Running <command>``; edits are reported as ``Applied edit to <path>``.

The history holds no command output and no exit codes beyond that: a ``/test`` whose output was
added, or a quoted error line, marks the block as an error. Calls have no ids in the file:
``aider-<line>`` is the line that made the call. ``/run``, ``/test`` and ``!`` are the user's own
calls, so they sit on the user's message; ``Running …`` and ``Applied edit to …`` belong to the
reply that proposed them. The start-up banner before a chat's first user line is skipped.
"""

from __future__ import annotations

import re

from ingestion.formats.base import Collector, Message, build, exit_code, make_call, result_text

_HEADER = re.compile(r"^# aider chat started at ")
_USER_END = re.compile(r"^#### .*  $")
_TOOL_END = re.compile(r"^>.*  $")
_USER_CALL = re.compile(r"^(/run|/test|!)\s*(.*)$", re.S)
_RUNNING = re.compile(r"^Running (.+)$")
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_ADDED_OUTPUT = re.compile(r"^Added \d+ lines? of output to the chat")
_ERROR_LINE = re.compile(r"^(?:error|unable to|failed to|the llm did not conform|# fix any errors below|"
                         r"searchreplacenoexactmatch|traceback)", re.I)


def claims(text: str) -> bool:
    if re.search(r"^# aider chat started at ", text, re.M):
        return True
    return bool(re.search(r"^#### .*  $", text, re.M)) and bool(re.search(r"^> .*  $", text, re.M))


def _conventions(lines: list[str]) -> tuple[bool, bool]:
    """Whether this chat's user lines, and its quoted lines, end in two spaces: versions differ,
    and an editor may have trimmed them. Only then do they delimit blocks."""
    return any(_USER_END.match(line) for line in lines), any(_TOOL_END.match(line) for line in lines)


def _blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(kind, first line, lines) for each user / tool / assistant / header block, in order."""
    lines = text.splitlines()
    blocks: list[tuple[str, int, list[str]]] = []
    kind, open_tool = "", False
    first = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
    strict, trailing = _conventions(lines[:first])
    for number, raw in enumerate(lines, 1):
        if _HEADER.match(raw):
            end = next((i for i in range(number, len(lines)) if _HEADER.match(lines[i])), len(lines))
            strict, trailing = _conventions(lines[number:end])
            blocks.append(("header", number, [raw]))
            kind = ""
            continue
        if raw.startswith("####") and (len(raw) == 4 or raw[4] == " ") and (
                not strict or raw.endswith("  ") or not raw[4:].strip()):
            if kind != "user":
                blocks.append(("user", number, []))
            blocks[-1][2].append(raw[5:].rstrip())
            kind = "user"
        elif raw.startswith("> ") or raw.rstrip() == ">":  # not ">>>>>>> REPLACE" in a reply
            if kind != "tool":
                blocks.append(("tool", number, []))
            blocks[-1][2].append(raw[1:].strip())
            kind, open_tool = "tool", trailing and not raw.endswith("  ")
        elif kind == "tool" and open_tool:  # the rest of a multi-line quoted message
            blocks[-1][2].append(raw.strip())
            open_tool = not raw.endswith("  ")
        elif not raw.strip() and kind != "assistant":
            kind = ""
        else:
            if kind != "assistant":
                blocks.append(("assistant", number, []))
            blocks[-1][2].append(raw)
            kind = "assistant"
    return blocks


def parse(text: str) -> Collector:
    out = Collector()
    banner = True
    pending: list[str] = []  # the user's calls the next quoted block answers
    testing = False
    reply: Message | None = None  # the reply since the last user turn, which owns Running/Applied calls
    for kind, number, lines in _blocks(text):
        if kind == "header":
            out.skipped += 1
            banner, pending, reply = True, [], None
            continue
        body = "\n".join(lines).strip()
        if kind == "user":
            banner, reply = False, None
            message = build("user", number, [body])
            found = _USER_CALL.match(body)
            if message is not None and found:
                name = "test" if found.group(1) == "/test" else "run"
                call = {"id": f"aider-{number}", "name": name, "target": found.group(2).strip()[:500]}
                message.calls.append(call)
                message.tool_names.append(name)
                pending, testing = [call["id"]], name == "test"
            else:
                pending, testing = [], False
            out.add(message)
        elif kind == "assistant":
            reply = build("assistant", number, [body])
            out.add(reply)
        elif banner:
            out.skipped += 1  # the start-up banner: version, model, repo map
        else:
            ids, failed = list(pending), False
            for offset, line in enumerate(lines):
                made = _RUNNING.match(line) or _APPLIED.match(line)
                if made and reply is not None:
                    name = "run" if made.re is _RUNNING else "edit"
                    call = make_call(f"aider-{number + offset}", name, {"command": made.group(1),
                                                                         "path": made.group(1)})
                    reply.calls.append(call)
                    reply.tool_names.append(name)
                    ids.append(call["id"])
                # Aider adds a /test's output to the chat only when the tests fail (flow.md#formats): that line means
                # a failure.
                failed = failed or bool(_ERROR_LINE.match(line)) or (testing and bool(_ADDED_OUTPUT.match(line)))
            code = exit_code(body)
            failed = failed or (code is not None and code != 0)
            out.add(build("tool", number, [result_text(body, failed)], is_tool_result=True, is_error=failed,
                          call_ids=ids))
            pending, testing = [], False
    return out
