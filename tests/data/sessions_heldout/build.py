#!/usr/bin/env python3
"""Generate the held-out hand-written session set in this directory, with its labels.

Run from anywhere: ``python tests/data/sessions_heldout/build.py``. It rewrites every session
file (``cc2*``, ``oa2*``, ``cx2*``) plus ``boundaries.jsonl``, ``lessons.jsonl`` and
``non_lessons.jsonl``, then validates them; ``--check`` validates the files on disk only.

The sessions are written by hand in the row shapes of real agent exports: Claude Code project
JSONL, plain OpenAI-chat JSONL and Codex CLI rollouts. Label line numbers are never typed by
hand: each session script keeps the lines that the builder calls return. Ids, uuids and
timestamps are seeded, so the output is deterministic.

The Claude Code and OpenAI builders are a copy (not an import) of the ones in
``../sessions_written/build.py``, extended with AskUserQuestion, background commands and
task notifications, so that later edits to that file cannot change this frozen set. The Codex
builder is new.
"""
from __future__ import annotations

import datetime as dt
import json
import random
import re
import string
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILE_RE = re.compile(r"(cc|oa|cx)2\d_")
SYSTEM_REMINDER_READ = (
    "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be "
    "considered malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you "
    "MUST refuse to improve or augment the code. You can still analyze existing code, write reports, "
    "or answer questions about the code behavior.\n</system-reminder>\n"
)
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)
TODO_OK = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to track "
    "your progress. Please proceed with the current tasks if applicable"
)
B62 = string.ascii_letters + string.digits


class Labels:
    """Collects the labels of one session file while its rows are written."""

    def __init__(self, file: str):
        self.file = file
        self.tasks: list[dict] = []
        self.lessons: list[dict] = []
        self.non_lessons: list[dict] = []

    def task(self, line, goal, kind="user-request", window=None):
        self.tasks.append({"line": line, "window": list(window or [line, line]), "goal": goal, "kind": kind})

    def lesson(self, lines, type_, lesson, evidence, keywords):
        self.lessons.append({"file": self.file, "lines": list(lines), "type": type_, "lesson": lesson,
                             "evidence": evidence, "keywords": keywords})

    def non_lesson(self, lines, text, why):
        self.non_lessons.append({"file": self.file, "lines": list(lines), "text": text, "why": why})


class _Base:
    def __init__(self, name: str, seed: int, start: str):
        self.name = name
        self.rng = random.Random(seed)
        self.rows: list[dict] = []
        self.now = dt.datetime.fromisoformat(start).replace(tzinfo=dt.timezone.utc)
        self.labels = Labels(name)

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _rand(self, n: int, alphabet=B62) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def _stamp(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"

    def _tick(self, lo=0.2, hi=4.0) -> str:
        self.now += dt.timedelta(seconds=self.rng.uniform(lo, hi))
        return self._stamp()

    def wait(self, minutes: float):
        self.now += dt.timedelta(minutes=minutes)

    @property
    def line(self) -> int:
        """Line number of the last row written (1-based)."""
        return len(self.rows)

    def dump(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows)


# =============================================================================================
# Claude Code project export
# =============================================================================================

class CC(_Base):
    """Claude Code project-export builder (one JSON object per row, one content block per row)."""

    def __init__(self, name, seed, start, cwd, branch="main", hooks=(), version="2.1.50",
                 model="claude-opus-4-6", slug=None, permission="default"):
        super().__init__(name, seed, start)
        self.cwd = cwd
        self.branch = branch
        self.hooks = list(hooks)
        self.version = version
        self.model = model
        self.session_id = self._uuid()
        self.slug = slug
        self.permission = permission
        self.parent = None
        self.msg_id = None
        self.req_id = None
        self.pending: list[tuple[str, str]] = []
        self.turn_started = self.now
        self.task_dir = "/tmp/claude-1000/" + cwd.replace("/", "-")

    def _env(self, typ: str, **fields) -> dict:
        row = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
               "sessionId": self.session_id, "version": self.version, "gitBranch": self.branch}
        if self.slug:
            row["slug"] = self.slug
        row["type"] = typ
        row.update(fields)
        return row

    def _push(self, row: dict, chain=True) -> int:
        self.rows.append(row)
        if chain and "uuid" in row:
            self.parent = row["uuid"]
        return self.line

    # -- noise rows ----------------------------------------------------------------------------
    def snapshot(self, message_id=None):
        mid = message_id or self._uuid()
        self.rows.append({"type": "file-history-snapshot", "messageId": mid,
                          "snapshot": {"messageId": mid, "trackedFileBackups": {}, "timestamp": self._tick(0, 0.1)},
                          "isSnapshotUpdate": False})
        return mid

    def session_start(self, commands=("~/.claude/hooks/session-start.sh",), kind="startup"):
        tid = self._uuid()
        for c in commands:
            self._push(self._env("progress", data={"type": "hook_progress", "hookEvent": "SessionStart",
                                                   "hookName": f"SessionStart:{kind}", "command": c},
                                 parentToolUseID=tid, toolUseID=tid, timestamp=self._tick(0, 0.1), uuid=self._uuid()))

    def end_turn(self):
        if self.hooks:
            self._push(self._env("system", subtype="stop_hook_summary", hookCount=1,
                                 hookInfos=[{"command": "~/.claude/hooks/stop.sh"}], hookErrors=[],
                                 preventedContinuation=False, stopReason="", hasOutput=False, level="suggestion",
                                 timestamp=self._tick(0, 0.2), uuid=self._uuid(), toolUseID=self._uuid()))
        ms = int((self.now - self.turn_started).total_seconds() * 1000)
        self._push(self._env("system", subtype="turn_duration", durationMs=max(ms, 900), timestamp=self._tick(0, 0.1),
                             uuid=self._uuid(), isMeta=False))

    def command(self, name, stdout, args=""):
        """A slash command typed by the user: caveat + command + stdout rows."""
        self.snapshot()
        self._push(self._env("user", message={"role": "user", "content": (
            "<local-command-caveat>Caveat: The messages below were generated by the user while running local "
            "commands. DO NOT respond to these messages or otherwise consider them in your response unless the "
            "user explicitly asks you to.</local-command-caveat>")}, isMeta=True, uuid=self._uuid(), timestamp=self._tick()))
        first = self.line
        self._push(self._env("user", message={"role": "user", "content": (
            f"<command-name>/{name}</command-name>\n            <command-message>{name}</command-message>\n"
            f"            <command-args>{args}</command-args>")}, uuid=self._uuid(), timestamp=self._tick(0, 0.1)))
        self._push(self._env("user", message={"role": "user", "content": f"<local-command-stdout>{stdout}</local-command-stdout>"},
                             uuid=self._uuid(), timestamp=self._tick(0, 0.1)))
        return first

    def reminder(self, text):
        return self._push(self._env("user", message={"role": "user", "content": [
            {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}]}, isMeta=True,
            uuid=self._uuid(), timestamp=self._tick(0, 0.1)))

    def compact(self, summary):
        self._push(self._env("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                             timestamp=self._tick(20, 60), uuid=self._uuid(), level="info",
                             compactMetadata={"trigger": "auto", "preTokens": self.rng.randint(150000, 172000)}))
        self.rows[-1]["logicalParentUuid"] = self.rows[-1]["parentUuid"]
        self.rows[-1]["parentUuid"] = None
        text = ("This session is being continued from a previous conversation that ran out of context. The summary "
                "below covers the earlier portion of the conversation.\n\nAnalysis:\n" + summary +
                "\n\nPlease continue the conversation from where we left off without asking the user any further "
                "questions. Continue with the last task that you were asked to work on.")
        line = self._push(self._env("user", message={"role": "user", "content": text}, isVisibleInTranscriptOnly=True,
                                    isCompactSummary=True, uuid=self._uuid(), timestamp=self._tick(0, 0.1)))
        self.session_start(kind="compact")
        self.msg_id = None
        return line

    def notify(self, bid, desc, code):
        """A background command's <task-notification>: queued, then delivered as a user row."""
        path = f"{self.task_dir}/tasks/{bid}.output"
        status = "completed" if code == 0 else "failed"
        outcome = f"completed (exit code {code})" if code == 0 else f"failed with exit code {code}"
        text = (f"<task-notification>\n<task-id>{bid}</task-id>\n<output-file>{path}</output-file>\n"
                f"<status>{status}</status>\n<summary>Background command \"{desc}\" {outcome}</summary>\n"
                f"</task-notification>\nRead the output file to retrieve the result: {path}")
        self.rows.append({"type": "queue-operation", "operation": "enqueue", "timestamp": self._tick(0, 0.5),
                          "sessionId": self.session_id, "content": text})
        self.msg_id = None
        self.turn_started = self.now
        return self._push(self._env("user", message={"role": "user", "content": text}, uuid=self._uuid(),
                                    timestamp=self._tick(0, 0.3), thinkingMetadata={"maxThinkingTokens": 31999},
                                    todos=[], permissionMode=self.permission))

    # -- conversation rows ---------------------------------------------------------------------
    def user(self, text, blocks=False) -> int:
        self.wait(self.rng.uniform(0.3, 3))
        uid = self._uuid()
        self.snapshot(uid)
        if all(r.get("type") in ("progress", "file-history-snapshot") for r in self.rows):
            self.rows.insert(0, self.rows.pop())
        content = [{"type": "text", "text": text}] if blocks else text
        self.turn_started = self.now
        self.msg_id = None
        return self._push(self._env("user", message={"role": "user", "content": content}, uuid=uid,
                                    timestamp=self._tick(0, 0.1), thinkingMetadata={"maxThinkingTokens": 31999},
                                    todos=[], permissionMode=self.permission))

    def interrupted(self, for_tool=False) -> int:
        text = "[Request interrupted by user for tool use]" if for_tool else "[Request interrupted by user]"
        self.msg_id = None
        return self._push(self._env("user", message={"role": "user", "content": [{"type": "text", "text": text}]},
                                    uuid=self._uuid(), timestamp=self._tick(0, 0.5)))

    def _assistant(self, block) -> int:
        if self.msg_id is None:
            self.msg_id = "msg_01" + self._rand(22)
            self.req_id = "req_011C" + self._rand(20)
            self.usage = {"input_tokens": self.rng.randint(1, 12),
                          "cache_creation_input_tokens": self.rng.randint(200, 9000),
                          "cache_read_input_tokens": self.rng.randint(12000, 90000),
                          "output_tokens": self.rng.randint(20, 900), "service_tier": "standard"}
        msg = {"model": self.model, "id": self.msg_id, "type": "message", "role": "assistant", "content": [block],
               "stop_reason": None, "stop_sequence": None, "usage": dict(self.usage)}
        return self._push(self._env("assistant", message=msg, requestId=self.req_id, uuid=self._uuid(),
                                    timestamp=self._tick(0.5, 6)))

    def think(self, text) -> int:
        return self._assistant({"type": "thinking", "thinking": text, "signature": "[REDACTED_SIGNATURE]"})

    def say(self, text) -> int:
        return self._assistant({"type": "text", "text": text})

    def call(self, name, input_) -> tuple[int, str]:
        tid = "toolu_01" + self._rand(22)
        line = self._assistant({"type": "tool_use", "id": tid, "name": name, "input": input_,
                                "caller": {"type": "direct"}})
        self.pending.append((tid, self.rows[-1]["uuid"]))
        for h in self.hooks:
            self.rows.append(self._env("progress", data={"type": "hook_progress", "hookEvent": "PreToolUse",
                                                         "hookName": f"PreToolUse:{name}", "command": h},
                                       toolUseID=tid, parentToolUseID=tid, uuid=self._uuid(), timestamp=self._tick(0, 0.05)))
        return line, tid

    def result(self, tid, content, is_error=False, tool_use_result=None) -> int:
        src = dict(self.pending)[tid]
        self.pending = [p for p in self.pending if p[0] != tid]
        self.msg_id = None
        row = self._env("user", message={"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": content, "is_error": is_error}]},
            uuid=self._uuid(), timestamp=self._tick(0.2, 8), toolUseResult=tool_use_result,
            sourceToolAssistantUUID=src)
        if tool_use_result is None:
            del row["toolUseResult"]
        return self._push(row)

    def tool(self, name, input_, content, is_error=False, tool_use_result=None) -> tuple[int, int]:
        line, tid = self.call(name, input_)
        return line, self.result(tid, content, is_error, tool_use_result)

    # -- tool helpers --------------------------------------------------------------------------
    def bash(self, command, out="", code=0, desc=None, timeout=None) -> tuple[int, int]:
        inp = {"command": command}
        if desc:
            inp["description"] = desc
        if timeout:
            inp["timeout"] = timeout
        if code:
            text = f"Exit code {code}\n{out}"
            return self.tool("Bash", inp, text, True, "Error: " + text)
        return self.tool("Bash", inp, out, False, {"stdout": out, "stderr": "", "interrupted": False,
                                                     "isImage": False, "noOutputExpected": False})

    def bash_bg(self, command, desc) -> tuple[int, int, str]:
        """A Bash call with run_in_background; returns (call line, result line, background id)."""
        bid = self._rand(7, "0123456789abcdef")
        path = f"{self.task_dir}/tasks/{bid}.output"
        line, r = self.tool("Bash", {"command": command, "description": desc, "run_in_background": True},
                            f"Command running in background with ID: {bid}. Output is being written to: {path}", False,
                            {"stdout": "", "stderr": "", "interrupted": False, "isImage": False,
                             "noOutputExpected": False, "backgroundTaskId": bid})
        return line, r, bid

    def read(self, path, text, reminder=True) -> tuple[int, int]:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines = lines[:-1]
        numbered = "\n".join(f"{i:>6}\u2192{l}" for i, l in enumerate(lines, 1))
        content = numbered + (SYSTEM_REMINDER_READ if reminder else "")
        return self.tool("Read", {"file_path": path}, content, False,
                         {"type": "text", "file": {"filePath": path, "content": text, "numLines": len(lines),
                                                   "startLine": 1, "totalLines": len(lines)}})

    def read_missing(self, path) -> tuple[int, int]:
        return self.tool("Read", {"file_path": path}, "<tool_use_error>File does not exist.</tool_use_error>", True,
                         "Error: File does not exist.")

    def edit(self, path, old, new) -> tuple[int, int]:
        return self.tool("Edit", {"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
                         f"The file {path} has been updated successfully.", False,
                         {"filePath": path, "oldString": old, "newString": new, "structuredPatch": [],
                          "userModified": False, "replaceAll": False})

    def write(self, path, text, new=True) -> tuple[int, int]:
        msg = f"File created successfully at: {path}" if new else f"The file {path} has been updated successfully."
        return self.tool("Write", {"file_path": path, "content": text}, msg, False,
                         {"type": "create" if new else "update", "filePath": path, "content": text, "structuredPatch": []})

    def glob(self, pattern, files) -> tuple[int, int]:
        return self.tool("Glob", {"pattern": pattern}, "\n".join(files) if files else "No files found", False,
                         {"filenames": files, "durationMs": self.rng.randint(20, 300), "numFiles": len(files),
                          "truncated": False})

    def grep(self, pattern, out, path=None, mode="content") -> tuple[int, int]:
        inp = {"pattern": pattern, "output_mode": mode}
        if path:
            inp["path"] = path
        return self.tool("Grep", inp, out or "No matches found", False,
                         {"mode": mode, "numFiles": out.count("\n") + 1 if out else 0, "content": out})

    def todo(self, items) -> tuple[int, int]:
        todos = [{"content": c, "status": s, "activeForm": a} for c, s, a in items]
        return self.tool("TodoWrite", {"todos": todos}, TODO_OK, False, {"oldTodos": [], "newTodos": todos})

    def ask(self, question, header, options, answer) -> tuple[int, int]:
        qs = [{"question": question, "header": header, "multiSelect": False,
               "options": [{"label": l, "description": d} for l, d in options]}]
        text = (f"User has answered your questions: \"{question}\"=\"{answer}\". You can now continue with the "
                "user's answers in mind.")
        return self.tool("AskUserQuestion", {"questions": qs}, text, False, {"questions": qs, "answers": {question: answer}})

    def reject(self, name, input_) -> tuple[int, int, int]:
        line, tid = self.call(name, input_)
        r = self.result(tid, REJECTED, True, "User rejected tool use")
        return line, r, self.interrupted(for_tool=True)


def todos(items, done, active):
    """TodoWrite items [(content, activeForm)]: the first `done` completed, item `active` in progress."""
    out = []
    for i, (content, form) in enumerate(items):
        status = "completed" if i < done else ("in_progress" if i == active else "pending")
        out.append((content, status, form))
    return out


# =============================================================================================
# OpenAI chat
# =============================================================================================

class OA(_Base):
    """Plain OpenAI-chat JSONL builder: one message per line."""

    def system(self, text) -> int:
        self.rows.append({"role": "system", "content": text})
        return self.line

    def user(self, text) -> int:
        self.rows.append({"role": "user", "content": text})
        return self.line

    def say(self, text) -> int:
        return self.call(text)[0]

    def call(self, text, calls=()) -> tuple[int, list[str]]:
        row = {"role": "assistant", "content": text}
        ids = []
        if calls:
            row["tool_calls"] = []
            for fn, args in calls:
                cid = "call_" + self._rand(24)
                ids.append(cid)
                row["tool_calls"].append({"id": cid, "type": "function",
                                          "function": {"name": fn, "arguments": json.dumps(args)}})
        self.rows.append(row)
        return self.line, ids

    def tool(self, call_id, content) -> int:
        self.rows.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return self.line

    def run(self, fn, args, content, text=None) -> tuple[int, int]:
        line, ids = self.call(text, [(fn, args)])
        return line, self.tool(ids[0], content)


# =============================================================================================
# Codex CLI rollout
# =============================================================================================

class CX(_Base):
    """Codex CLI rollout builder: ``{"timestamp", "type", "payload"}`` rows.

    Conversation rows are ``response_item`` messages (role user/assistant); the model's own
    items (``reasoning``, ``function_call``, ``custom_tool_call``) count as assistant rows for
    the labels, ``*_output`` rows as tool rows. ``event_msg`` rows repeat the conversation for
    the UI, as the real CLI writes them.
    """

    def __init__(self, name, seed, start, cwd, branch="main", model="gpt-5-codex", cli="0.46.0"):
        super().__init__(name, seed, start)
        self.cwd = cwd
        self.model = model
        sid = self._uuid()
        self._row("session_meta", {"id": sid, "timestamp": self._stamp(), "cwd": cwd, "originator": "codex_cli_rs",
                                   "cli_version": cli, "instructions": None, "source": "cli",
                                   "model_provider": "openai",
                                   "git": {"commit_hash": self._rand(40, "0123456789abcdef"), "branch": branch,
                                           "repository_url": "git@github.com:example-org/" + cwd.rsplit("/", 1)[-1] + ".git"}})
        self._item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": (
            f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
            "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
            "  <shell>bash</shell>\n</environment_context>")}]})
        self.tokens = 0

    def _row(self, typ, payload) -> int:
        self.rows.append({"timestamp": self._tick(0.3, 3), "type": typ, "payload": payload})
        return self.line

    def _item(self, payload) -> int:
        return self._row("response_item", payload)

    def _event(self, payload) -> int:
        return self._row("event_msg", payload)

    def user(self, text) -> int:
        self.wait(self.rng.uniform(0.5, 3))
        line = self._item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self._event({"type": "user_message", "message": text, "images": []})
        self._row("turn_context", {"cwd": self.cwd, "approval_policy": "on-request",
                                   "sandbox_policy": {"mode": "workspace-write", "network_access": False},
                                   "model": self.model, "effort": "medium", "summary": "auto"})
        return line

    def think(self, title, text) -> int:
        self._event({"type": "agent_reasoning", "text": f"**{title}**"})
        return self._item({"type": "reasoning", "summary": [{"type": "summary_text", "text": f"**{title}**\n\n{text}"}],
                           "content": None, "encrypted_content": "gAAAAAB" + self._rand(24) + "-redacted"})

    def say(self, text) -> int:
        line = self._item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        self._event({"type": "agent_message", "message": text})
        return line

    def end_turn(self):
        self.tokens += self.rng.randint(3000, 12000)
        self._event({"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": self.tokens, "cached_input_tokens": int(self.tokens * 0.7),
            "output_tokens": self.tokens // 14, "reasoning_output_tokens": self.tokens // 30,
            "total_tokens": self.tokens + self.tokens // 14}}})

    def shell(self, cmd, out, code=0, secs=None) -> tuple[int, int]:
        """An ``exec_command`` call and its text output (``Process exited with code N``)."""
        cid = "call_" + self._rand(22)
        line = self._item({"type": "function_call", "name": "exec_command", "call_id": cid, "arguments": json.dumps(
            {"cmd": cmd, "workdir": self.cwd, "yield_time_ms": 10000})})
        secs = secs if secs is not None else round(self.rng.uniform(0.05, 9), 4)
        text = (f"Chunk ID: {self._rand(6, '0123456789abcdef')}\nWall time: {secs} seconds\n"
                f"Process exited with code {code}\nOriginal token count: {max(1, len(out) // 4)}\nOutput:\n{out}")
        r = self._item({"type": "function_call_output", "call_id": cid, "output": text})
        return line, r

    def shell_json(self, cmd, out, code=0) -> tuple[int, int]:
        """A ``shell`` call with argv and the JSON output shape ``{"output", "metadata"}``."""
        cid = "call_" + self._rand(22)
        argv = ["bash", "-lc", cmd]
        line = self._item({"type": "function_call", "name": "shell", "call_id": cid, "arguments": json.dumps(
            {"command": argv, "workdir": self.cwd, "timeout_ms": 120000})})
        self._event({"type": "exec_command_begin", "call_id": cid, "command": argv, "cwd": self.cwd})
        secs = round(self.rng.uniform(0.05, 9), 1)
        self._event({"type": "exec_command_end", "call_id": cid, "stdout": out, "stderr": "", "exit_code": code,
                     "duration": {"secs": int(secs), "nanos": 0}})
        r = self._item({"type": "function_call_output", "call_id": cid, "output": json.dumps(
            {"output": out, "metadata": {"exit_code": code, "duration_seconds": secs}})})
        return line, r

    def patch(self, patch_text, files) -> tuple[int, int]:
        cid = "call_" + self._rand(22)
        line = self._item({"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch",
                           "input": patch_text})
        listing = "".join(f"{k} {f}\n" for k, f in files)
        r = self._item({"type": "custom_tool_call_output", "call_id": cid, "output": json.dumps(
            {"output": "Success. Updated the following files:\n" + listing,
             "metadata": {"exit_code": 0, "duration_seconds": 0.0}})})
        return line, r

    def plan(self, steps, explanation=None) -> tuple[int, int]:
        """``update_plan`` with [(step, status)]."""
        cid = "call_" + self._rand(22)
        args = {"plan": [{"step": s, "status": st} for s, st in steps]}
        if explanation:
            args = {"explanation": explanation, **args}
        line = self._item({"type": "function_call", "name": "update_plan", "call_id": cid,
                           "arguments": json.dumps(args)})
        r = self._item({"type": "function_call_output", "call_id": cid, "output": "Plan updated"})
        return line, r


def steps(items, done, active):
    return [(s, "completed" if i < done else ("in_progress" if i == active else "pending"))
            for i, s in enumerate(items)]


# =============================================================================================
# Claude Code sessions
# =============================================================================================

def cc21_gradle_jdk21():
    """Gradle 7.6 on JDK 21, Testcontainers on Colima, JaCoCo coverage gate, a side question, a PR."""
    s = CC("cc21_gradle_jdk21.jsonl", 2101, "2026-02-03T08:55:10", "/Users/dev/work/orders-service",
           slug="brisk-amber-lantern")
    L = s.labels
    s.session_start()
    t1 = s.user("./gradlew build blows up since I switched my default JDK to 21. Can you get it building again? "
                "Don't downgrade the JDK, the whole team is moving to 21.")
    s.think("Run the build first and read the error. JDK 21 plus an older Gradle is a likely suspect.")
    _, f1 = s.bash("./gradlew build", desc="Run the Gradle build", code=1, out="""\

FAILURE: Build failed with an exception.

* What went wrong:
Could not open settings generic class cache for settings file '/Users/dev/work/orders-service/settings.gradle.kts' (/Users/dev/.gradle/caches/7.6.1/scripts/6ylr2fdjyg0r5dwpzb5bm9xu6).
> BUG! exception in phase 'semantic analysis' in source unit '_BuildScript_' Unsupported class file major version 65

* Try:
> Run with --stacktrace option to get the stack trace.
> Run with --info or --debug option to get more log output.
> Run with --scan to get full insights.

* Get more help at https://help.gradle.org

BUILD FAILED in 1s""")
    s.bash("./gradlew --version", out="""\

------------------------------------------------------------
Gradle 7.6.1
------------------------------------------------------------

Build time:   2023-02-24 13:54:42 UTC
Revision:     3905fe8ac072bbd925c70ddbddddf4463341f4b4

Kotlin:       1.7.10
Groovy:       3.0.13
Ant:          Apache Ant(TM) version 1.10.11 compiled on July 10 2021
JVM:          21.0.2 (Eclipse Adoptium 21.0.2+13-LTS)
OS:           Mac OS X 14.3 aarch64""")
    s.say("Class file major version 65 is Java 21. The wrapper pins **Gradle 7.6.1**, whose embedded Groovy can't "
          "read Java 21 class files; Gradle only supports running on Java 21 from **8.5** on. So the fix is to "
          "upgrade the wrapper, not the JDK. Let me try the wrapper task.")
    _, f2 = s.bash("./gradlew wrapper --gradle-version 8.5", code=1, out="""\

FAILURE: Build failed with an exception.

* What went wrong:
Could not open settings generic class cache for settings file '/Users/dev/work/orders-service/settings.gradle.kts' (/Users/dev/.gradle/caches/7.6.1/scripts/6ylr2fdjyg0r5dwpzb5bm9xu6).
> BUG! exception in phase 'semantic analysis' in source unit '_BuildScript_' Unsupported class file major version 65

* Try:
> Run with --stacktrace option to get the stack trace.
> Run with --info or --debug option to get more log output.
> Run with --scan to get full insights.

BUILD FAILED in 1s""")
    s.say("Same failure: the `wrapper` task itself has to configure the build with the old Gradle first. Homebrew "
          "has a newer Gradle, I'll regenerate the wrapper with that one.")
    rj, rj_r, _ = s.reject("Bash", {"command": "gradle wrapper --gradle-version 8.5 --distribution-type bin",
                                    "description": "Regenerate the wrapper with the system Gradle"})
    corr = s.user("don't use the brew gradle, in this repo we always go through ./gradlew so everyone gets the pinned "
                  "version. just edit gradle/wrapper/gradle-wrapper.properties")
    s.read("/Users/dev/work/orders-service/gradle/wrapper/gradle-wrapper.properties", """\
distributionBase=GRADLE_USER_HOME
distributionPath=wrapper/dists
distributionUrl=https\\://services.gradle.org/distributions/gradle-7.6.1-bin.zip
networkTimeout=10000
zipStoreBase=GRADLE_USER_HOME
zipStorePath=wrapper/dists
""")
    s.edit("/Users/dev/work/orders-service/gradle/wrapper/gradle-wrapper.properties",
           "distributionUrl=https\\://services.gradle.org/distributions/gradle-7.6.1-bin.zip",
           "distributionUrl=https\\://services.gradle.org/distributions/gradle-8.5-bin.zip")
    s.bash("./gradlew --version | head -12", out="""\
Downloading https://services.gradle.org/distributions/gradle-8.5-bin.zip
............10%.............20%............30%.............40%.............50%............60%.............70%.............80%............90%.............100%

Welcome to Gradle 8.5!

Here are the highlights of this release:
 - Support for running on Java 21
 - Faster first use with Kotlin DSL
 - Improved error and warning messages

For more details see https://docs.gradle.org/8.5/release-notes.html
""")
    _, ok1 = s.bash("./gradlew build 2>&1 | tail -15", out="""\
> Task :compileJava
> Task :processResources
> Task :classes
> Task :bootJar
> Task :jar
> Task :assemble
> Task :compileTestJava
> Task :testClasses
> Task :test
> Task :check
> Task :build

BUILD SUCCESSFUL in 48s
9 actionable tasks: 9 executed""")
    s.bash("ls build/test-results/test | wc -l && grep -ho 'tests=\"[0-9]*\"' build/test-results/test/*.xml | "
           "cut -d'\"' -f2 | paste -sd+ | bc", out="37\n212")
    done1 = s.say("Builds again on JDK 21.\n\n- **Cause:** the wrapper pinned Gradle 7.6.1, which can't run on Java 21 "
                  "(`Unsupported class file major version 65`).\n- **Fix:** `distributionUrl` in "
                  "`gradle/wrapper/gradle-wrapper.properties` now points at Gradle 8.5 (first release that runs on Java "
                  "21). `./gradlew build` is green: 212 unit tests in 37 classes.\n\nI went through `./gradlew` only, as you "
                  "asked.")
    s.end_turn()

    t2 = s.user("nice. `./gradlew integrationTest` still doesn't work on my machine though. I use colima, not Docker Desktop")
    _, f3 = s.bash("./gradlew integrationTest 2>&1 | grep -v '^$' | tail -20", out="""\
> Task :compileIntegrationTestJava
> Task :integrationTest

OrderRepositoryIT > initializationError FAILED
    java.lang.IllegalStateException at DockerClientProviderStrategy.java:277

OrderEventsIT > initializationError FAILED
    java.lang.IllegalStateException at DockerClientProviderStrategy.java:277

2 tests completed, 2 failed

> Task :integrationTest FAILED

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':integrationTest'.
> There were failing tests. See the report at: file:///Users/dev/work/orders-service/build/reports/tests/integrationTest/index.html

BUILD FAILED in 9s""")
    s.say("The pipe hid the exit code, but the tests failed. Let me get the actual message from the XML report.")
    s.bash("grep -h -m1 -A3 'IllegalStateException' build/test-results/integrationTest/TEST-*OrderRepositoryIT.xml",
           out="""\
  <failure message="java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration" type="java.lang.IllegalStateException">java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration
	at org.testcontainers.dockerclient.DockerClientProviderStrategy.lambda$getFirstValidStrategy$7(DockerClientProviderStrategy.java:277)
	at java.base/java.util.Optional.orElseThrow(Optional.java:403)
	at org.testcontainers.dockerclient.DockerClientProviderStrategy.getFirstValidStrategy(DockerClientProviderStrategy.java:268)""")
    s.bash("docker context ls && ls -l /var/run/docker.sock", code=1, out="""\
NAME       DESCRIPTION                               DOCKER ENDPOINT                                  ERROR
colima *   colima                                    unix:///Users/dev/.colima/default/docker.sock
default    Current DOCKER_HOST based configuration   unix:///var/run/docker.sock
ls: /var/run/docker.sock: No such file or directory""")
    s.say("Testcontainers doesn't read the docker CLI's context; it looks at `DOCKER_HOST` and `/var/run/docker.sock`, "
          "and colima's socket is at `~/.colima/default/docker.sock`. Let me point it there.")
    _, f4 = s.bash("DOCKER_HOST=unix://$HOME/.colima/default/docker.sock ./gradlew integrationTest 2>&1 | grep -E "
                   "'FAILED|Exception|BUILD' | head -8", out="""\
OrderRepositoryIT > initializationError FAILED
    org.testcontainers.containers.ContainerLaunchException at GenericContainer.java:359
        Caused by: com.github.dockerjava.api.exception.InternalServerErrorException: Status 500: {"message":"error while creating mount source path '/Users/dev/.colima/default/docker.sock': mkdir /Users/dev/.colima/default/docker.sock: operation not supported"}
OrderEventsIT > initializationError FAILED
BUILD FAILED in 14s""")
    s.say("Progress: it found Docker now, but Ryuk (Testcontainers' cleanup container) tries to bind-mount the "
          "host-side socket path into the colima VM, where it doesn't exist. Inside the VM the socket is "
          "`/var/run/docker.sock`; `TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE` tells Testcontainers which path to mount.")
    bg, _, bid = s.bash_bg("export DOCKER_HOST=unix://$HOME/.colima/default/docker.sock "
                           "TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock && ./gradlew integrationTest",
                           "Run integration tests against colima")
    s.say("Running the integration tests in the background (they pull Postgres and Kafka images on the first run).")
    s.end_turn()
    s.wait(3)
    s.notify(bid, "Run integration tests against colima", 1)
    _, f5 = s.bash(f"tail -12 {s.task_dir}/tasks/{bid}.output", out="""\
OrderRepositoryIT > savesAndLoadsOrder() PASSED
OrderRepositoryIT > rejectsDuplicateExternalId() PASSED
OrderEventsIT > publishesEventOnCreate() FAILED
    org.awaitility.core.ConditionTimeoutException at ConditionFactory.java:167
OrderEventsIT > publishesEventOnCancel() PASSED

14 tests completed, 1 failed

> Task :integrationTest FAILED

BUILD FAILED in 1m 52s""")
    s.say("Containers start now. One Kafka test timed out waiting for the event; the first run was also pulling "
          "images. Re-running once as is before touching anything.")
    _, ok2 = s.bash("export DOCKER_HOST=unix://$HOME/.colima/default/docker.sock "
                    "TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock && ./gradlew integrationTest 2>&1 | tail -4",
                    out="""\
> Task :integrationTest

BUILD SUCCESSFUL in 41s
4 actionable tasks: 1 executed, 3 up-to-date""")
    s.ask("Where should I persist the two Testcontainers variables for colima?", "Persist env",
          [("~/.zshrc", "Export them in your shell profile"),
           ("~/.testcontainers.properties", "Only docker.host; the socket override still needs the env var")],
          "~/.zshrc")
    s.bash("printf '\\n# Testcontainers on colima\\nexport DOCKER_HOST=\"unix://$HOME/.colima/default/docker.sock\"\\n"
           "export TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock\\n' >> ~/.zshrc && tail -3 ~/.zshrc",
           out="# Testcontainers on colima\nexport DOCKER_HOST=\"unix://$HOME/.colima/default/docker.sock\"\n"
               "export TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock")
    done2 = s.say("Integration tests pass on colima (14/14 on the second run). Two settings were needed:\n\n"
                  "1. `DOCKER_HOST=unix://$HOME/.colima/default/docker.sock`, because Testcontainers ignores the docker "
                  "CLI context and there is no `/var/run/docker.sock` on the host;\n"
                  "2. `TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock`, so Ryuk mounts the socket path that "
                  "exists *inside* the colima VM.\n\nBoth are now exported from `~/.zshrc`. The one Kafka timeout on the "
                  "first run was while images were still pulling; it passed unchanged on the re-run.")
    s.end_turn()

    t3 = s.user("unrelated quick question: what's the actual difference between implementation and api in the "
                "dependencies block?")
    qa = s.say("`api` dependencies are part of your module's public ABI: they leak onto the compile classpath of "
               "anything that depends on your module. `implementation` dependencies are only on your own compile "
               "classpath (and everyone's runtime classpath). Use `api` only when a type from that library appears in "
               "your public signatures; otherwise `implementation` keeps consumers' classpaths smaller and "
               "recompiles fewer modules. `api` needs the `java-library` plugin; `orders-service` is an application "
               "with the Spring Boot plugin, so `implementation` is right everywhere here.")
    s.end_turn()

    t4 = s.user("ok. add jacoco to the build and make ./gradlew check fail when line coverage drops under 80%")
    s.read("/Users/dev/work/orders-service/build.gradle.kts", """\
plugins {
    java
    id("org.springframework.boot") version "3.2.2"
    id("io.spring.dependency-management") version "1.1.4"
}

group = "com.example.orders"
version = "1.8.0-SNAPSHOT"

java {
    toolchain { languageVersion = JavaLanguageVersion.of(21) }
}

repositories { mavenCentral() }

dependencies {
    implementation("org.springframework.boot:spring-boot-starter-web")
    implementation("org.springframework.boot:spring-boot-starter-data-jpa")
    implementation("org.springframework.kafka:spring-kafka")
    runtimeOnly("org.postgresql:postgresql")
    testImplementation("org.springframework.boot:spring-boot-starter-test")
    testImplementation("org.testcontainers:postgresql")
    testImplementation("org.testcontainers:kafka")
}

tasks.test { useJUnitPlatform() }
""")
    s.edit("/Users/dev/work/orders-service/build.gradle.kts", "plugins {\n    java\n",
           "plugins {\n    java\n    jacoco\n")
    s.edit("/Users/dev/work/orders-service/build.gradle.kts", "tasks.test { useJUnitPlatform() }\n", """\
tasks.test {
    useJUnitPlatform()
    finalizedBy(tasks.jacocoTestReport)
}

tasks.jacocoTestReport {
    reports {
        xml.isEnabled = true
        html.isEnabled = true
    }
}

tasks.jacocoTestCoverageVerification {
    violationRules {
        rule {
            limit {
                counter = "LINE"
                minimum = "0.80".toBigDecimal()
            }
        }
    }
}
""")
    _, f6 = s.bash("./gradlew check", code=1, out="""\
e: file:///Users/dev/work/orders-service/build.gradle.kts:34:13: Unresolved reference: isEnabled
e: file:///Users/dev/work/orders-service/build.gradle.kts:35:14: Unresolved reference: isEnabled

FAILURE: Build failed with an exception.

* Where:
Build file '/Users/dev/work/orders-service/build.gradle.kts' line: 34

* What went wrong:
Script compilation errors:

  Line 34:         xml.isEnabled = true
                       ^ Unresolved reference: isEnabled

  Line 35:         html.isEnabled = true
                        ^ Unresolved reference: isEnabled

2 errors

BUILD FAILED in 3s""")
    s.say("`enabled` on JaCoCo report containers was deprecated in Gradle 7 and removed in 8; the property is now "
          "`required`.")
    s.edit("/Users/dev/work/orders-service/build.gradle.kts",
           "        xml.isEnabled = true\n        html.isEnabled = true\n",
           "        xml.required = true\n        html.required = true\n")
    _, nocheck = s.bash("./gradlew check --console=plain 2>&1 | grep -E '^> Task|BUILD'", out="""\
> Task :compileJava UP-TO-DATE
> Task :processResources UP-TO-DATE
> Task :classes UP-TO-DATE
> Task :compileTestJava UP-TO-DATE
> Task :testClasses UP-TO-DATE
> Task :test
> Task :jacocoTestReport
> Task :check
BUILD SUCCESSFUL in 31s""")
    s.say("It compiles, but `jacocoTestCoverageVerification` never ran: the `jacoco` plugin adds the task but does "
          "not hook it into `check`. Wiring it in explicitly:")
    s.edit("/Users/dev/work/orders-service/build.gradle.kts", "tasks.jacocoTestCoverageVerification {\n",
           "tasks.check { dependsOn(tasks.jacocoTestCoverageVerification) }\n\ntasks.jacocoTestCoverageVerification {\n")
    _, gate = s.bash("./gradlew check --console=plain 2>&1 | tail -12", out="""\
> Task :jacocoTestReport UP-TO-DATE
> Task :jacocoTestCoverageVerification FAILED

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':jacocoTestCoverageVerification'.
> Rule violated for bundle orders-service: lines covered ratio is 0.74, but expected minimum is 0.80

* Try:
> Run with --stacktrace option to get the stack trace.

BUILD FAILED in 4s""")
    s.say("The gate works now, and it fails: current line coverage is **74%**, below the 80% you asked for. Do you "
          "want me to lower the threshold for now, or should I look for the least-covered classes first?")
    s.end_turn()
    s.user("set it to 0.70 for now, we'll ratchet it up later")
    s.edit("/Users/dev/work/orders-service/build.gradle.kts", 'minimum = "0.80".toBigDecimal()',
           'minimum = "0.70".toBigDecimal()')
    _, ok4 = s.bash("./gradlew check --console=plain 2>&1 | grep -E 'jacoco|BUILD'", out="""\
> Task :jacocoTestReport UP-TO-DATE
> Task :jacocoTestCoverageVerification
BUILD SUCCESSFUL in 5s""")
    s.say("Done: `./gradlew check` now runs `jacocoTestCoverageVerification` and passes at the 70% minimum (74% "
          "today). The XML report is at `build/reports/jacoco/test/jacocoTestReport.xml` for CI upload.")
    s.end_turn()

    t5 = s.user("great. put all of this on a branch and open a PR")
    s.bash("git checkout -b build/jdk21-gradle85 && git add gradle/wrapper/gradle-wrapper.properties build.gradle.kts "
           "&& git commit -q -m 'build: Gradle 8.5 for JDK 21, JaCoCo coverage gate (70%)' && git push -u origin HEAD",
           out="""\
Switched to a new branch 'build/jdk21-gradle85'
remote:
remote: Create a pull request for 'build/jdk21-gradle85' on GitHub by visiting:
remote:      https://github.com/example-org/orders-service/pull/new/build/jdk21-gradle85
remote:
To github.com:example-org/orders-service.git
 * [new branch]      build/jdk21-gradle85 -> build/jdk21-gradle85
branch 'build/jdk21-gradle85' set up to track 'origin/build/jdk21-gradle85'.""")
    s.bash("gh pr create --fill --base main", out="https://github.com/example-org/orders-service/pull/118")
    s.say("PR opened: https://github.com/example-org/orders-service/pull/118 (wrapper bump + JaCoCo gate). Your "
          "`~/.zshrc` change is local and not part of it.")
    s.end_turn()

    L.task(t1, "Get ./gradlew build working on JDK 21 (upgrade the Gradle wrapper from 7.6.1 to 8.5)")
    L.task(t2, "Make ./gradlew integrationTest (Testcontainers) work with colima instead of Docker Desktop")
    L.task(t3, "Side question: implementation vs api in Gradle dependencies", "side-task")
    L.task(t4, "Add JaCoCo and make ./gradlew check fail below a line-coverage minimum")
    L.task(t5, "Commit the build changes on a branch and open a PR")
    L.lesson((f1, done1), "error",
             "Gradle 7.x cannot run on JDK 21: the build dies with \"Unsupported class file major version 65\"; upgrade the project's Gradle to 8.5 or later (the first release that supports running on Java 21) instead of downgrading the JDK.",
             "./gradlew build fails with the Groovy BUG! message; --version shows Gradle 7.6.1 on JVM 21.0.2; after pointing the wrapper at 8.5 the build passes with 212 tests.",
             [["major version 65", "Unsupported class file"], ["8.5", "Gradle 8", "newer Gradle", "upgrade Gradle", "upgrade the Gradle"]])
    L.lesson((f2, ok1), "error",
             "When the pinned Gradle cannot even configure the build, `./gradlew wrapper --gradle-version X` fails with the same error; edit `distributionUrl` in `gradle/wrapper/gradle-wrapper.properties` by hand and let the next `./gradlew` call download the new distribution.",
             "`./gradlew wrapper --gradle-version 8.5` fails exactly like the build; the user says to edit the properties file; after the edit ./gradlew downloads 8.5 and builds.",
             [["distributionUrl", "gradle-wrapper.properties"], ["wrapper --gradle-version", "wrapper task", "gradlew wrapper", "by hand", "edit"]])
    L.lesson((rj_r, corr), "preference",
             "In the orders-service repo always run Gradle through `./gradlew` (the pinned wrapper), never a system or Homebrew `gradle`.",
             "Repository-specific: the user rejects `gradle wrapper ...` with the brew Gradle and says they always go through ./gradlew so everyone gets the pinned version.",
             [["./gradlew", "gradlew"], ["brew", "system gradle", "system `gradle`", "never", "always"]])
    L.lesson((f3, done2), "error",
             "Testcontainers fails with \"Could not find a valid Docker environment\" on colima because it ignores the docker CLI context; set DOCKER_HOST=unix://$HOME/.colima/default/docker.sock and TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE=/var/run/docker.sock (otherwise Ryuk fails to mount the socket with 'operation not supported').",
             "integrationTest fails with IllegalStateException; docker context shows colima's socket; with DOCKER_HOST only, Ryuk's mount fails; with both variables the tests pass.",
             [["colima"], ["DOCKER_HOST", "TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE", "socket override"]])
    L.lesson((f6, ok4), "error",
             "In Gradle 8 JaCoCo report settings are `xml.required = true` / `html.required = true`; the old `isEnabled` / `enabled` property was removed and the Kotlin DSL fails with \"Unresolved reference: isEnabled\".",
             "./gradlew check fails with two script compilation errors on xml.isEnabled/html.isEnabled; after switching to required the script compiles.",
             [["required"], ["isEnabled", "enabled"], ["jacoco", "report"]])
    L.lesson((nocheck, ok4), "pattern",
             "Applying the `jacoco` plugin does not make `check` run `jacocoTestCoverageVerification`; add `tasks.check { dependsOn(tasks.jacocoTestCoverageVerification) }` so the coverage minimum actually fails the build.",
             "The first green `check` output lists no verification task; after the dependsOn the gate runs and fails at 0.74 < 0.80, then passes at the 0.70 minimum the user chose.",
             [["jacocoTestCoverageVerification"], ["dependsOn", "check"]])
    L.non_lesson((ok1, done1), "orders-service has 212 unit tests in 37 test classes.",
                 "A one-off count about this repository, not a reusable lesson.")
    L.non_lesson((f5, ok2), "OrderEventsIT.publishesEventOnCreate times out with ConditionTimeoutException and needs a longer Awaitility timeout.",
                 "A flaky failure during the first run (images still pulling) that passed on the re-run with nothing changed.")
    L.non_lesson((t3, qa), "Use `api` only for dependencies whose types appear in a module's public signatures; otherwise use `implementation`.",
                 "Textbook answer to a side question; nothing was tried in the session.")
    return s

def cc22_terraform_state():
    """Terraform on AWS: stale state lock, provider lock file, import block, for_each, a blocking fmt check."""
    s = CC("cc22_terraform_state.jsonl", 2202, "2026-02-09T09:20:00", "/home/dev/infra/platform-tf",
           hooks=["~/.claude/hooks/audit-log.sh"])
    L = s.labels
    s.session_start()
    t1 = s.user("terraform plan in the staging workspace fails with a lock error, can you sort it out? "
                "The CI job got cancelled this morning.")
    _, f1 = s.bash("terraform workspace show && terraform plan -out=tfplan -no-color", code=1, out="""\
staging
Acquiring state lock. This may take a few moments...

Error: Error acquiring the state lock

Error message: ConditionalCheckFailedException: The conditional request failed
Lock Info:
  ID:        6f0a3c1e-9b1d-4c52-8a7e-2d1f0b9e4a11
  Path:      tfstate-example-platform/env:/staging/platform.tfstate
  Operation: OperationTypeApply
  Who:       runner@ci-runner-7
  Version:   1.7.4
  Created:   2026-02-09 07:41:12.448213 +0000 UTC
  Info:


Terraform acquires a state lock to protect the state from being written
by multiple users at the same time. Please resolve the issue above and try
again. For most commands, you can disable locking with the "-lock=false"
flag, but this is not recommended.""")
    s.say("The DynamoDB lock is held by an **apply** from `ci-runner-7` started at 07:41 UTC. If that apply were "
          "still running, unlocking would let two writers corrupt the state, so let me check before touching it.")
    s.bash("gh run list --workflow terraform.yml --limit 3", out="""\
STATUS  TITLE                          WORKFLOW   BRANCH  EVENT              ID          ELAPSED  AGE
X       alarms: queue depth per queue  terraform  main    push               8120447731  6m12s    about 1 hour ago
✓       bump aws provider to 5.40      terraform  main    push               8120113502  3m48s    about 2 hours ago
✓       staging: raise RDS storage     terraform  main    workflow_dispatch  8119870044  4m02s    about 1 day ago""")
    s.bash("gh run view 8120447731 --json conclusion,status -q '.status + \" \" + .conclusion'", out="completed cancelled")
    s.ask("The lock belongs to CI run 8120447731, which GitHub shows as cancelled. Is anything else running "
          "Terraform against staging right now?", "Unlock",
          [("Nothing else is running", "Force-unlock the stale lock"), ("Not sure", "Leave the lock and investigate")],
          "Nothing else is running")
    s.bash("terraform force-unlock -force 6f0a3c1e-9b1d-4c52-8a7e-2d1f0b9e4a11", out="""\
Terraform state has been successfully unlocked!

The state has been unlocked, and Terraform commands should now be able to
obtain a new lock on the remote state.""")
    _, f2 = s.bash("terraform plan -out=tfplan -no-color", code=1, out="""\
Error: Inconsistent dependency lock file

The following dependency selections recorded in the lock file are
inconsistent with the current configuration:
  - provider registry.terraform.io/hashicorp/aws: locked version selection 5.31.0 doesn't match the updated version constraints "~> 5.40"

To update the locked dependency selections to match a changed
configuration, run:
  terraform init -upgrade""")
    s.say("The lock is gone. This is a second, unrelated problem: `versions.tf` on main now requires `~> 5.40` (the "
          "\"bump aws provider\" commit), but my local `.terraform.lock.hcl` still selects 5.31.0.")
    s.bash("terraform init -upgrade -no-color | grep -E 'Installing|Installed|lock file|successfully'", out="""\
- Installing hashicorp/aws v5.40.0...
- Installed hashicorp/aws v5.40.0 (signed by HashiCorp)
Terraform has made some changes to the provider dependency selections recorded
Terraform has been successfully initialized!""")
    _, ok1 = s.bash("terraform plan -out=tfplan -no-color | tail -4", out="""\
      # (14 unchanged attributes hidden)
    }

Plan: 0 to add, 2 to change, 0 to destroy.""")
    s.bash("git status --short", out=" M .terraform.lock.hcl")
    done1 = s.say("Plan works again on staging: **0 to add, 2 to change** (the queue-depth alarms from the cancelled "
                  "run).\n\n1. The state lock was left by CI run 8120447731, which was cancelled mid-apply; after "
                  "checking that nothing else was running I removed it with `terraform force-unlock`.\n2. Then `init` "
                  "complained that the lock file pinned aws 5.31.0 while `versions.tf` wants `~> 5.40`; `terraform init "
                  "-upgrade` fixed that. `.terraform.lock.hcl` changed locally, but main already has the same "
                  "selection, so there is nothing to commit.")
    s.end_turn()

    t2 = s.user("thanks. next: the logs-archive bucket was created by hand years ago. import it into state as "
                "aws_s3_bucket.logs_archive instead of letting terraform recreate it")
    s.grep("logs-archive", "s3.tf:3:# TODO: example-platform-logs-archive is unmanaged (created in the console)", mode="content")
    s.write("/home/dev/infra/platform-tf/imports.tf", """\
import {
  to = aws_s3_bucket.logs_archive
  id = "example-platform-logs-archive"
}
""")
    _, gen = s.bash("terraform plan -generate-config-out=generated_logs_archive.tf -no-color | tail -12", out="""\
aws_s3_bucket.logs_archive: Preparing import... [id=example-platform-logs-archive]
aws_s3_bucket.logs_archive: Refreshing state... [id=example-platform-logs-archive]

Terraform will perform the following actions:

  # aws_s3_bucket.logs_archive will be imported
  # (config will be generated)
    resource "aws_s3_bucket" "logs_archive" {
        arn                         = "arn:aws:s3:::example-platform-logs-archive"
        bucket                      = "example-platform-logs-archive"

Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.""")
    s.read("/home/dev/infra/platform-tf/generated_logs_archive.tf", """\
# __generated__ by Terraform
# Please review these resources and move them into your main configuration files.

# __generated__ by Terraform from "example-platform-logs-archive"
resource "aws_s3_bucket" "logs_archive" {
  bucket              = "example-platform-logs-archive"
  bucket_prefix       = null
  force_destroy       = false
  object_lock_enabled = false
  tags = {
    team = "platform"
  }
  tags_all = {
    team = "platform"
  }
}
""")
    s.say("I'll move a trimmed version into `s3.tf` (dropping the null and computed attributes) and delete the "
          "generated file.")
    s.edit("/home/dev/infra/platform-tf/s3.tf",
           "# TODO: example-platform-logs-archive is unmanaged (created in the console)\n",
           "resource \"aws_s3_bucket\" \"logs_archive\" {\n  bucket = \"example-platform-logs-archive\"\n\n"
           "  tags = {\n    team = \"platform\"\n  }\n}\n")
    _, ok2 = s.bash("rm generated_logs_archive.tf && terraform plan -out=tfplan -no-color | tail -1",
                    out="Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.")
    s.say("Clean: the plan only imports the bucket and changes nothing on it. Applying the saved plan now.")
    _, rj_r, _ = s.reject("Bash", {"command": "terraform apply tfplan", "description": "Apply the import plan"})
    pref = s.user("no. never run apply from your machine, for any workspace. you produce plans, applies go through "
                  "the CI pipeline after review. open a PR with the import instead")
    s.bash("git switch -c import-logs-archive && git add imports.tf s3.tf && git commit -q -m "
           "'s3: import hand-made logs-archive bucket' && git push -q -u origin HEAD && gh pr create --fill",
           out="Switched to a new branch 'import-logs-archive'\nhttps://github.com/example-org/platform-tf/pull/342")
    s.say("Understood, no applies from here. PR with the `import` block and the resource: "
          "https://github.com/example-org/platform-tf/pull/342. CI's plan should show `1 to import`.")
    s.end_turn()

    t3 = s.user("one more: plan on the prod workspace fails in modules/alarms since yesterday's queue change. "
                "fix it on the same branch")
    _, f3 = s.bash("terraform workspace select prod && terraform plan -no-color 2>&1 | tail -24", out="""\
Switched to workspace "prod".

Error: Invalid for_each argument

  on modules/alarms/main.tf line 12, in resource "aws_cloudwatch_metric_alarm" "queue_depth":
  12:   for_each = toset([for q in var.queues : q.arn])
    ├────────────────
    │ var.queues is list of object with 3 elements

The "for_each" set includes values derived from resource attributes that
cannot be determined until apply, and so Terraform cannot determine the
full set of keys that will identify the instances of this resource.

When working with unknown values in for_each, it's better to use a map
value where the keys are defined statically in your configuration and
where only the values contain apply-time results.

Alternatively, you could use the -target planning option to first apply
only the resources that the for_each value depends on, and then apply a
second time to fully converge.""")
    s.read("/home/dev/infra/platform-tf/modules/alarms/main.tf", """\
variable "queues" {
  type = list(object({
    name = string
    arn  = string
  }))
}

variable "sns_topic_arn" { type = string }

resource "aws_cloudwatch_metric_alarm" "queue_depth" {
  # one alarm per queue
  for_each = toset([for q in var.queues : q.arn])

  alarm_name          = "queue-depth-${each.key}"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = element(split(":", each.key), 5) }
  comparison_operator = "GreaterThanThreshold"
  threshold           = 1000
  evaluation_periods  = 3
  period              = 300
  statistic           = "Maximum"
  alarm_actions       = [var.sns_topic_arn]
}
""")
    s.say("The keys are queue ARNs, and one of the three queues is created in the same plan, so its ARN is unknown "
          "until apply. Keys must be known at plan time: key the map by the queue *name* (static in config) and "
          "keep the ARN in the value.")
    _, typo = s.edit("/home/dev/infra/platform-tf/modules/alarms/main.tf", """\
  for_each = toset([for q in var.queues : q.arn])

  alarm_name          = "queue-depth-${each.key}"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = element(split(":", each.key), 5) }""", """\
  for_each = { for q in var.queues : q.nmae => q }

  alarm_name          = "queue-depth-${each.key}"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value.name }""")
    _, typo_r = s.bash("terraform plan -no-color 2>&1 | grep -A6 Error", out="""\
Error: Unsupported attribute

  on modules/alarms/main.tf line 12, in resource "aws_cloudwatch_metric_alarm" "queue_depth":
  12:   for_each = { for q in var.queues : q.nmae => q }

This object does not have an attribute named "nmae".""")
    s.edit("/home/dev/infra/platform-tf/modules/alarms/main.tf", "q.nmae => q", "q.name => q")
    _, ok3 = s.bash("terraform plan -no-color 2>&1 | tail -1", out="Plan: 4 to add, 0 to change, 0 to destroy.")
    s.say("Prod plans again: 1 new queue + 3 alarms keyed by queue name. Committing to the PR branch.")
    _, hook = s.bash("git add modules/alarms/main.tf && git commit -m 'alarms: key queue_depth by queue name'",
                     code=1, out="""\
terraform_fmt............................................................Failed
- hook id: terraform_fmt
- exit code: 3
- files were modified by this hook

modules/network/main.tf""")
    side = s.say("The pre-commit `terraform_fmt` hook fails on `modules/network/main.tf`, which I didn't touch; it was "
                 "already unformatted on main. Formatting that file first so the commit can go through.")
    side_b, _ = s.bash("git diff --stat modules/network/main.tf && git log -1 --format=%h -- modules/network/main.tf",
                       out=" modules/network/main.tf | 6 +++---\n 1 file changed, 3 insertions(+), 3 deletions(-)\n51c0e2a")
    s.bash("terraform fmt -check -recursive && git add modules/network/main.tf modules/alarms/main.tf && git commit -q "
           "-m 'alarms: key queue_depth by queue name' -m 'Also terraform fmt modules/network (pre-existing).' && "
           "git push -q && git log --oneline -2", out="c4e81d7 alarms: key queue_depth by queue name\n"
                                                      "9a2f113 s3: import hand-made logs-archive bucket")
    s.say("Pushed to PR #342: the `for_each` fix plus the formatting of `modules/network/main.tf` that was blocking "
          "the hook.")
    s.end_turn()

    L.task(t1, "Fix terraform plan on staging: stale state lock from a cancelled CI apply, then the provider lock file")
    L.task(t2, "Import the hand-made logs-archive S3 bucket into Terraform state (import block) and open a PR")
    L.task(t3, "Fix 'Invalid for_each argument' in modules/alarms on the prod workspace")
    L.task(side, "Format the pre-existing unformatted modules/network/main.tf that blocks the commit hook", "side-task",
           (side, side_b))
    L.lesson((f1, done1), "error",
             "\"Error acquiring the state lock\" left by a cancelled CI apply: confirm from the Lock Info (Who/Created) and the CI run that nothing is still running, then remove it with `terraform force-unlock <lock ID>`; don't work around it with -lock=false.",
             "The plan fails with a DynamoDB ConditionalCheckFailedException lock from ci-runner-7; gh shows the run cancelled, the user confirms, force-unlock succeeds and the plan proceeds.",
             [["force-unlock"], ["state lock", "lock id", "lock info"]])
    L.lesson((f2, ok1), "error",
             "\"Inconsistent dependency lock file ... locked version selection doesn't match the updated version constraints\" after a provider bump means `.terraform.lock.hcl` is behind `versions.tf`; run `terraform init -upgrade`.",
             "After the unlock, plan fails on aws 5.31.0 vs ~> 5.40; init -upgrade installs 5.40.0 and the plan works.",
             [["init -upgrade"], ["Inconsistent dependency lock", "lock file", ".terraform.lock.hcl", "version constraint"]])
    L.lesson((gen, ok2), "pattern",
             "To bring a hand-made resource under Terraform, add an `import { to = ..., id = ... }` block and run `terraform plan -generate-config-out=<new file>`; move the trimmed config into your own files and re-plan until it shows only \"1 to import\".",
             "The import block plus -generate-config-out produces the bucket config; after moving it into s3.tf the plan is 1 to import, 0 to change.",
             [["import {", "import block"], ["generate-config-out", "1 to import"]])
    L.lesson((rj_r, pref), "preference",
             "In the platform-tf repo never run `terraform apply` locally for any workspace: produce plans and open a PR; applies only run in the CI pipeline after review.",
             "Repository-specific rule: the user rejects `terraform apply tfplan` and states it.",
             [["terraform apply", "apply locally", "applies", "run apply", "apply from"], ["never", "CI", "locally", "review"]])
    L.lesson((f3, ok3), "error",
             "\"Invalid for_each argument ... cannot be determined until apply\" comes from keys derived from resource attributes (like ARNs of resources created in the same plan); key the map by a value known at plan time (e.g. the queue name) and keep the unknown attribute in the value.",
             "for_each over q.arn fails while a queue is being created; switching to { for q in var.queues : q.name => q } plans 4 to add.",
             [["for_each"], ["until apply", "plan time", "statically", "known"]])
    L.non_lesson((typo_r, ok3), "The attribute in the queues object is `name`, not `nmae`.",
                 "A typo made in an edit and fixed on the next call.")
    L.non_lesson((done1, done1), "The staging Terraform state lives in the tfstate-example-platform bucket under env:/staging/platform.tfstate.",
                 "A one-off fact about this project's backend.")
    return s


def cc23_rails_bundler():
    """Rails on a new Mac: Ruby version, mysql2 native build, a user correction, mailer URLs, a deprecation."""
    s = CC("cc23_rails_bundler.jsonl", 2303, "2026-02-11T13:05:00", "/Users/dev/code/storefront", branch="main")
    L = s.labels
    s.session_start()
    t1 = s.user("bundle install fails on my new laptop. can you fix it?")
    _, f1 = s.bash("bundle install", code=18, out="Your Ruby version is 3.1.4, but your Gemfile specified 3.2.2")
    s.bash("cat .ruby-version; which ruby; rbenv version", code=1, out="""\
3.2.2
/opt/homebrew/opt/ruby@3.1/bin/ruby
rbenv: version `3.2.2' is not installed (set by /Users/dev/code/storefront/.ruby-version)""")
    s.say("Two things: the project pins Ruby 3.2.2 in `.ruby-version`, which rbenv doesn't have installed yet, and "
          "this shell isn't using rbenv's shims at all. `ruby` resolves to Homebrew's `ruby@3.1`, because "
          "`rbenv init` only runs in interactive shells. Installing 3.2.2 and initialising rbenv in the same command:")
    _, rb = s.bash("rbenv install 3.2.2 && eval \"$(rbenv init - bash)\" && ruby -v && gem install bundler:2.5.6 "
                   "--no-document", desc="Install Ruby 3.2.2 via rbenv", timeout=600000, out="""\
==> Downloading ruby-3.2.2.tar.gz...
-> curl -q -fL -o ruby-3.2.2.tar.gz https://cache.ruby-lang.org/pub/ruby/3.2/ruby-3.2.2.tar.gz
==> Installing ruby-3.2.2...
ruby-build: using readline from homebrew
ruby-build: using libyaml from homebrew
ruby-build: using gmp from homebrew
==> Installed ruby-3.2.2 to /Users/dev/.rbenv/versions/3.2.2

ruby 3.2.2 (2023-03-30 revision e51014f9c0) [arm64-darwin23]
Successfully installed bundler-2.5.6
1 gem installed""")
    _, f2 = s.bash("eval \"$(rbenv init - bash)\" && bundle install 2>&1 | tail -25", out="""\
Fetching mysql2 0.5.6
Installing mysql2 0.5.6 with native extensions
Gem::Ext::BuildError: ERROR: Failed to build gem native extension.

    current directory: /Users/dev/.rbenv/versions/3.2.2/lib/ruby/gems/3.2.0/gems/mysql2-0.5.6/ext/mysql2
/Users/dev/.rbenv/versions/3.2.2/bin/ruby extconf.rb
checking for rb_absint_size()... yes
checking for rb_absint_singlebit_p()... yes
checking for rb_wait_for_single_fd()... yes
-----
Using --with-openssl-dir=/opt/homebrew/opt/openssl@3
-----
-----
mysql client is missing. You may need to 'sudo apt-get install libmariadb-dev', 'sudo apt-get install libmysqlclient-dev' or 'sudo yum install mysql-devel', and try again.
-----
*** extconf.rb failed ***
Could not create Makefile due to some reason, probably lack of necessary
libraries and/or headers.  Check the mkmf.log file for more details.  You may
need configuration options.

An error occurred while installing mysql2 (0.5.6), and Bundler cannot continue.

In Gemfile:
  mysql2""")
    s.say("Ruby is right now; next failure is the `mysql2` native extension. mysql2 0.5.6 is a bit old, so let me "
          "refresh the bundle first.")
    _, rj_r, _ = s.reject("Bash", {"command": "eval \"$(rbenv init - bash)\" && bundle update",
                                   "description": "Update all gems"})
    corr = s.user("no, don't run a bare `bundle update`, that bumps every gem in the lockfile. if you really need a "
                  "newer version of one gem, use `bundle update --conservative <gem>`. and here it's not the version anyway, "
                  "it can't find the mysql client")
    s.say("Right, sorry. The extension needs `mysql_config` from a MySQL client library. On macOS that's Homebrew's "
          "`mysql-client`, which is keg-only (not on PATH), so Bundler has to be told where its `mysql_config` is.")
    s.bash("brew install mysql-client zstd 2>&1 | tail -3 && brew --prefix mysql-client", out="""\
==> Caveats
mysql-client is keg-only, which means it was not symlinked into /opt/homebrew,
because it conflicts with mysql (which contains client libraries).
/opt/homebrew/opt/mysql-client""")
    _, f3 = s.bash("bundle config --local build.mysql2 \"--with-mysql-config=$(brew --prefix mysql-client)/bin/mysql_config\" "
                   "&& eval \"$(rbenv init - bash)\" && bundle install 2>&1 | grep -E 'ld:|error|Bundle complete' | head -5",
                   out="""\
ld: library not found for -lzstd
clang: error: linker command failed with exit code 1 (use -v to see invocation)
An error occurred while installing mysql2 (0.5.6), and Bundler cannot continue.""")
    s.say("It compiles now but fails to link: the Homebrew client library depends on zstd, and its lib directory "
          "isn't on the default linker path on Apple Silicon. Adding it to the same build config:")
    _, ok1 = s.bash("bundle config --local build.mysql2 \"--with-mysql-config=$(brew --prefix mysql-client)/bin/mysql_config "
                    "--with-ldflags=-L$(brew --prefix zstd)/lib\" && eval \"$(rbenv init - bash)\" && bundle install 2>&1 "
                    "| tail -3", out="""\
Installing mysql2 0.5.6 with native extensions
Bundle complete! 47 Gemfile dependencies, 131 gems now installed.
Use `bundle info [gemname]` to see where a bundled gem is installed.""")
    s.say("`bundle install` completes.\n\n1. **Ruby:** `.ruby-version` wants 3.2.2. I installed it with rbenv; "
                  "open a new terminal (or `eval \"$(rbenv init -)\"`) so your shell uses it instead of Homebrew's 3.1.\n"
                  "2. **mysql2:** installed `mysql-client` and `zstd` with Homebrew and stored the build flags in "
                  "`.bundle/config` (`--with-mysql-config=…/mysql-client/bin/mysql_config --with-ldflags=-L…/zstd/lib`).\n\n"
                  "The lockfile is unchanged.")
    s.end_turn()

    t2 = s.user("thanks. now bin/rails test: there are 3 errors in the mailer tests since the password-reset PR was "
                "merged. fix those, then go through the deprecation warnings in the test log")
    s.todo([("Fix the 3 mailer test errors", "in_progress", "Fixing the mailer test errors"),
            ("Fix deprecation warnings from log/test.log", "pending", "Fixing deprecation warnings")])
    _, f4 = s.bash("eval \"$(rbenv init - bash)\" && bin/rails test 2>&1 | tail -22", out="""\
Error:
PasswordMailerTest#test_reset_email_contains_link:
ActionView::Template::Error: Missing host to link to! Please provide the :host parameter, set default_url_options[:host], or set :only_path to true
    app/views/password_mailer/reset.html.erb:4
    test/mailers/password_mailer_test.rb:9:in `block in <class:PasswordMailerTest>'

bin/rails test test/mailers/password_mailer_test.rb:7

E

Error:
PasswordMailerTest#test_reset_email_subject:
ActionView::Template::Error: Missing host to link to! Please provide the :host parameter, set default_url_options[:host], or set :only_path to true
    app/views/password_mailer/reset.html.erb:4

bin/rails test test/mailers/password_mailer_test.rb:14

Finished in 6.482104s, 11.4160 runs/s, 32.7059 assertions/s.
74 runs, 212 assertions, 0 failures, 3 errors, 0 skips""")
    s.read("/Users/dev/code/storefront/app/views/password_mailer/reset.html.erb", """\
<h1>Reset your password</h1>
<p>Someone asked to reset the password for your account.</p>
<p>
  <%= link_to "Choose a new password", edit_password_reset_url(token: @token) %>
</p>
""")
    s.grep("default_url_options", "config/environments/production.rb:61:  config.action_mailer.default_url_options = { host: \"shop.example.test\" }",
           path="config")
    s.say("Mailer views have no request, so `*_url` helpers need `action_mailer.default_url_options[:host]`. "
          "Production sets it; the test environment doesn't, and this PR added the first `_url` link in a mailer.")
    s.edit("/Users/dev/code/storefront/config/environments/test.rb",
           "  config.action_mailer.delivery_method = :test\n",
           "  config.action_mailer.delivery_method = :test\n"
           "  config.action_mailer.default_url_options = { host: \"www.example.com\" }\n")
    _, ok2 = s.bash("eval \"$(rbenv init - bash)\" && bin/rails test 2>&1 | tail -3", out="""\
Finished in 6.118530s, 12.0944 runs/s, 35.9563 assertions/s.
74 runs, 218 assertions, 0 failures, 0 errors, 0 skips""")
    s.say("All 74 tests pass.")
    s.end_turn()
    s.user("also put the same in development.rb, otherwise letter_opener links break")
    s.edit("/Users/dev/code/storefront/config/environments/development.rb",
           "  config.action_mailer.delivery_method = :letter_opener\n",
           "  config.action_mailer.delivery_method = :letter_opener\n"
           "  config.action_mailer.default_url_options = { host: \"localhost\", port: 3000 }\n")
    _, sys_f = s.bash("eval \"$(rbenv init - bash)\" && bin/rails test:system 2>&1 | tail -8", out="""\
Error:
CheckoutTest#test_applying_a_coupon:
Selenium::WebDriver::Error::StaleElementReferenceError: stale element reference: stale element not found
  (Session info: chrome=121.0.6167.160)
    test/system/checkout_test.rb:31:in `block in <class:CheckoutTest>'

12 runs, 40 assertions, 0 failures, 1 errors, 0 skips""")
    _, sys_ok = s.bash("eval \"$(rbenv init - bash)\" && bin/rails test:system 2>&1 | tail -1",
                       out="12 runs, 41 assertions, 0 failures, 0 errors, 0 skips")
    n3 = s.say("Development has the host now (`localhost:3000`); system tests also pass (one stale-element error on "
               "the first run, gone on the re-run). Mailer errors done; next, the deprecation warnings.")
    s.todo([("Fix the 3 mailer test errors", "completed", "Fixing the mailer test errors"),
            ("Fix deprecation warnings from log/test.log", "in_progress", "Fixing deprecation warnings")])
    n3b, f5 = s.bash("grep -h 'DEPRECATION WARNING' log/test.log | sed 's/ (called from/\\n  (called from/' | sort | uniq -c | sort -rn",
                     out="""\
     24 DEPRECATION WARNING: TimeWithZone#to_s(:db) is deprecated. Please use TimeWithZone#to_fs(:db) instead.
     18   (called from block in <class:Order> at /Users/dev/code/storefront/app/models/order.rb:18)
      6   (called from export_row at /Users/dev/code/storefront/app/services/order_export.rb:27)""")
    s.bash("grep -rn 'to_s(:' app lib", out="""\
app/models/order.rb:18:    scope :placed_before, ->(t) { where("placed_at < ?", t.to_s(:db)) }
app/services/order_export.rb:27:      order.placed_at.to_s(:db),""")
    s.edit("/Users/dev/code/storefront/app/models/order.rb", "t.to_s(:db)", "t.to_fs(:db)")
    s.edit("/Users/dev/code/storefront/app/services/order_export.rb", "order.placed_at.to_s(:db),",
           "order.placed_at.to_fs(:db),")
    _, ok3 = s.bash("eval \"$(rbenv init - bash)\" && : > log/test.log && bin/rails test 2>&1 | tail -1 && "
                    "grep -c 'DEPRECATION WARNING' log/test.log", code=1,
                    out="74 runs, 218 assertions, 0 failures, 0 errors, 0 skips\n0")
    s.say("Tests pass and the log has no deprecation warnings left (`grep -c` printing 0 is why the command exits "
          "1). Both call sites now use `to_fs(:db)`: Rails 7 renamed the formatted `to_s(format)` to `to_fs`.")
    s.end_turn()

    t4 = s.user("cool. what was the command again to get a rails console against staging from my laptop?")
    qa = s.say("There's nothing in this repo that sets up a staging console (no `config/deploy*`, no Kamal or "
               "Capistrano config), so from your laptop it depends on how staging is hosted. In general it's "
               "`RAILS_ENV=staging bin/rails console` *on a staging host or container*, e.g. via your platform's exec/ssh "
               "command. If you tell me how staging is deployed I can give you the exact line.")
    s.end_turn()

    L.task(t1, "Fix bundle install on a new Mac (Ruby 3.2.2 via rbenv, mysql2 native extension)")
    L.task(t2, "Fix the 3 mailer test errors after the password-reset PR (Missing host to link to)")
    L.task(n3, "Fix the to_s(:db) deprecation warnings from log/test.log", "next-subtask", (n3, n3b))
    L.task(t4, "Side question: how to open a Rails console against staging", "side-task")
    L.lesson((f1, ok1), "error",
             "\"Your Ruby version is X, but your Gemfile specified Y\": install the version from `.ruby-version` with `rbenv install` and make sure the shell uses rbenv's shims (`eval \"$(rbenv init - bash)\"` in a non-interactive shell), otherwise another ruby on PATH is picked up.",
             "bundle install exits 18; `which ruby` is Homebrew's ruby@3.1 and rbenv says 3.2.2 is not installed; after rbenv install + rbenv init, ruby -v is 3.2.2 and bundler gets past the check.",
             [["rbenv"], ["Your Ruby version", ".ruby-version", "rbenv install", "rbenv init"]])
    L.lesson((f2, ok1), "error",
             "The mysql2 gem fails to build with \"mysql client is missing\" on macOS: `brew install mysql-client` (keg-only) and point Bundler at it with `bundle config --local build.mysql2 --with-mysql-config=$(brew --prefix mysql-client)/bin/mysql_config`.",
             "extconf.rb fails; after installing mysql-client and setting build.mysql2 the extension compiles (then a separate link error).",
             [["mysql_config", "mysql-client", "mysql client"], ["build.mysql2", "bundle config"]])
    L.lesson((f3, ok1), "error",
             "On Apple Silicon, building mysql2 against Homebrew's client library can fail to link with \"ld: library not found for -lzstd\"; add `--with-ldflags=-L$(brew --prefix zstd)/lib` to the gem's build flags.",
             "With mysql_config set, the link fails on -lzstd; adding the ldflags makes bundle install complete (131 gems).",
             [["zstd"], ["ldflags", "-L", "library path", "linker path"]])
    L.lesson((rj_r, corr), "correction",
             "Don't run a bare `bundle update` to fix one gem: it bumps every gem in Gemfile.lock; use `bundle update --conservative <gem>` when one gem really needs a newer version.",
             "The agent's `bundle update` call is rejected and the user explains why; the real cause was the missing client library.",
             [["bundle update"], ["conservative", "every gem", "all gems", "whole lockfile", "bare"]])
    L.lesson((f4, ok2), "error",
             "\"Missing host to link to! Please provide the :host parameter, set default_url_options[:host]\" in mailer views: mailers have no request, so set `config.action_mailer.default_url_options = { host: ... }` in every environment that renders mail (test, development), not only production.",
             "3 mailer test errors; production.rb had the setting, test.rb did not; after adding it 74 runs pass; the user asks for development too.",
             [["default_url_options"], ["Missing host", "mailer", "action_mailer"]])
    L.lesson((f5, ok3), "error",
             "Rails 7 deprecates `to_s(:db)` and other formatted `to_s(format)` calls on times and dates; use `to_fs(:db)` instead.",
             "log/test.log holds 24 TimeWithZone#to_s(:db) warnings from two call sites; after switching to to_fs the tests pass and the log has none.",
             [["to_fs"], ["to_s(:db)", "to_s(format)", "to_s(:", "deprecat"]])
    L.non_lesson((sys_f, sys_ok), "CheckoutTest#test_applying_a_coupon fails with StaleElementReferenceError and must be fixed.",
                 "A flaky system test that passed on the immediate re-run with nothing changed.")
    L.non_lesson((t4, qa), "Open a Rails console against staging with RAILS_ENV=staging bin/rails console.",
                 "A generic answer to a side question; the agent could not verify how staging is reached.")
    return s


def cc24_cmake_asan():
    """C++/CMake: generator mismatch, an unlinked find_package, AddressSanitizer link flags, TZ in ctest, CPack."""
    s = CC("cc24_cmake_asan.jsonl", 2404, "2026-02-16T10:02:00", "/home/dev/src/thumbnailer", branch="main",
           hooks=["~/.claude/hooks/pretool-guard.sh"])
    L = s.labels
    s.session_start()
    t1 = s.user("the build is broken since I added the PNG decoder. fix it please. we build with Ninja")
    _, f1 = s.bash("cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Debug", code=1, out="""\
CMake Error: Error: generator : Ninja
Does not match the generator used previously: Unix Makefiles
Either remove the CMakeCache.txt file and CMakeFiles directory or choose a different binary directory.""")
    s.say("`build/` was configured with Unix Makefiles earlier, and CMake won't switch the generator of an existing "
          "build tree. Starting from a clean build directory:")
    _, f2 = s.bash("rm -rf build && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Debug > /dev/null && "
                   "cmake --build build", code=1, out="""\
[1/16] Building CXX object CMakeFiles/thumbcore.dir/src/image.cpp.o
[2/16] Building CXX object CMakeFiles/thumbcore.dir/src/resize.cpp.o
[3/16] Building CXX object CMakeFiles/thumb.dir/src/png_decoder.cpp.o
[4/16] Building CXX object CMakeFiles/thumb.dir/src/main.cpp.o
[5/16] Linking CXX static library libthumbcore.a
[6/16] Linking CXX executable thumb
FAILED: thumb
: && /usr/bin/c++ -g  CMakeFiles/thumb.dir/src/main.cpp.o CMakeFiles/thumb.dir/src/png_decoder.cpp.o -o thumb  libthumbcore.a && :
/usr/bin/ld: CMakeFiles/thumb.dir/src/png_decoder.cpp.o: in function `thumb::PngDecoder::decode(std::vector<unsigned char, std::allocator<unsigned char> > const&)':
/home/dev/src/thumbnailer/src/png_decoder.cpp:31: undefined reference to `png_create_read_struct'
/usr/bin/ld: /home/dev/src/thumbnailer/src/png_decoder.cpp:36: undefined reference to `png_create_info_struct'
/usr/bin/ld: /home/dev/src/thumbnailer/src/png_decoder.cpp:41: undefined reference to `png_set_read_fn'
/usr/bin/ld: /home/dev/src/thumbnailer/src/png_decoder.cpp:58: undefined reference to `png_destroy_read_struct'
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.""")
    s.read("/home/dev/src/thumbnailer/CMakeLists.txt", """\
cmake_minimum_required(VERSION 3.20)
project(thumbnailer VERSION 0.3.0 LANGUAGES CXX)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)

find_package(PNG REQUIRED)

add_library(thumbcore STATIC src/image.cpp src/resize.cpp)
target_include_directories(thumbcore PUBLIC include)

add_executable(thumb src/main.cpp src/png_decoder.cpp)
target_include_directories(thumb PRIVATE ${PNG_INCLUDE_DIRS})
target_link_libraries(thumb PRIVATE thumbcore)

enable_testing()
add_subdirectory(tests)
""")
    s.say("`find_package(PNG)` found libpng and the headers are on the include path, so it compiles, but `thumb` "
          "never links against libpng. Using the imported target `PNG::PNG` gives both the include directory and "
          "the library, so the manual include line can go.")
    s.edit("/home/dev/src/thumbnailer/CMakeLists.txt",
           "target_include_directories(thumb PRIVATE ${PNG_INCLUDE_DIRS})\ntarget_link_libraries(thumb PRIVATE thumbcore)\n",
           "target_link_libraries(thumb PRIVATE thumbcore PNG::PNG)\n")
    _, typo = s.bash("cmake --biuld build", code=1, out="CMake Error: Unknown argument --biuld\nCMake Error: Run 'cmake --help' for all supported options.")
    _, ok1 = s.bash("cmake --build build && ./build/thumb --version && ctest --test-dir build 2>&1 | tail -3", out="""\
[1/4] Re-running CMake...
-- Found PNG: /usr/lib/x86_64-linux-gnu/libpng.so (found version "1.6.43")
-- Configuring done (0.3s)
-- Generating done (0.0s)
-- Build files have been written to: /home/dev/src/thumbnailer/build
[4/4] Linking CXX executable thumb
thumb 0.3.0
100% tests passed, 0 tests failed out of 4

Total Test time (real) =   0.41 sec""")
    done1 = s.say("Fixed. Two separate problems:\n\n1. `build/` had been configured with Unix Makefiles, and CMake refuses "
                  "to change the generator of an existing tree, so I recreated it with `-G Ninja`.\n2. The link error: "
                  "`thumb` used libpng's headers but never linked the library. It now links the imported target "
                  "`PNG::PNG` (which also carries the include path).\n\nBuild and all 4 tests pass.")
    s.end_turn()

    t2 = s.user("good. we got a crash report for very wide images. add an option to build with AddressSanitizer and "
                "run the tests under it")
    s.edit("/home/dev/src/thumbnailer/CMakeLists.txt", "find_package(PNG REQUIRED)\n", """\
find_package(PNG REQUIRED)

option(THUMB_ASAN "Build with AddressSanitizer" OFF)
if(THUMB_ASAN)
  add_compile_options(-fsanitize=address -fno-omit-frame-pointer)
endif()
""")
    _, f3 = s.bash("cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTHUMB_ASAN=ON > /dev/null && "
                   "cmake --build build-asan 2>&1 | grep -E 'undefined reference|FAILED|error:' | head -6", out="""\
FAILED: thumb
/home/dev/src/thumbnailer/src/main.cpp:12: undefined reference to `__asan_report_load8'
/usr/bin/ld: CMakeFiles/thumb.dir/src/main.cpp.o: in function `asan.module_ctor':
main.cpp:(.text+0x2d1): undefined reference to `__asan_init'
main.cpp:(.text+0x2d6): undefined reference to `__asan_version_mismatch_check_v8'
collect2: error: ld returned 1 exit status""")
    s.say("`add_compile_options` only affects compilation; the ASan runtime has to be linked too, so the "
          "`-fsanitize=address` flag must also go on the link line.")
    s.edit("/home/dev/src/thumbnailer/CMakeLists.txt",
           "  add_compile_options(-fsanitize=address -fno-omit-frame-pointer)\n",
           "  add_compile_options(-fsanitize=address -fno-omit-frame-pointer)\n  add_link_options(-fsanitize=address)\n")
    _, asan_ok = s.bash("cmake --build build-asan 2>&1 | tail -1", out="[16/16] Linking CXX executable tests/test_resize")
    _, bug = s.bash("ctest --test-dir build-asan --output-on-failure 2>&1 | tail -24", out="""\
2/4 Test #2: test_resize ......................***Failed    0.09 sec
=================================================================
==48213==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x7f3a1c2ff800 at pc 0x55d7c0a4b2e1 bp 0x7ffd6c1e0a10 sp 0x7ffd6c1e0a08
READ of size 1 at 0x7f3a1c2ff800 thread T0
    #0 0x55d7c0a4b2e0 in thumb::sample_bilinear(thumb::Image const&, float, float) /home/dev/src/thumbnailer/src/resize.cpp:44
    #1 0x55d7c0a4b8a6 in thumb::resize(thumb::Image const&, int, int) /home/dev/src/thumbnailer/src/resize.cpp:71
    #2 0x55d7c0a47c12 in test_wide_image /home/dev/src/thumbnailer/tests/test_resize.cpp:38

0x7f3a1c2ff800 is located 0 bytes after 12000000-byte region [0x7f3a1b7a3800,0x7f3a1c2ff800)
SUMMARY: AddressSanitizer: heap-buffer-overflow /home/dev/src/thumbnailer/src/resize.cpp:44 in thumb::sample_bilinear(thumb::Image const&, float, float)

3/4 Test #3: test_exif ........................   Passed    0.01 sec
4/4 Test #4: test_cli .........................   Passed    0.22 sec

75% tests passed, 1 tests failed out of 4

Total Test time (real) =   0.48 sec

The following tests FAILED:
	  2 - test_resize (Failed)
Errors while running CTest""")
    s.read("/home/dev/src/thumbnailer/src/resize.cpp", """\
// bilinear sample at (fx, fy) in source pixel coordinates
static uint8_t sample_bilinear(const Image& src, float fx, float fy) {
    const int x0 = static_cast<int>(fx);
    const int y0 = static_cast<int>(fy);
    const int x1 = x0 + 1;
    const int y1 = y0 + 1;
    const float ax = fx - x0, ay = fy - y0;
    const uint8_t* row0 = src.row(y0);
    const uint8_t* row1 = src.row(y1);
    return lerp(lerp(row0[x0], row0[x1], ax), lerp(row1[x0], row1[x1], ax), ay);
}
""")
    s.say("There's the crash: on the last column/row, `x0 + 1` / `y0 + 1` read one past the end. Clamping to the "
          "image edge:")
    s.edit("/home/dev/src/thumbnailer/src/resize.cpp",
           "    const int x1 = x0 + 1;\n    const int y1 = y0 + 1;\n",
           "    const int x1 = std::min(x0 + 1, src.width - 1);\n    const int y1 = std::min(y0 + 1, src.height - 1);\n")
    _, bug_ok = s.bash("cmake --build build-asan > /dev/null && ctest --test-dir build-asan 2>&1 | tail -3",
                       out="100% tests passed, 0 tests failed out of 4\n\nTotal Test time (real) =   0.44 sec")
    s.say("All 4 tests pass under ASan. Configure with `-DTHUMB_ASAN=ON` (I used `build-asan/`) to get the "
          "sanitizer build.")
    s.end_turn()
    s.user("also add a regression test for the last-column case, then commit")
    s.edit("/home/dev/src/thumbnailer/tests/test_resize.cpp", "int main() {\n", """\
static void test_last_column() {
    thumb::Image img(3, 2, 1);
    img.fill(200);
    auto out = thumb::resize(img, 5, 4);   // upscaling samples the last column and row
    CHECK(out.at(4, 3) == 200);
}

int main() {
    test_last_column();
""")
    s.bash("cmake --build build-asan > /dev/null && ctest --test-dir build-asan -R test_resize 2>&1 | tail -2",
           out="100% tests passed, 0 tests failed out of 1\n\nTotal Test time (real) =   0.10 sec")
    _, hook = s.bash("git add CMakeLists.txt src/resize.cpp tests/test_resize.cpp && git commit -m "
                     "'resize: clamp bilinear sampling at the edges; THUMB_ASAN option'", code=1, out="""\
[pre-commit] configuring build-strict/ with -Wall -Wextra -Werror
[pre-commit] building build-strict/
FAILED: CMakeFiles/thumb.dir/src/exif.cpp.o
/home/dev/src/thumbnailer/src/exif.cpp: In function 'std::optional<thumb::ExifMeta> thumb::parse_exif(const std::vector<unsigned char>&)':
/home/dev/src/thumbnailer/src/exif.cpp:57:23: error: comparison of integer expressions of different signedness: 'int' and 'std::vector<unsigned char>::size_type' {aka 'long unsigned int'} [-Werror=sign-compare]
   57 |     for (int i = 0; i < data.size() - 1; ++i) {
      |                     ~~^~~~~~~~~~~~~~~~~
cc1plus: all warnings being treated as errors
ninja: build stopped: subcommand failed.
[pre-commit] strict build failed, commit aborted""")
    side = s.say("The hook's strict `-Werror` build fails in `src/exif.cpp`, which I didn't touch. Let me check that "
                 "it's pre-existing before fixing it.")
    side_b, _ = s.bash("git log -1 --format='%h %ar' -- src/exif.cpp && git stash list | wc -l",
                       out="3f9c2aa 5 weeks ago\n0")
    s.say("Pre-existing (last changed 5 weeks ago). It's a signed loop index compared with `size()`; `data.size() - 1` "
          "would also wrap around for an empty buffer, so using `size_t` and `i + 1 < data.size()` fixes both.")
    s.edit("/home/dev/src/thumbnailer/src/exif.cpp", "    for (int i = 0; i < data.size() - 1; ++i) {\n",
                   "    for (std::size_t i = 0; i + 1 < data.size(); ++i) {\n")
    _, tz_ok = s.bash("git add src/exif.cpp CMakeLists.txt src/resize.cpp tests/test_resize.cpp && git commit -q -m "
                      "'resize: clamp bilinear sampling at the edges; THUMB_ASAN option' -m 'exif: size_t loop index "
                      "(pre-existing -Wsign-compare)' && git log --oneline -1", out="""\
[pre-commit] configuring build-strict/ with -Wall -Wextra -Werror
[pre-commit] building build-strict/
[pre-commit] running ctest: 100% tests passed, 0 tests failed out of 4
7d1e0b4 resize: clamp bilinear sampling at the edges; THUMB_ASAN option""")
    s.say("Committed (`7d1e0b4`) together with the one-line `exif.cpp` fix; the hook's strict build and all 4 ctest tests pass (`test_resize` now includes the last-column case).")
    s.end_turn()

    t4 = s.user("last thing today: I want a release tarball from cpack")
    _, f4 = s.bash("(cd build && cpack -G TGZ)", code=1, out="CPack Error: Cannot find CPack config file: \"CPackConfig.cmake\"")
    s.say("CPack reads `CPackConfig.cmake`, which CMake only generates when the project does `include(CPack)`. "
          "There are also no `install()` rules yet, so the package would be empty. Adding both:")
    s.edit("/home/dev/src/thumbnailer/CMakeLists.txt", "enable_testing()\n", """\
install(TARGETS thumb RUNTIME DESTINATION bin)
install(FILES README.md LICENSE DESTINATION share/doc/thumbnailer)

set(CPACK_PACKAGE_VENDOR "example-org")
set(CPACK_GENERATOR "TGZ")
include(CPack)

enable_testing()
""")
    _, ok4 = s.bash("cmake --build build > /dev/null && (cd build && cpack && tar tzf thumbnailer-0.3.0-Linux.tar.gz)", out="""\
CPack: Create package using TGZ
CPack: Install projects
CPack: - Run preinstall target for: thumbnailer
CPack: - Install project: thumbnailer []
CPack: Create package
CPack: - package: /home/dev/src/thumbnailer/build/thumbnailer-0.3.0-Linux.tar.gz generated.
thumbnailer-0.3.0-Linux/bin/thumb
thumbnailer-0.3.0-Linux/share/doc/thumbnailer/README.md
thumbnailer-0.3.0-Linux/share/doc/thumbnailer/LICENSE""")
    s.say("`build/thumbnailer-0.3.0-Linux.tar.gz` is generated with the binary, README and LICENSE. Want me to commit "
          "the CMake change?")
    s.end_turn()
    s.user("yes")
    s.bash("git commit -q -am 'cpack: TGZ release tarball with install rules' && git log --oneline -1",
           out="[pre-commit] configuring build-strict/ with -Wall -Wextra -Werror\n[pre-commit] building build-strict/\n"
               "[pre-commit] running ctest: 100% tests passed, 0 tests failed out of 4\ne03b9a2 cpack: TGZ release tarball with install rules")
    s.say("Committed as `e03b9a2`.")
    s.end_turn()

    L.task(t1, "Fix the broken build after adding the PNG decoder (Ninja generator, libpng not linked)")
    L.task(t2, "Add an AddressSanitizer build option and run the tests under it (finds an out-of-bounds read in resize)")
    L.task(side, "Fix the pre-existing -Werror=sign-compare error in src/exif.cpp that blocks the commit hook", "side-task",
           (side, side_b))
    L.task(t4, "Produce a release tarball with CPack (include(CPack), install rules)")
    L.lesson((f1, ok1), "error",
             "CMake refuses to reuse a build directory with a different generator (\"Does not match the generator used previously\"); delete the build directory (or its CMakeCache.txt and CMakeFiles) or use a new one before configuring with -G Ninja.",
             "cmake -G Ninja fails on the Makefiles-configured build/; rm -rf build and reconfigure works.",
             [["generator"], ["CMakeCache", "build directory", "rm -rf build", "binary directory", "fresh"]])
    L.lesson((f2, done1), "error",
             "`undefined reference to png_*` although find_package(PNG) succeeded means the target only got the include directories; link the imported target with `target_link_libraries(<target> PRIVATE PNG::PNG)` (which also carries the include path).",
             "Link of thumb fails with undefined references to png_create_read_struct etc.; CMakeLists only added PNG_INCLUDE_DIRS; linking PNG::PNG fixes the build and tests pass.",
             [["PNG::PNG", "libpng", "png_"], ["target_link_libraries", "imported target", "link against", "links against", "linking"]])
    L.lesson((f3, asan_ok), "error",
             "AddressSanitizer flags in CMake must go on the link line too: with only add_compile_options(-fsanitize=address) the link fails with \"undefined reference to `__asan_init`\"; add add_link_options(-fsanitize=address).",
             "The ASan build fails to link with __asan_report_load8/__asan_init; adding add_link_options makes it link.",
             [["__asan", "asan", "AddressSanitizer", "sanitize"], ["add_link_options", "link option", "linker flag", "link line"]])
    L.lesson((f4, ok4), "error",
             "\"CPack Error: Cannot find CPack config file\" means the project never did `include(CPack)` (CMake only generates CPackConfig.cmake then); add install() rules and include(CPack) after them, rebuild, then run cpack.",
             "cpack fails in build/; after adding install(TARGETS/FILES) and include(CPack) the TGZ is generated with bin/thumb and docs.",
             [["include(CPack)"], ["CPackConfig", "install("]])
    L.non_lesson((bug, bug_ok), "sample_bilinear in resize.cpp must clamp x0+1 and y0+1 to the image edge.",
                 "A project-specific off-by-one bug found by ASan; the reusable part (ASan setup) is a separate lesson.")
    L.non_lesson((hook, tz_ok), "The loop in parse_exif (src/exif.cpp) needs a size_t index to pass the strict -Werror build.",
                 "A small pre-existing warning fixed in one line of project code; nothing beyond this file to reuse.")
    L.non_lesson((typo, ok1), "The CMake build flag is --build, not --biuld.",
                 "A typo in the agent's own command, fixed on the next call.")
    return s


def cc25_celery_issues():
    """The agent works through GitHub issues on its own: Celery + Redis; a background baseline fails; compaction."""
    s = CC("cc25_celery_issues.jsonl", 2505, "2026-02-18T09:58:00", "/home/dev/projects/reportly",
           branch="worker-fixes", hooks=["~/.claude/hooks/log-tool.sh"], permission="acceptEdits",
           slug="quiet-copper-heron")
    L = s.labels
    s.session_start()
    t1 = s.user("Go through the open GitHub issues labelled `worker`, oldest first. One commit per issue on this "
                "branch, push and open a PR when you're done.")
    s.bash("gh issue list --label worker --state open --json number,title -q '.[] | \"#\\(.number) \\(.title)\"' | sort",
           out="#71 Report tasks never run in staging\n#72 Redis OOM errors from the worker\n"
               "#73 Worker crashes on macOS dev machines\n#74 Nightly cleanup of expired exports")
    items = [("#71 Report tasks never run", "Fixing #71 (tasks never run)"),
             ("#72 Redis OOM from the worker", "Fixing #72 (Redis OOM)"),
             ("#73 Worker crashes on macOS", "Fixing #73 (macOS worker crash)"),
             ("#74 Nightly cleanup of expired exports", "Adding the nightly cleanup (#74)"),
             ("Push worker-fixes and open the PR", "Pushing and opening the PR")]
    s.todo(todos(items, 0, 0))
    _, _, bid = s.bash_bg(".venv/bin/pytest -q 2>&1 | tail -15", "Baseline test run before any change")
    s.bash("gh issue view 71 --json body -q .body", out="""\
Reports requested from the API stay "pending" forever in staging. The worker is up and consuming from the
`default` queue. Worker log excerpt:

    [2026-02-16 22:10:41,118: ERROR/MainProcess] Received unregistered task of type 'reportly.reports.tasks.build_report'.
    The message has been ignored and discarded.

Works on my machine with `make dev`.""")
    s.read("/home/dev/projects/reportly/reportly/celery.py", """\
from celery import Celery

app = Celery("reportly")
app.config_from_object("reportly.celeryconfig")


@app.task(bind=True)
def debug_task(self):
    print(f"Request: {self.request!r}")
""")
    _, f1 = s.bash("timeout 25 .venv/bin/celery -A reportly worker -l INFO --without-mingle --without-gossip 2>&1 & "
                   "sleep 8; .venv/bin/python -c \"from reportly.reports.tasks import build_report; "
                   "build_report.delay('r-1842')\"; wait; true", timeout=60000, out="""\
 -------------- celery@devbox v5.3.6 (emerald-rush)
--- ***** -----
-- ******* ---- Linux-6.5.0-21-generic-x86_64-with-glibc2.35 2026-02-18 10:03:17
- *** --- * ---
- ** ---------- [config]
- ** ---------- .> app:         reportly:0x7f1c2b9e1d50
- ** ---------- .> transport:   redis://localhost:6379/0
- ** ---------- .> results:     redis://localhost:6379/1
- *** --- * --- .> concurrency: 8 (prefork)
-- ******* ---- .> task events: OFF (enable -E to monitor tasks in this worker)
--- ***** -----
 -------------- [queues]
                .> default          exchange=default(direct) key=default

[tasks]
  . reportly.celery.debug_task

[2026-02-18 10:03:26,402: ERROR/MainProcess] Received unregistered task of type 'reportly.reports.tasks.build_report'.
The message has been ignored and discarded.

Did you remember to import the module containing this task?
Or maybe you're using relative imports?

Please see
https://docs.celeryq.dev/en/latest/internals/protocol.html
for more information.

The full contents of the message body was:
b'[["r-1842"], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]' (91b)""")
    s.say("Reproduced. The worker's `[tasks]` list only has `debug_task`: nothing imports `reportly.reports.tasks` in "
          "the worker process, so the task is never registered. (`make dev` runs the API and the worker in one process, "
          "where the API's import registers it, which is why it works locally.) The app needs `autodiscover_tasks`.")
    s.edit("/home/dev/projects/reportly/reportly/celery.py",
           'app.config_from_object("reportly.celeryconfig")\n',
           'app.config_from_object("reportly.celeryconfig")\n'
           'app.autodiscover_tasks(["reportly.reports", "reportly.exports"])\n')
    _, ok1 = s.bash("timeout 25 .venv/bin/celery -A reportly worker -l INFO --without-mingle --without-gossip 2>&1 & "
                    "sleep 8; .venv/bin/python -c \"from reportly.reports.tasks import build_report; "
                    "build_report.delay('r-1842')\"; wait; true", timeout=60000, out="""\
[tasks]
  . reportly.celery.debug_task
  . reportly.exports.tasks.cleanup_expired
  . reportly.exports.tasks.export_csv
  . reportly.reports.tasks.build_report

[2026-02-18 10:05:02,771: INFO/MainProcess] Task reportly.reports.tasks.build_report[5b1f0c7e-2d84-4f37-9c1a-7e0d3b6a1f22] received
[2026-02-18 10:05:03,190: INFO/ForkPoolWorker-8] Task reportly.reports.tasks.build_report[5b1f0c7e-2d84-4f37-9c1a-7e0d3b6a1f22] succeeded in 0.41s: {'report_id': 'r-1842', 'rows': 318}""")
    s.bash("git commit -q -am 'fix(worker): autodiscover task modules (#71)' && git log --oneline -1",
           out="a7c31e9 fix(worker): autodiscover task modules (#71)")
    n2 = s.say("#71 done: the worker now registers the report and export tasks. Next: #72, the Redis OOM.")
    s.todo(todos(items, 1, 1))
    n2b, f2 = s.bash("gh issue view 72 --json body -q .body", out="""\
Sentry, worker + API, since Friday:

    redis.exceptions.ResponseError: OOM command not allowed when used memory > 'maxmemory'.

Staging Redis is the 1 GB instance shared by the broker and the result backend.""")
    s.bash("redis-cli -h redis.staging.example.internal info memory | grep -E '^(used_memory_human|maxmemory_human|"
           "maxmemory_policy)'; redis-cli -h redis.staging.example.internal -n 1 dbsize", out="""\
used_memory_human:1023.87M
maxmemory_human:1.00G
maxmemory_policy:noeviction
(integer) 2413877""")
    s.bash("redis-cli -h redis.staging.example.internal -n 1 --scan --pattern 'celery-task-meta-*' | head -3 | "
           "xargs -I{} redis-cli -h redis.staging.example.internal -n 1 ttl {}", out="-1\n-1\n-1")
    s.read("/home/dev/projects/reportly/reportly/celeryconfig.py", """\
broker_url = "redis://localhost:6379/0"
result_backend = "redis://localhost:6379/1"
task_default_queue = "default"
result_expires = None  # keep results for the report status page
task_acks_late = True
""")
    s.say("The result backend holds 2.4 million `celery-task-meta-*` keys with no TTL (`ttl` is -1): "
          "`result_expires = None` turns off Celery's expiry, so every task result stays in Redis forever. With "
          "`noeviction` Redis then refuses writes, broker included. Only `build_report` results are read (by the "
          "status page), so: store no results by default, keep them for `build_report`, and let them expire after a day.")
    s.edit("/home/dev/projects/reportly/reportly/celeryconfig.py",
           "result_expires = None  # keep results for the report status page\n",
           "result_expires = 86400  # seconds; None would keep every result forever\n"
           "task_ignore_result = True  # only tasks that are polled store a result\n")
    s.edit("/home/dev/projects/reportly/reportly/reports/tasks.py", "@shared_task(bind=True)\ndef build_report(",
           "@shared_task(bind=True, ignore_result=False)\ndef build_report(")
    _, ok2 = s.bash("timeout 20 .venv/bin/celery -A reportly worker -l WARNING 2>&1 >/dev/null & sleep 6; "
                    ".venv/bin/python - <<'EOF'\nfrom reportly.reports.tasks import build_report\n"
                    "from reportly.exports.tasks import export_csv\nimport redis\nr = build_report.delay('r-1843'); r.get(timeout=10)\n"
                    "e = export_csv.delay('x-77'); import time; time.sleep(2)\nc = redis.Redis(db=1)\n"
                    "print('build_report ttl', c.ttl(f'celery-task-meta-{r.id}'))\n"
                    "print('export_csv stored', c.exists(f'celery-task-meta-{e.id}'))\nEOF\nwait; true", out="""\
build_report ttl 86400
export_csv stored 0""")
    s.bash("git commit -q -am 'fix(worker): expire results after a day, store only polled ones (#72)' && git log --oneline -1",
           out="d2e90b4 fix(worker): expire results after a day, store only polled ones (#72)")
    s.say("#72 fixed in code: results now expire after 24 h and only `build_report` stores one. The 2.4 M keys "
          "already in staging have no TTL and won't go away by themselves; I'll note that on the PR rather than "
          "deleting keys on a shared instance.")
    s.end_turn()
    s.wait(1)
    note = s.notify(bid, "Baseline test run before any change", 1)
    s.think("The baseline run was started before any of my changes, so whatever failed there is pre-existing.")
    side = s.say("The baseline test run I started before touching anything has finished with a failure, so this one "
                 "is pre-existing. Looking at it before #73.")
    side_b, f3 = s.bash(f"cat {s.task_dir}/tasks/{bid}.output", out="""\
........................................................................ [ 82%]
..............F                                                          [100%]
=================================== FAILURES ===================================
____________________ test_build_report_failure_is_reported _____________________

    def test_build_report_failure_is_reported(monkeypatch):
        monkeypatch.setattr(reports, "fetch_rows", raise_report_error)
>       with pytest.raises(ReportError):
E       Failed: DID NOT RAISE <class 'reportly.reports.errors.ReportError'>

tests/test_tasks.py:41: Failed
=========================== short test summary info ============================
FAILED tests/test_tasks.py::test_build_report_failure_is_reported - Failed: DID NOT RAISE <class 'reportly.reports.errors.ReportError'>
1 failed, 86 passed in 14.22s""")
    s.read("/home/dev/projects/reportly/tests/conftest.py", """\
import pytest

from reportly.celery import app


@pytest.fixture(autouse=True)
def eager_celery():
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False
""")
    s.say("With `task_always_eager` the task runs inline, but unless `task_eager_propagates` is also set, an "
          "exception is stored on the returned `EagerResult` instead of being raised from `.delay()`. So the test "
          "never sees `ReportError`. The test is right; the fixture is missing the second setting.")
    s.edit("/home/dev/projects/reportly/tests/conftest.py",
           "    app.conf.task_always_eager = True\n    yield\n    app.conf.task_always_eager = False\n",
           "    app.conf.update(task_always_eager=True, task_eager_propagates=True)\n    yield\n"
           "    app.conf.update(task_always_eager=False, task_eager_propagates=False)\n")
    _, ok3 = s.bash(".venv/bin/pytest -q 2>&1 | tail -2", out="87 passed in 13.87s")
    s.bash("git commit -q -am 'test: propagate exceptions from eager tasks' && git log --oneline -1",
           out="5f0aa6d test: propagate exceptions from eager tasks")
    s.say("Pre-existing test failure fixed in its own commit; the whole suite passes (87). Back to the list.")
    cont = s.compact("""\
1. The user asked to work through the open GitHub issues labelled `worker` (oldest first), one commit per issue on
   branch worker-fixes, then push and open a PR.
2. Done so far:
   - #71 (tasks never run): worker never imported reportly.reports.tasks ("Received unregistered task"); added
     app.autodiscover_tasks(["reportly.reports", "reportly.exports"]) in reportly/celery.py. Commit a7c31e9.
   - #72 (Redis OOM): result_expires=None kept 2.4M celery-task-meta keys without TTL on the shared 1 GB Redis
     (noeviction). Set result_expires=86400, task_ignore_result=True, ignore_result=False on build_report.
     Commit d2e90b4. Existing keys in staging still need a cleanup (mention on PR).
   - Pre-existing failure from the baseline run: test_build_report_failure_is_reported, fixed by
     task_eager_propagates=True in tests/conftest.py. Commit 5f0aa6d. 87 tests pass.
3. Remaining: #73 (worker crashes on macOS dev machines), #74 (nightly cleanup of expired exports), push + PR.
4. Files: reportly/celery.py, reportly/celeryconfig.py, reportly/reports/tasks.py, tests/conftest.py.""")
    n4 = s.say("Continuing with #73, the worker crash on macOS.")
    n4b, f4 = s.bash("gh issue view 73 --json body -q .body", out="""\
On my M2 the worker dies as soon as it picks up the first task:

    objc[48213]: +[__NSCFConstantString initialize] may have been in progress in another thread when fork() was called.
    objc[48213]: +[__NSCFConstantString initialize] may have been in progress in another thread when fork() was called. We cannot safely call it or ignore it in the fork() child process. Crashing instead. Set a breakpoint on objc_initializeAfterForkError to debug.
    [2026-02-12 09:31:55,402: ERROR/MainProcess] Process 'ForkPoolWorker-1' pid:48213 exited with 'signal 6 (SIGABRT)'

Linux colleagues are fine.""")
    s.say("That's macOS's Objective-C runtime refusing to continue in a `fork()`ed child after system frameworks were "
          "initialised in the parent, which Celery's default prefork pool does for every worker process. I can't "
          "reproduce it on this Linux box, and there are two common fixes, so I'll ask which one you want.")
    s.ask("The macOS crash comes from fork() in Celery's prefork pool. Which fix for dev machines?", "macOS fix",
          [("OBJC_DISABLE_INITIALIZE_FORK_SAFETY=YES", "Env var that disables the runtime's fork-safety check"),
           ("--pool=threads on macOS", "No fork at all in local development")],
          "--pool=threads on macOS; don't paper over the fork safety check")
    s.read("/home/dev/projects/reportly/Makefile", """\
.PHONY: dev worker test

dev:
\t.venv/bin/honcho start -f Procfile.dev

worker:
\t.venv/bin/celery -A reportly worker -l INFO

test:
\t.venv/bin/pytest -q
""")
    s.edit("/home/dev/projects/reportly/Makefile", "worker:\n\t.venv/bin/celery -A reportly worker -l INFO\n", """\
# macOS aborts prefork children (objc fork-safety), so use threads there
WORKER_POOL := $(if $(filter Darwin,$(shell uname -s)),threads,prefork)

worker:
\t.venv/bin/celery -A reportly worker -l INFO --pool=$(WORKER_POOL)
""")
    s.bash("make -n worker && make -n worker WORKER_POOL=threads",
           out=".venv/bin/celery -A reportly worker -l INFO --pool=prefork\n.venv/bin/celery -A reportly worker -l INFO --pool=threads")
    s.bash("git commit -q -am 'fix(worker): threads pool on macOS dev machines (#73)' && git log --oneline -1",
           out="0b8d3f1 fix(worker): threads pool on macOS dev machines (#73)")
    n5 = s.say("#73 committed (I could only check the Makefile logic here, not on a Mac). Next: #74, the nightly "
               "cleanup.")
    s.todo(todos(items, 3, 3))
    n5b, _ = s.bash("gh issue view 74 --json body -q .body", out="""\
exports older than 7 days should be deleted every night (03:15 server time). There is already a
cleanup_expired task, it just isn't scheduled. Beat runs as its own service in docker-compose.yml.""")
    s.edit("/home/dev/projects/reportly/reportly/celeryconfig.py", "task_acks_late = True\n", """\
task_acks_late = True

from celery.schedules import crontab  # noqa: E402

beat_schedule = {
    "cleanup-expired-exports": {
        "task": "reportly.exports.tasks.cleanup_expired",
        "schedule": crontab(hour=3, minute=15),
    },
}
""")
    _, f5 = s.bash("docker compose up -d --build beat >/dev/null 2>&1; sleep 5; docker compose logs --tail 12 beat", out="""\
beat-1  | celery beat v5.3.6 (emerald-rush) is starting.
beat-1  | __    -    ... __   -        _
beat-1  | LocalTime -> 2026-02-18 11:02:44
beat-1  | Configuration ->
beat-1  |     . broker -> redis://redis:6379/0
beat-1  |     . loader -> celery.loaders.app.AppLoader
beat-1  |     . scheduler -> celery.beat.PersistentScheduler
beat-1  |     . db -> celerybeat-schedule
beat-1  |     . logfile -> [stderr]@%WARNING
beat-1  |     . maxinterval -> 5.00 minutes (300s)
beat-1  | [2026-02-18 11:02:44,907: ERROR/MainProcess] Removing corrupted schedule file 'celerybeat-schedule': error(13, 'Permission denied')
beat-1  | PermissionError: [Errno 13] Permission denied: 'celerybeat-schedule'""")
    s.grep("beat|USER|WORKDIR", "docker-compose.yml:31:  beat:\ndocker-compose.yml:33:    command: celery -A reportly beat -l WARNING\n"
           "Dockerfile:18:WORKDIR /app\nDockerfile:24:USER app", mode="content")
    s.say("Beat keeps its schedule state in a `celerybeat-schedule` file in the working directory. In the image that's "
          "`/app`, owned by root, while the container runs as `app`, so it can't write there. Pointing the schedule "
          "file at a writable path:")
    s.edit("/home/dev/projects/reportly/docker-compose.yml", "    command: celery -A reportly beat -l WARNING\n",
           "    command: celery -A reportly beat -l WARNING --schedule /tmp/celerybeat-schedule\n")
    _, ok5 = s.bash("docker compose up -d beat >/dev/null 2>&1; sleep 5; docker compose logs --tail 3 beat; "
                    "docker compose ps beat --format '{{.Status}}'", out="""\
beat-1  |     . maxinterval -> 5.00 minutes (300s)
beat-1  | [2026-02-18 11:04:12,381: INFO/MainProcess] beat: Starting...
Up 6 seconds""")
    s.bash("git commit -q -am 'feat(worker): schedule nightly cleanup of expired exports (#74)' && git log --oneline -1",
           out="e41f7a2 feat(worker): schedule nightly cleanup of expired exports (#74)")
    n6 = s.say("#74 done: beat is up with the 03:15 schedule. All four issues are committed; pushing and opening the PR.")
    s.todo(todos(items, 4, 4))
    n6b, _ = s.bash("git push -q -u origin worker-fixes && gh pr create --base main --title 'Worker fixes: #71 #72 #73 #74' "
                    "--body 'Fixes #71, fixes #72, fixes #73, fixes #74. Also fixes a pre-existing eager-mode test. "
                    "Note for #72: existing celery-task-meta-* keys in staging Redis have no TTL and need a one-off cleanup.'",
                    out="https://github.com/example-org/reportly/pull/77")
    s.todo(todos(items, 5, -1))
    s.say("PR: https://github.com/example-org/reportly/pull/77 with five commits (four issues + the eager-mode test "
          "fix). The PR body mentions the one-off cleanup of old result keys in staging Redis. #73 still needs a try on "
          "a Mac.")
    s.end_turn()
    conf = s.user("checked #73 on my mac: `make worker` picks the threads pool and the worker survives. thanks, looks good")
    s.say("Great, thanks for checking!")
    s.end_turn()

    L.task(t1, "Work through the `worker` issues, starting with #71: tasks never run (unregistered task in the worker)")
    L.task(n2, "#72: Redis OOM (result backend keys without TTL)", "next-subtask", (n2, n2b))
    L.task(side, "Fix the pre-existing eager-mode test failure reported by the background baseline run", "side-task",
           (note, side_b))
    L.task(n4, "#73: worker crashes on macOS (objc fork safety) - threads pool for dev", "after-continuation", (cont, n4b))
    L.task(n5, "#74: schedule the nightly cleanup with celery beat (schedule file permissions in the container)",
           "next-subtask", (n5, n5b))
    L.task(n6, "Push worker-fixes and open the PR", "next-subtask", (n6, n6b))
    L.lesson((f1, ok1), "error",
             "\"Received unregistered task of type ...\" means the worker process never imported the module that defines the task (check the worker's [tasks] banner); call `app.autodiscover_tasks([...packages])` on the Celery app instead of relying on the API's imports.",
             "Issue #71; the worker banner lists only debug_task; after autodiscover_tasks the task is listed and succeeds.",
             [["unregistered task"], ["autodiscover", "import"]])
    L.lesson((f2, ok2), "error",
             "Redis \"OOM command not allowed when used memory > 'maxmemory'\" with a Celery result backend: `result_expires = None` keeps every celery-task-meta key forever; set a finite result_expires and task_ignore_result=True, storing results only for tasks that are polled.",
             "Staging Redis is at 1 GB with noeviction and 2.4M task-meta keys with TTL -1; after the config change build_report results get TTL 86400 and export_csv stores none.",
             [["result_expires", "ignore_result"], ["OOM", "maxmemory", "celery-task-meta", "Redis"]])
    L.lesson((f3, ok3), "error",
             "With Celery's `task_always_eager` in tests, exceptions are stored on the EagerResult and not raised from `.delay()` (\"DID NOT RAISE\"); also set `task_eager_propagates=True`.",
             "The background baseline run fails test_build_report_failure_is_reported; adding task_eager_propagates in conftest makes all 87 tests pass.",
             [["eager"], ["propagate"]])
    L.lesson((f4, conf), "error",
             "Celery workers on macOS abort with \"may have been in progress in another thread when fork() was called\" (SIGABRT) because of the Objective-C fork-safety check in prefork children; run the worker with `--pool=threads` (or solo) on macOS dev machines.",
             "Issue #73 log; the user picks --pool=threads over the OBJC_DISABLE_INITIALIZE_FORK_SAFETY env var; the Makefile selects threads on Darwin; the user confirms the worker survives on a Mac.",
             [["fork"], ["pool=threads", "threads pool", "--pool", "solo"]])
    L.lesson((f5, ok5), "error",
             "celery beat writes its schedule state to `celerybeat-schedule` in the working directory; in a container running as a non-root user that directory may not be writable (\"Permission denied: 'celerybeat-schedule'\"), so pass `--schedule /tmp/celerybeat-schedule` (-s).",
             "The beat container logs PermissionError; WORKDIR /app with USER app; after adding --schedule /tmp/... beat starts.",
             [["celerybeat-schedule"], ["--schedule", "-s ", "writable", "/tmp"]])
    L.non_lesson((f2, ok2), "Staging's shared Redis result database held about 2.4 million task-result keys.",
                 "A one-off measurement of this environment.")
    L.non_lesson((n5b, ok5), "The nightly export cleanup runs at 03:15 server time.",
                 "A project-specific scheduling choice from the issue, not a lesson.")
    return s


def cc26_ansible_systemd():
    """Ansible against new hosts: host keys (correction), a missing collection, systemd 203/EXEC and start limits."""
    s = CC("cc26_ansible_systemd.jsonl", 2606, "2026-02-20T13:40:00", "/home/dev/ops/ansible-app")
    L = s.labels
    s.session_start()
    inv = "-i inventories/staging/hosts.yml"
    t1 = s.user("run site.yml against the two new staging hosts, app-03 and app-04. they were added to "
                "inventories/staging/hosts.yml yesterday")
    _, f1 = s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal,app-04.staging.example.internal",
                   code=4, out="""\

PLAY [app servers] *************************************************************

TASK [Gathering Facts] *********************************************************
fatal: [app-03.staging.example.internal]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: Host key verification failed.", "unreachable": true}
fatal: [app-04.staging.example.internal]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: Host key verification failed.", "unreachable": true}

PLAY RECAP *********************************************************************
app-03.staging.example.internal : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0
app-04.staging.example.internal : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0
""")
    s.say("Both hosts are new, so their SSH host keys aren't in `known_hosts` and ssh refuses non-interactively. "
          "I'll re-run with host key checking off for this first connection.")
    _, rj_r, _ = s.reject("Bash", {"command": f"ANSIBLE_HOST_KEY_CHECKING=False ansible-playbook {inv} site.yml --limit "
                                              "app-03.staging.example.internal,app-04.staging.example.internal"})
    corr = s.user("no, don't turn off host key checking, not even once. get the keys with ssh-keyscan, compare the "
                  "fingerprints with the ones in docs/hosts/staging.md from provisioning, then add them to known_hosts. "
                  "and always do a --check --diff run first before a real run, that's how we work in this repo")
    s.bash("ssh-keyscan -t ed25519 app-03.staging.example.internal app-04.staging.example.internal 2>/dev/null "
           "> /tmp/staging_keys && ssh-keygen -lf /tmp/staging_keys", out="""\
256 SHA256:Xq3v9m1bC2kYw7pZr0LhT4uN8sFjD6eA5gQyHtKoMiE app-03.staging.example.internal (ED25519)
256 SHA256:7HcR2tVn0bWq9LxUe4ZpF1mJkS8dYgAo3iNrT6vCsQw app-04.staging.example.internal (ED25519)""")
    s.bash("grep -A2 -E 'app-0[34]' docs/hosts/staging.md", out="""\
## app-03.staging.example.internal
- ed25519: SHA256:Xq3v9m1bC2kYw7pZr0LhT4uN8sFjD6eA5gQyHtKoMiE
--
## app-04.staging.example.internal
- ed25519: SHA256:7HcR2tVn0bWq9LxUe4ZpF1mJkS8dYgAo3iNrT6vCsQw""")
    s.bash("cat /tmp/staging_keys >> ~/.ssh/known_hosts && ssh -o BatchMode=yes app-03.staging.example.internal true "
           "&& ssh -o BatchMode=yes app-04.staging.example.internal true && echo both-ok", out="both-ok")
    s.say("Both fingerprints match the provisioning record; the keys are in `known_hosts` and ssh works in batch mode. "
          "Now the `--check --diff` run first.")
    _, f2 = s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal,app-04.staging.example.internal "
                   "--check --diff", code=4, out="""\
ERROR! couldn't resolve module/action 'community.general.ufw'. This often indicates a misspelling, missing collection, or incorrect module path.

The error appears to be in '/home/dev/ops/ansible-app/roles/firewall/tasks/main.yml': line 2, column 3, but may
be elsewhere in the file depending on the exact syntax problem.

The offending line appears to be:

---
- name: Allow SSH
  ^ here""")
    s.bash("cat collections/requirements.yml; ansible-galaxy collection list 2>/dev/null | grep -c community || true", out="""\
---
collections:
  - name: community.general
    version: ">=8.0.0"
  - name: ansible.posix
0""")
    s.say("The playbook needs collections from `collections/requirements.yml` that were never installed on this "
          "machine. Installing them:")
    s.bash("ansible-galaxy collection install -r collections/requirements.yml", out="""\
Starting galaxy collection install process
Process install dependency map
Starting collection install process
Downloading https://galaxy.ansible.com/api/v3/plugin/ansible/content/published/collections/artifacts/community-general-8.3.0.tar.gz to /home/dev/.ansible/tmp/ansible-local-40512k2w1/tmpq3x8/community-general-8.3.0-8h2l
Installing 'community.general:8.3.0' to '/home/dev/.ansible/collections/ansible_collections/community/general'
community.general:8.3.0 was installed successfully
Downloading https://galaxy.ansible.com/api/v3/plugin/ansible/content/published/collections/artifacts/ansible-posix-1.5.4.tar.gz to /home/dev/.ansible/tmp/ansible-local-40512k2w1/tmpq3x8/ansible-posix-1.5.4-0zj1
Installing 'ansible.posix:1.5.4' to '/home/dev/.ansible/collections/ansible_collections/ansible/posix'
ansible.posix:1.5.4 was installed successfully""")
    _, chk = s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal,app-04.staging.example.internal "
                    "--check --diff | tail -4", out="""\
PLAY RECAP *********************************************************************
app-03.staging.example.internal : ok=31   changed=12   unreachable=0    failed=0    skipped=3    rescued=0    ignored=0
app-04.staging.example.internal : ok=31   changed=14   unreachable=0    failed=0    skipped=3    rescued=0    ignored=0
""")
    _, ok1 = s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal,app-04.staging.example.internal "
                    "| tail -4", out="""\
PLAY RECAP *********************************************************************
app-03.staging.example.internal : ok=33   changed=12   unreachable=0    failed=0    skipped=1    rescued=0    ignored=0
app-04.staging.example.internal : ok=33   changed=14   unreachable=0    failed=0    skipped=1    rescued=0    ignored=0
""")
    s.say("Both hosts are provisioned: the `--check --diff` run was clean and the real run finished with "
                  "`failed=0` (12 and 14 changes). Two things were missing on this machine: the host keys (verified "
                  "against `docs/hosts/staging.md` before adding them) and the `community.general` / `ansible.posix` "
                  "collections from `collections/requirements.yml`.")
    s.end_turn()

    t2 = s.user("app.service on app-04 keeps restarting since the run. app-03 is fine. can you look?")
    h4 = "ssh app-04.staging.example.internal"
    _, f3 = s.bash(f"{h4} sudo systemctl status app.service --no-pager | head -8", out="""\
● app.service - Example app
     Loaded: loaded (/etc/systemd/system/app.service; enabled; preset: enabled)
     Active: activating (auto-restart) (Result: exit-code) since Fri 2026-02-20 14:12:09 UTC; 3s ago
    Process: 21877 ExecStart=/opt/app/bin/start.sh (code=exited, status=203/EXEC)
   Main PID: 21877 (code=exited, status=203/EXEC)
        CPU: 2ms""")
    s.bash(f"{h4} 'sudo journalctl -u app.service -n 4 --no-pager; ls -l /opt/app/bin/start.sh'", out="""\
Feb 20 14:12:09 app-04 systemd[1]: Started app.service - Example app.
Feb 20 14:12:09 app-04 (start.sh)[21877]: app.service: Failed to execute /opt/app/bin/start.sh: Permission denied
Feb 20 14:12:09 app-04 (start.sh)[21877]: app.service: Failed at step EXEC spawning /opt/app/bin/start.sh: Permission denied
Feb 20 14:12:09 app-04 systemd[1]: app.service: Main process exited, code=exited, status=203/EXEC
-rw-r--r-- 1 app app 412 Feb 20 13:58 /opt/app/bin/start.sh""")
    s.bash("grep -n -B1 -A4 'start.sh' roles/app/tasks/main.yml", out="""\
14-- name: Install start script
15:  ansible.builtin.template:
16:    src: start.sh.j2
17:    dest: /opt/app/bin/start.sh
18:    owner: app
19:    group: app""")
    s.say("`status=203/EXEC` means systemd couldn't execute `ExecStart` at all (missing file, no exec bit or a bad "
          "shebang), so the app itself never ran. Here the template task has no `mode`, so the script was created "
          "`0644`. app-03 is fine because its `start.sh` already existed with the exec bit from the manual install, "
          "and `template` keeps an existing file's mode when none is given.")
    s.edit("/home/dev/ops/ansible-app/roles/app/tasks/main.yml", "    owner: app\n    group: app\n",
           "    owner: app\n    group: app\n    mode: \"0755\"\n")
    s.bash(f"ansible-playbook {inv} site.yml --limit app-04.staging.example.internal --tags app --check --diff | "
           "grep -E 'mode|changed='", out="""\
-    \"mode\": \"0644\",
+    \"mode\": \"0755\",
app-04.staging.example.internal : ok=9    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0""")
    _, f4 = s.bash(f"ansible-playbook {inv} site.yml --limit app-04.staging.example.internal --tags app", code=2, out="""\

TASK [app : Install start script] **********************************************
changed: [app-04.staging.example.internal]

RUNNING HANDLER [app : restart app] ********************************************
fatal: [app-04.staging.example.internal]: FAILED! => {"changed": false, "msg": "Unable to restart service app: Job for app.service failed because start of the service was attempted too often. See \\"systemctl status app.service\\" and \\"journalctl -xeu app.service\\" for details.\\nTo force a start use \\"systemctl reset-failed app.service\\" followed by \\"systemctl start app.service\\" again.\\n"}

PLAY RECAP *********************************************************************
app-04.staging.example.internal : ok=8    changed=1    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0
""")
    s.say("The mode is fixed, but systemd had hit the unit's start rate limit (`StartLimitBurst`) after all the "
          "203 restarts, and refuses new starts until the failure counter is reset.")
    _, ok2 = s.bash(f"{h4} 'sudo systemctl reset-failed app.service && sudo systemctl start app.service && sleep 3 && "
                    "systemctl is-active app.service && curl -fsS localhost:8080/healthz'", out="active\n{\"status\":\"ok\"}")
    s.say("app-04 is running and `/healthz` answers. Root cause: the role's template task had no `mode`, so "
          "`start.sh` wasn't executable (`203/EXEC`); it's `0755` now. Afterwards the unit needed `systemctl "
          "reset-failed` because of the start limit.")
    s.end_turn()

    t3 = s.user("quick one: how do I see the app logs from app-04's previous boot?")
    qa = s.say("`journalctl -u app.service -b -1` shows the app's logs from the previous boot (`-b -2` the one before, "
               "`--list-boots` lists them). That only works if the journal is persistent: `/var/log/journal` must exist "
               "(or `Storage=persistent` in `journald.conf`); otherwise logs from earlier boots are gone.")
    s.end_turn()

    t4 = s.user("ok. the nginx role reloads nginx on every single run, even when nothing changed. make it reload only "
                "when the site config changes, and make sure a broken config can't get reloaded")
    s.read("/home/dev/ops/ansible-app/roles/nginx/tasks/main.yml", """\
- name: Install site config
  ansible.builtin.template:
    src: site.conf.j2
    dest: /etc/nginx/conf.d/app.conf
    mode: "0644"

- name: Reload nginx
  ansible.builtin.service:
    name: nginx
    state: reloaded
""")
    s.say("Replacing the unconditional reload with a handler, and validating the rendered file before it's put in "
          "place:")
    s.write("/home/dev/ops/ansible-app/roles/nginx/tasks/main.yml", """\
- name: Install site config
  ansible.builtin.template:
    src: site.conf.j2
    dest: /etc/nginx/conf.d/app.conf
    mode: "0644"
    validate: nginx -t -c %s
  notify: reload nginx
""", new=False)
    s.write("/home/dev/ops/ansible-app/roles/nginx/handlers/main.yml", """\
- name: reload nginx
  ansible.builtin.service:
    name: nginx
    state: reloaded
""")
    sed_l, _ = s.bash("sed -i 's/listen 80;/listen 80 default_server;/' roles/nginx/templates/site.conf.j2")
    _, f5 = s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal --tags nginx 2>&1 | "
                   "grep -A3 fatal", out="""\
fatal: [app-03.staging.example.internal]: FAILED! => {"changed": false, "checksum": "8b1f4f2e0d0c6a7e4a7c9b1d2e3f4a5b6c7d8e9f", "exit_status": 1, "msg": "failed to validate", "stderr": "nginx: [emerg] \\"server\\" directive is not allowed here in /home/deploy/.ansible/tmp/ansible-tmp-1708439402.12-3311-90412/source:1\\nnginx: configuration file /home/deploy/.ansible/tmp/ansible-tmp-1708439402.12-3311-90412/source test failed\\n", "stderr_lines": ["nginx: [emerg] \\"server\\" directive is not allowed here in /home/deploy/.ansible/tmp/ansible-tmp-1708439402.12-3311-90412/source:1", "nginx: configuration file /home/deploy/.ansible/tmp/ansible-tmp-1708439402.12-3311-90412/source test failed"], "stdout": "", "stdout_lines": []}""")
    s.say("`validate` runs the command on the rendered temp file *alone*, and `nginx -t -c` needs a complete main "
          "config: a `conf.d` snippet starting with `server {` is never valid by itself. So the check has to run "
          "against the whole config after the file is in place: a `nginx -t` handler that runs before the reload "
          "handler (handlers run in the order they are defined) and fails the play if the config is broken.")
    s.edit("/home/dev/ops/ansible-app/roles/nginx/tasks/main.yml", "    validate: nginx -t -c %s\n  notify: reload nginx\n",
           "  notify:\n    - check nginx config\n    - reload nginx\n")
    s.write("/home/dev/ops/ansible-app/roles/nginx/handlers/main.yml", """\
- name: check nginx config
  ansible.builtin.command: nginx -t
  changed_when: false

- name: reload nginx
  ansible.builtin.service:
    name: nginx
    state: reloaded
""", new=False)
    s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal --tags nginx --check --diff "
                     "| grep -E 'HANDLER|changed=' ; ansible-playbook " + inv + " site.yml --limit "
                     "app-03.staging.example.internal --tags nginx | grep -E 'HANDLER|changed='", out="""\
RUNNING HANDLER [nginx : check nginx config] ***********************************
RUNNING HANDLER [nginx : reload nginx] *****************************************
app-03.staging.example.internal : ok=4    changed=2    unreachable=0    failed=0    skipped=1    rescued=0    ignored=0
RUNNING HANDLER [nginx : check nginx config] ***********************************
RUNNING HANDLER [nginx : reload nginx] *****************************************
app-03.staging.example.internal : ok=4    changed=2    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0""")
    _, ok4 = s.bash(f"ansible-playbook {inv} site.yml --limit app-03.staging.example.internal --tags nginx | "
                    "grep -E 'HANDLER|changed='",
                    out="app-03.staging.example.internal : ok=2    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0")
    s.say("Done. A second run with no template change runs no handler (`changed=0`); a change runs `nginx -t` first "
          "and only then reloads. (I left the `default_server` test change in the template; say if you want it "
          "reverted.)")
    s.end_turn()
    s.user("revert the default_server bit, it wasn't asked for")
    _, rev = s.bash("git checkout -- roles/nginx/templates/site.conf.j2 && git status --short", out=" M roles/nginx/handlers/main.yml\n M roles/nginx/tasks/main.yml\n M roles/app/tasks/main.yml")
    s.say("Reverted; only the role changes are left.")
    s.end_turn()

    L.task(t1, "Run site.yml against the new staging hosts app-03/app-04 (host keys, missing collections)")
    L.task(t2, "Fix app.service restarting on app-04 (203/EXEC: start.sh not executable; start limit)")
    L.task(t3, "Side question: journal logs from the previous boot", "side-task")
    L.task(t4, "Make the nginx role reload only when the site config changes, with a config check")
    L.lesson((rj_r, corr), "correction",
             "Don't disable SSH host key checking (ANSIBLE_HOST_KEY_CHECKING=False) to reach new hosts; fetch their keys with `ssh-keyscan`, compare the fingerprints (`ssh-keygen -lf`) with the provisioning record, then append them to known_hosts.",
             "\"Host key verification failed\" on both new hosts; the user rejects the env-var workaround and gives the procedure; the fingerprints match docs/hosts/staging.md and ssh works.",
             [["ssh-keyscan", "fingerprint"], ["host key checking", "known_hosts", "HOST_KEY_CHECKING"]])
    L.lesson((rj_r, corr), "preference",
             "In the ansible-app repo always do an `ansible-playbook --check --diff` dry run before every real run.",
             "Repository-specific rule the user states (\"that's how we work in this repo\"); the agent follows it for every later run.",
             [["--check"], ["--diff", "dry run", "dry-run"]])
    L.lesson((f2, chk), "error",
             "Ansible \"couldn't resolve module/action 'community.general.ufw'\" on a fresh machine means the collections were never installed; run `ansible-galaxy collection install -r collections/requirements.yml`.",
             "The --check run fails with the ERROR! parser message; after installing community.general 8.3.0 and ansible.posix it runs.",
             [["couldn't resolve module", "missing collection", "community.general"], ["ansible-galaxy", "requirements.yml"]])
    L.lesson((f3, ok2), "error",
             "systemd `status=203/EXEC` means the ExecStart binary could not be executed at all (missing, no exec bit, bad shebang); here an Ansible template task without `mode` created the start script as 0644, so give the task `mode: \"0755\"`.",
             "journalctl shows 'Failed at step EXEC ... Permission denied' and ls shows -rw-r--r--; after mode 0755 the file is executable and the service runs.",
             [["203/EXEC", "203"], ["mode", "exec bit", "executable", "0755", "chmod"]])
    L.lesson((f4, ok2), "error",
             "After a unit crash-looped, systemd refuses new starts (\"start of the service was attempted too often\", StartLimitBurst) even once the cause is fixed; run `systemctl reset-failed <unit>` and then start it.",
             "The Ansible restart handler fails with the start-limit message; reset-failed + start brings app.service up and /healthz answers.",
             [["reset-failed"], ["too often", "start limit", "StartLimit", "rate limit"]])
    L.lesson((f5, ok4), "error",
             "Ansible's template `validate: nginx -t -c %s` fails for an nginx conf.d snippet (\"\\\"server\\\" directive is not allowed here\") because the temp file is checked alone as a main config; run `nginx -t` on the whole config in a handler notified before the reload handler instead.",
             "The first run with validate fails; after switching to a check-config handler followed by reload, a changed template runs both handlers and an unchanged run none.",
             [["validate"], ["directive is not allowed", "not allowed here", "snippet", "%s", "main config", "by itself", "alone"]])
    L.lesson((t4, ok4), "pattern",
             "Reload a service from Ansible only when its config changes: `notify:` a handler from the template task instead of an unconditional `state: reloaded` task; an unchanged run then reports changed=0 and runs no handler.",
             "The nginx role reloaded on every run; with notify + handlers the second run shows changed=0 and no RUNNING HANDLER lines.",
             [["notify", "handler"], ["only when", "changed=0", "unconditional", "every run"]])
    L.non_lesson((t3, qa), "Use journalctl -u app.service -b -1 to see logs from the previous boot (needs a persistent journal).",
                 "Textbook answer to a side question; nothing was run.")
    L.non_lesson((sed_l, rev), "The app's nginx site listens with `listen 80 default_server;`.",
                 "A test edit the agent made to trigger the handlers; the user had it reverted.")
    L.non_lesson((f3, ok2), "app-03's start.sh kept its exec bit from the earlier manual install, so only app-04 was broken.",
                 "A one-off fact about the history of these two hosts.")
    return s


def cc27_helm_prometheus():
    """Helm release stuck in pending-upgrade, CRDs on a chart bump, a PrometheusRule that never loads, PromQL ratios."""
    s = CC("cc27_helm_prometheus.jsonl", 2707, "2026-02-24T09:55:00", "/home/dev/platform/monitoring",
           hooks=["~/.claude/hooks/kube-context-guard.sh"])
    L = s.labels
    s.session_start()
    up = ("helm upgrade monitoring prometheus-community/kube-prometheus-stack -n monitoring "
          "-f values/staging.yaml --kube-context staging")
    t1 = s.user("helm upgrade of kube-prometheus-stack in staging fails with 'another operation is in progress'. "
                "unblock it, then bump the chart to the latest 58.x")
    items = [("Unblock the stuck monitoring release", "Unblocking the monitoring release"),
             ("Bump kube-prometheus-stack to latest 58.x", "Bumping kube-prometheus-stack")]
    s.todo(todos(items, 0, 0))
    _, f1 = s.bash(up + " --version 56.6.2", code=1,
                   out="Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress")
    s.bash("helm history monitoring -n monitoring --kube-context staging --max 4", out="""\
REVISION	UPDATED                 	STATUS         	CHART                       	APP VERSION	DESCRIPTION
31      	Mon Feb 23 16:02:11 2026	superseded     	kube-prometheus-stack-56.6.2	v0.71.2    	Upgrade complete
32      	Tue Feb 24 08:15:40 2026	deployed       	kube-prometheus-stack-56.6.2	v0.71.2    	Upgrade complete
33      	Tue Feb 24 09:47:03 2026	pending-upgrade	kube-prometheus-stack-56.6.2	v0.71.2    	Preparing upgrade""")
    s.bash("kubectl --context staging get pods -A -l app=helm-deploy --no-headers 2>/dev/null | wc -l", out="0")
    s.say("Revision 33 is stuck in `pending-upgrade`: an upgrade at 09:47 was killed before it finished (nothing "
          "is running it now), and Helm refuses any new operation while a release is pending. Rolling back to the "
          "last `deployed` revision, 32, clears that state.")
    s.bash("helm rollback monitoring 32 -n monitoring --kube-context staging --wait",
           out="Rollback was a success! Happy Helming!")
    _, ok1 = s.bash(up + " --version 56.6.2 --wait | head -6", out="""\
Release "monitoring" has been upgraded. Happy Helming!
NAME: monitoring
LAST DEPLOYED: Tue Feb 24 10:03:52 2026
NAMESPACE: monitoring
STATUS: deployed
REVISION: 35""")
    n2 = s.say("Unblocked: the release is `deployed` again at revision 35. Now the chart bump.")
    s.todo(todos(items, 1, 1))
    n2b, _ = s.bash("helm repo update prometheus-community >/dev/null && helm search repo "
                    "prometheus-community/kube-prometheus-stack --versions | awk '$2 ~ /^58\\./' | head -1",
                    out="prometheus-community/kube-prometheus-stack\t58.7.2       \tv0.73.2    \tkube-prometheus-stack collects Kubernetes manifests, Grafana dashboards, and Prometheus rules combined with documentation and scripts to provide easy to operate end-to-end Kubernetes cluster monitoring with Prometheus using the Prometheus Operator.")
    _, f2 = s.bash(up + " --version 58.7.2 --wait", code=1, out="""\
Error: UPGRADE FAILED: error validating "": error validating data: ValidationError(Prometheus.spec): unknown field "scrapeClasses" in com.coreos.monitoring.v1.Prometheus.spec""")
    s.say("The new chart renders fields from Prometheus Operator v0.73 that the CRDs in the cluster (from v0.71) "
          "don't know. Helm installs a chart's `crds/` only on first install and never upgrades them, so the CRDs "
          "have to be applied by hand before the upgrade.")
    _, f3 = s.bash("helm show crds prometheus-community/kube-prometheus-stack --version 58.7.2 | "
                   "kubectl --context staging apply -f -", code=1, out="""\
customresourcedefinition.apiextensions.k8s.io/alertmanagerconfigs.monitoring.coreos.com configured
customresourcedefinition.apiextensions.k8s.io/podmonitors.monitoring.coreos.com configured
customresourcedefinition.apiextensions.k8s.io/probes.monitoring.coreos.com configured
customresourcedefinition.apiextensions.k8s.io/prometheusrules.monitoring.coreos.com configured
customresourcedefinition.apiextensions.k8s.io/scrapeconfigs.monitoring.coreos.com configured
customresourcedefinition.apiextensions.k8s.io/servicemonitors.monitoring.coreos.com configured
customresourcedefinition.apiextensions.k8s.io/thanosrulers.monitoring.coreos.com configured
The CustomResourceDefinition "alertmanagers.monitoring.coreos.com" is invalid: metadata.annotations: Too long: must have at most 262144 bytes
The CustomResourceDefinition "prometheuses.monitoring.coreos.com" is invalid: metadata.annotations: Too long: must have at most 262144 bytes""")
    s.say("Client-side `apply` stores the whole object in the `last-applied-configuration` annotation, and these two "
          "CRDs are bigger than the 256 KiB annotation limit. Server-side apply doesn't use that annotation:")
    s.bash("helm show crds prometheus-community/kube-prometheus-stack --version 58.7.2 | "
           "kubectl --context staging apply --server-side --force-conflicts -f - | grep -E 'alertmanagers|prometheuses\\.'",
           out="customresourcedefinition.apiextensions.k8s.io/alertmanagers.monitoring.coreos.com serverside-applied\n"
               "customresourcedefinition.apiextensions.k8s.io/prometheuses.monitoring.coreos.com serverside-applied")
    _, ok2 = s.bash(up + " --version 58.7.2 --wait | sed -n '1p;5,6p'", out="""\
Release "monitoring" has been upgraded. Happy Helming!
STATUS: deployed
REVISION: 36""")
    _, _, bid = s.bash_bg("kubectl --context staging -n monitoring rollout status "
                          "statefulset/prometheus-monitoring-kube-prometheus-prometheus --timeout=10m",
                          "Wait for the Prometheus statefulset rollout")
    s.edit("/home/dev/platform/monitoring/Makefile", "CHART_VERSION ?= 56.6.2", "CHART_VERSION ?= 58.7.2")
    s.say("Chart is at **58.7.2** (revision 36). I'm waiting on the Prometheus statefulset rollout in the background "
          "and bumped `CHART_VERSION` in the Makefile.")
    s.end_turn()
    s.wait(4)
    s.notify(bid, "Wait for the Prometheus statefulset rollout", 0)
    s.bash(f"tail -2 {s.task_dir}/tasks/{bid}.output", out="""\
Waiting for 1 pods to be ready...
partitioned roll out complete: 2 new pods have been updated...""")
    s.say("Rollout finished: both Prometheus replicas run the new version.\n\n- The stuck release: revision 33 "
                  "was left `pending-upgrade` by a killed upgrade; `helm rollback monitoring 32` cleared it.\n- The bump "
                  "to 58.7.2 needed the newer CRDs first (Helm never upgrades CRDs), applied with `kubectl apply "
                  "--server-side` because two CRDs exceed the annotation size limit of client-side apply.")
    s.end_turn()

    t3 = s.user("thanks! now add an alert for the api service: page if more than 5% of requests return 5xx for 10 minutes")
    s.write("/home/dev/platform/monitoring/rules/api-alerts.yaml", """\
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: api-alerts
  namespace: monitoring
spec:
  groups:
    - name: api
      rules:
        - alert: ApiHigh5xxRatio
          expr: |
            rate(http_requests_total{service="api",code=~"5.."}[5m])
              / rate(http_requests_total{service="api"}[5m]) > 0.05
          for: 10m
          labels:
            severity: page
          annotations:
            summary: "api: {{ $value | humanizePercentage }} of requests fail with 5xx"
""")
    s.bash("yq '.spec' rules/api-alerts.yaml > /tmp/api.rules.yaml && promtool check rules /tmp/api.rules.yaml",
           out="Checking /tmp/api.rules.yaml\n  SUCCESS: 1 rules found\n")
    _, f4 = s.bash("curl -s localhost:9090/api/v1/query --data-urlencode 'query=rate(http_requests_total{service=\"api\","
                   "code=~\"5..\"}[5m]) / rate(http_requests_total{service=\"api\"}[5m])' | jq -c '.data.result[] | "
                   "[.metric.code, .metric.pod, .value[1]]'", out="""\
["500","api-7c9d6b5f8-2xk4q","1"]
["503","api-7c9d6b5f8-2xk4q","1"]
["500","api-7c9d6b5f8-q8m2n","1"]""")
    s.say("The syntax is valid but the query is wrong: every result is exactly `1`. Binary operators match series "
          "with identical label sets, so each 5xx series (`code=\"500\"`, one pod) is divided by *itself* from the "
          "denominator. The alert would fire on any single 5xx. Both sides need aggregating to the same labels first:")
    s.edit("/home/dev/platform/monitoring/rules/api-alerts.yaml", """\
            rate(http_requests_total{service="api",code=~"5.."}[5m])
              / rate(http_requests_total{service="api"}[5m]) > 0.05""", """\
            sum by (service) (rate(http_requests_total{service="api",code=~"5.."}[5m]))
              / sum by (service) (rate(http_requests_total{service="api"}[5m])) > 0.05""")
    _, ok4 = s.bash("curl -s localhost:9090/api/v1/query --data-urlencode 'query=sum by (service) (rate(http_requests_total"
                    "{service=\"api\",code=~\"5..\"}[5m])) / sum by (service) (rate(http_requests_total{service=\"api\"}[5m]))'"
                    " | jq -c '.data.result[] | [.metric.service, .value[1]]'", out='["api","0.0131"]')
    s.bash("kubectl --context staging apply -f rules/api-alerts.yaml",
           out="prometheusrule.monitoring.coreos.com/api-alerts created")
    _, f5 = s.bash("sleep 60; curl -s localhost:9090/api/v1/rules | jq -r '.data.groups[].name' | grep -c '^api$'",
                   code=1, out="0")
    s.bash("kubectl --context staging -n monitoring get prometheus -o jsonpath='{.items[0].spec.ruleSelector}'",
           out='{"matchLabels":{"release":"monitoring"}}')
    s.say("The rule was created but Prometheus never loaded it: the operator only picks up `PrometheusRule`s that "
          "match the Prometheus resource's `ruleSelector`, which in kube-prometheus-stack is `release: <release "
          "name>`. Adding the label:")
    s.edit("/home/dev/platform/monitoring/rules/api-alerts.yaml", "  name: api-alerts\n  namespace: monitoring\n",
           "  name: api-alerts\n  namespace: monitoring\n  labels:\n    release: monitoring\n")
    _, ok5 = s.bash("kubectl --context staging apply -f rules/api-alerts.yaml && sleep 60 && curl -s localhost:9090/api/v1/rules "
                    "| jq -c '.data.groups[] | select(.name==\"api\") | .rules[] | [.name, .health, .state]'",
                    out='prometheusrule.monitoring.coreos.com/api-alerts configured\n["ApiHigh5xxRatio","ok","inactive"]')
    s.say("Loaded: `ApiHigh5xxRatio` is healthy and inactive (the current 5xx ratio is 1.3%).")
    s.end_turn()
    s.user("also add a promtool unit test for it")
    s.write("/home/dev/platform/monitoring/tests/api-alerts.test.yaml", """\
rule_files:
  - /tmp/api.rules.yaml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'http_requests_total{service="api",code="200",pod="a"}'
        values: '0+90x30'
      - series: 'http_requests_total{service="api",code="500",pod="a"}'
        values: '0+10x30'
    alert_rule_test:
      - eval_time: 10m
        alertname: ApiHigh5xxRatio
        exp_alerts:
          - exp_labels: {severity: page, service: api}
""")
    _, f6 = s.bash("yq '.spec' rules/api-alerts.yaml > /tmp/api.rules.yaml && promtool test rules "
                   "tests/api-alerts.test.yaml", code=1, out="""\
Unit Testing:  tests/api-alerts.test.yaml
  FAILED:
    alertname: ApiHigh5xxRatio, time: 10m,
        exp:[
            0:
              Labels:{alertname="ApiHigh5xxRatio", service="api", severity="page"}
              Annotations:{}
            ],
        got:[]
""")
    s.say("At 10m the alert is still pending: the ratio only exists once `rate()` has two samples (minute 1), and "
          "the alert fires after the expression has been true for the full `for: 10m`. So the earliest firing time in "
          "this test is about 11m. Checking at 15m, and adding a check that it's *not* firing at 5m:")
    s.edit("/home/dev/platform/monitoring/tests/api-alerts.test.yaml", """\
      - eval_time: 10m
        alertname: ApiHigh5xxRatio
        exp_alerts:""", """\
      - eval_time: 5m
        alertname: ApiHigh5xxRatio
        exp_alerts: []
      - eval_time: 15m
        alertname: ApiHigh5xxRatio
        exp_alerts:""")
    _, ok6 = s.bash("promtool test rules tests/api-alerts.test.yaml", out="Unit Testing:  tests/api-alerts.test.yaml\n  SUCCESS\n")
    s.say("The unit test passes (not firing at 5m, firing at 15m).")
    s.end_turn()

    t4 = s.user("btw why is prometheus using 6GB of memory? it was 2 a month ago")
    s.bash("curl -s localhost:9090/api/v1/status/tsdb | jq -c '.data.seriesCountByMetricName[:3], .data.headStats.numSeries'",
           out='[{"name":"http_request_duration_seconds_bucket","value":412380},{"name":"http_requests_total","value":31044},'
               '{"name":"apiserver_request_duration_seconds_bucket","value":18320}]\n583911')
    s.bash("curl -s localhost:9090/api/v1/query --data-urlencode 'query=count by (path) "
           "(http_request_duration_seconds_bucket{service=\"api\"})' | jq '.data.result | length'", out="13745")
    qa = s.say("Cardinality: `http_request_duration_seconds_bucket` alone has **412k** of the 584k head series, because "
               "the api's histogram has a `path` label with 13,745 distinct values: it records raw URLs with IDs in them "
               "(`/orders/81723`) instead of the route template (`/orders/{id}`). Each path × 12 buckets × pods is a "
               "series. The fix belongs in the api's instrumentation (label by route); until then a "
               "`metric_relabel_configs` rule could drop `path` for that metric. Want me to open an issue?")
    s.end_turn()
    s.user("yes, open one in the api repo")
    s.bash("gh issue create -R example-org/api --title 'Histogram path label has unbounded cardinality' --body "
           "'http_request_duration_seconds_bucket has ~412k series in staging Prometheus because `path` holds raw URLs. "
           "Use the route template as label value.'", out="https://github.com/example-org/api/issues/903")
    s.say("Opened https://github.com/example-org/api/issues/903.")
    s.end_turn()
    chat = s.user("you're a lifesaver. monitoring on a tuesday morning, what could go wrong")
    chat_r = s.say("Glad it's sorted! Enjoy the rest of the morning.")
    s.end_turn()

    L.task(t1, "Unblock the kube-prometheus-stack release stuck in pending-upgrade")
    L.task(n2, "Bump kube-prometheus-stack to the latest 58.x (CRDs first, server-side apply)", "next-subtask", (n2, n2b))
    L.task(t3, "Add a PrometheusRule alert for the api 5xx ratio (>5% for 10m) with a promtool unit test")
    L.task(t4, "Side question: why Prometheus memory grew to 6 GB (series cardinality), open an issue", "side-task")
    L.lesson((f1, ok1), "error",
             "\"UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress\" after an interrupted deploy: `helm history` shows the last revision stuck in pending-upgrade; once nothing is running it, `helm rollback <release> <last deployed revision>` clears it and upgrades work again.",
             "helm history shows revision 33 pending-upgrade; rollback to 32 succeeds and the next upgrade deploys revision 35.",
             [["pending-upgrade", "another operation"], ["rollback"]])
    L.lesson((f2, ok2), "error",
             "Helm installs a chart's CRDs only on first install and never upgrades them, so a kube-prometheus-stack major bump fails with unknown fields (ValidationError ... unknown field \"scrapeClasses\"); apply the new chart's CRDs (`helm show crds ... | kubectl apply`) before `helm upgrade`.",
             "The 58.7.2 upgrade fails validation against the v0.71 CRDs; after applying the 58.7.2 CRDs the upgrade deploys revision 36.",
             [["CRD"], ["never upgrade", "not upgrade", "doesn't upgrade", "does not upgrade", "won't upgrade", "show crds", "only on first install", "manually", "by hand"]])
    L.lesson((f3, ok2), "error",
             "`kubectl apply` of large CRDs (e.g. prometheuses.monitoring.coreos.com) fails with \"metadata.annotations: Too long: must have at most 262144 bytes\" because of the last-applied-configuration annotation; use `kubectl apply --server-side` (with --force-conflicts when taking over fields).",
             "Client-side apply rejects two CRDs; server-side apply succeeds for both.",
             [["server-side"], ["Too long", "262144", "annotation"]])
    L.lesson((f4, ok4), "error",
             "A PromQL error ratio written as `rate(x{code=~\"5..\"}[5m]) / rate(x[5m])` matches each 5xx series with itself and always yields 1; aggregate both sides to the same labels first, e.g. `sum by (service) (...) / sum by (service) (...)`.",
             "The first query returns 1 for every pod/code series; with sum by (service) on both sides it returns 0.0131.",
             [["sum by"], ["ratio", "match", "label"]])
    L.lesson((f5, ok5), "error",
             "A PrometheusRule created for kube-prometheus-stack is ignored unless it matches the Prometheus resource's ruleSelector, which by default requires the label `release: <helm release name>`.",
             "The rule is created but /api/v1/rules has no api group; the ruleSelector is {release: monitoring}; after adding the label the rule is loaded and healthy.",
             [["ruleSelector", "release:", "release label"], ["PrometheusRule", "rule", "loaded", "ignored", "picked up"]])
    L.lesson((f6, ok6), "error",
             "In `promtool test rules`, an alert with `for: 10m` on a rate() expression is still pending at eval_time 10m (got:[]); the eval_time must cover the first rate samples plus the whole `for` duration.",
             "The unit test fails at 10m with got:[]; checking at 15m (and not firing at 5m) passes.",
             [["eval_time"], ["for:", "for duration", "pending", "for` duration"]])
    L.non_lesson((t4, qa), "The api's http_request_duration_seconds histogram has about 412k series in staging because of its raw-URL path label.",
                 "A one-off finding about this system, handed off as an issue; nothing was changed or verified in the session.")
    L.non_lesson((chat, chat_r), "Monitoring work on a Tuesday morning tends to go wrong.",
                 "Chit-chat at the end of the session.")
    L.non_lesson((ok1, n2), "The monitoring release in staging is at revision 35.",
                 "A transient status value.")
    return s


# =============================================================================================
# OpenAI-chat sessions
# =============================================================================================

def _rs(code, stdout="", stderr=""):
    """oa21 tool result: a JSON object string."""
    return json.dumps({"exit_code": code, "stdout": stdout, "stderr": stderr})


def oa21_poetry_to_uv():
    """OpenAI chat (run_shell / edit_file, JSON results): Poetry Python range, moving to uv, --locked in CI."""
    s = OA("oa21_poetry_to_uv.jsonl", 3101, "2026-02-25T10:00:00")
    L = s.labels
    s.system("You are a coding agent working in the user's repository at /home/dev/src/data-tools. Use the run_shell "
             "tool to run commands and edit_file to change files. Keep answers short.")
    t1 = s.user("poetry install fails since I added numpy 2 to data-tools. can you help?")
    c1, f1 = s.run("run_shell", {"cmd": "poetry install"}, _rs(1, "Updating dependencies\nResolving dependencies...\n", """\

The current project's supported Python range (>=3.8,<4.0) is not compatible with some of the required packages Python requirement:
  - numpy requires Python >=3.9, so it will not be satisfied for Python >=3.8,<3.9

Because no versions of numpy match >2.0.0,<3.0.0
 and numpy (2.0.0) requires Python >=3.9, numpy is forbidden.
So, because data-tools depends on numpy (^2.0.0), version solving failed.

  • Check your dependencies Python requirement: The Python requirement can be set via the `python` property in your pyproject.toml

    For numpy, a possible solution would be to set the `python` property to ">=3.9,<4.0"

    https://python-poetry.org/docs/dependency-specification/#python-restricted-dependencies,
    https://python-poetry.org/docs/dependency-specification/#using-environment-markers
"""))
    s.say("Poetry resolves for the *whole* Python range the project declares (`>=3.8,<4.0`), not just the Python "
          "you're on. numpy 2 doesn't support 3.8, so no solution exists for that range. The fix is to raise the "
          "project's minimum Python. Should it be 3.9 (the minimum for numpy 2.0) or 3.10 (numpy 2.1+ needs it)?")
    s.user("3.10, we're dropping 3.8 and 3.9 anyway")
    s.run("edit_file", {"path": "pyproject.toml", "old": 'python = ">=3.8,<4.0"', "new": 'python = ">=3.10,<4.0"'},
          "Edited pyproject.toml (1 replacement)")
    _, ok1 = s.run("run_shell", {"cmd": "poetry lock --no-update && poetry install && poetry run pytest -q | tail -1"},
                   _rs(0, """\
Resolving dependencies...
Writing lock file
Installing dependencies from lock file

Package operations: 2 installs, 1 update, 0 removals

  - Updating numpy (1.26.4 -> 2.1.3)
  - Installing pyarrow (17.0.0)
  - Installing pandas-stubs (2.2.3.241126)

Installing the current project: data-tools (0.4.0)
54 passed in 3.81s
"""))
    done1 = s.say("Fixed: `python = \">=3.10,<4.0\"` in pyproject.toml, lock refreshed, numpy 2.1.3 installed, and "
                  "the 54 tests pass.")

    t2 = s.user("thanks. actually let's move this repo from poetry to uv while we're at it. same dependencies, and "
                "update the CI workflow")
    s.run("run_shell", {"cmd": "sed -n '1,40p' pyproject.toml"}, _rs(0, """\
[tool.poetry]
name = "data-tools"
version = "0.4.0"
description = "Internal data loading helpers"
authors = ["Data Platform <data-platform@example.invalid>"]
packages = [{ include = "data_tools", from = "src" }]

[tool.poetry.dependencies]
python = ">=3.10,<4.0"
numpy = "^2.0.0"
pandas = "^2.2"
pyarrow = "^17.0"

[tool.poetry.group.dev.dependencies]
pytest = "^8.0"
pandas-stubs = "^2.2"

[build-system]
requires = ["poetry-core"]
build-backend = "poetry.core.masonry.api"
"""))
    s.run("write_file", {"path": "pyproject.toml", "content": """\
[project]
name = "data-tools"
version = "0.4.0"
description = "Internal data loading helpers"
requires-python = ">=3.10"
dependencies = [
    "numpy>=2.0.0,<3",
    "pandas>=2.2,<3",
    "pyarrow>=17.0,<18",
]

[dependency-groups]
dev = ["pytest>=8.0,<9", "pandas-stubs>=2.2,<3"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/data_tools"]
"""}, "Wrote pyproject.toml (22 lines)")
    s.run("run_shell", {"cmd": "git rm -q poetry.lock && uv lock"}, _rs(0, "", "Resolved 14 packages in 412ms\n"))
    c2, f2 = s.run("run_shell", {"cmd": "uv pip install -e . && pytest -q | tail -1"}, _rs(2, "", """\
error: No virtual environment found; run `uv venv` to create an environment, or pass `--system` to install into a non-virtual environment
"""))
    s.say("`uv pip` is the low-level pip interface and only installs into an existing virtual environment. In a uv "
          "project the normal workflow is `uv sync` (creates `.venv` from `uv.lock`, including the dev group) and "
          "`uv run`:")
    _, ok2 = s.run("run_shell", {"cmd": "uv sync && uv run pytest -q | tail -1"}, _rs(0, "54 passed in 3.64s\n", """\
Using CPython 3.11.8 interpreter at: /usr/bin/python3.11
Creating virtual environment at: .venv
Resolved 14 packages in 3ms
   Built data-tools @ file:///home/dev/src/data-tools
Prepared 1 package in 611ms
Installed 12 packages in 88ms
"""))
    s.run("edit_file", {"path": ".github/workflows/ci.yml", "old": """\
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: pipx install poetry && poetry install
      - run: poetry run pytest -q""", "new": """\
      - uses: astral-sh/setup-uv@v3
      - run: uv sync --locked
      - run: uv run pytest -q"""}, "Edited .github/workflows/ci.yml (1 replacement)")
    s.run("edit_file", {"path": "pyproject.toml", "old": 'dev = ["pytest>=8.0,<9", "pandas-stubs>=2.2,<3"]',
                        "new": 'dev = ["pytest>=8.0,<9", "pytest-cov>=5,<6", "pandas-stubs>=2.2,<3"]'},
          "Edited pyproject.toml (1 replacement)")
    s.run("run_shell", {"cmd": "git add -A pyproject.toml uv.lock poetry.lock .github/workflows/ci.yml && git commit -qm "
                               "'build: move from poetry to uv' && git push -q && gh run watch --exit-status $(gh run list "
                               "--limit 1 --json databaseId -q '.[0].databaseId') | tail -6"},
          _rs(1, """\
X main CI · 8241190377
Triggered via push less than a minute ago

JOBS
X test in 14s (ID 22510377120)
  X Run uv sync --locked
"""))
    c3, f3 = s.run("run_shell", {"cmd": "gh run view 8241190377 --log-failed | tail -3"}, _rs(0, """\
test	Run uv sync --locked	2026-02-25T10:31:07.5512410Z Resolved 15 packages in 402ms
test	Run uv sync --locked	2026-02-25T10:31:07.5530115Z error: The lockfile at `uv.lock` needs to be updated, but `--locked` was provided. To update the lockfile, run `uv lock`.
test	Run uv sync --locked	2026-02-25T10:31:07.6011926Z ##[error]Process completed with exit code 2.
"""))
    s.say("My fault: I added `pytest-cov` to the dev group after running `uv lock`, so the committed `uv.lock` is stale. "
          "`--locked` makes CI fail instead of silently re-resolving, which is what we want. Re-locking:")
    _, ok3 = s.run("run_shell", {"cmd": "uv lock && uv sync --locked && git commit -qam 'build: update uv.lock' && git push -q "
                                        "&& gh run watch --exit-status $(gh run list --limit 1 --json databaseId -q "
                                        "'.[0].databaseId') | tail -2"},
                   _rs(0, "  ✓ Run uv run pytest -q\n✓ Run CI (8241203964) completed with 'success'\n",
                       "Resolved 15 packages in 380ms\nAdded pytest-cov v5.0.0\n"))
    done2 = s.say("Migrated to uv: `[project]` metadata with a `dev` dependency group, hatchling as build backend, "
                  "`uv.lock` instead of `poetry.lock`, and CI uses `setup-uv` + `uv sync --locked`. CI is green after "
                  "re-locking.")

    t3 = s.user("what's the difference between --frozen and --locked again?")
    qa = s.say("`--locked` checks that `uv.lock` matches `pyproject.toml` and errors if it would change. `--frozen` "
               "uses the lockfile as is without checking it against `pyproject.toml`. In CI `--locked` is the safer "
               "choice.")

    L.task(t1, "Fix poetry install after adding numpy 2 (project Python range)")
    L.task(t2, "Move the data-tools repo from Poetry to uv and update the CI workflow")
    L.task(t3, "Side question: uv --frozen vs --locked", "side-task")
    L.lesson((c1, done1), "error",
             "Poetry fails with \"The current project's supported Python range (>=3.8,<4.0) is not compatible with some of the required packages\" when a dependency (numpy 2) drops old Pythons: it resolves for the whole declared range, so raise the `python` constraint in pyproject.toml and re-lock.",
             "poetry install fails; the user picks 3.10; after python = \">=3.10,<4.0\" and poetry lock, install succeeds and 54 tests pass.",
             [["Python range", "supported Python", "python constraint", "python` constraint", "requires-python", "python` property", "python = "], ["numpy", "whole", "entire", "raise"]])
    L.lesson((c2, done2), "error",
             "`uv pip install` fails with \"No virtual environment found\" outside a venv; in a uv-managed project use `uv sync` (creates .venv from uv.lock with the dev group) and `uv run` instead.",
             "uv pip install -e . exits 2; uv sync creates .venv and uv run pytest passes.",
             [["No virtual environment", "uv pip"], ["uv sync"]])
    L.lesson((c3, done2), "error",
             "`uv sync --locked` in CI fails with \"The lockfile at `uv.lock` needs to be updated, but `--locked` was provided\" when pyproject.toml changed after the last `uv lock`; re-run `uv lock` and commit uv.lock.",
             "CI fails after pytest-cov was added post-lock; uv lock + commit makes the run green.",
             [["--locked"], ["uv lock", "needs to be updated", "stale"]])
    L.non_lesson((t3, qa), "uv --locked errors if uv.lock is out of date; --frozen uses it without checking.",
                 "Textbook answer to a side question; the reusable CI consequence is already the --locked lesson.")
    L.non_lesson((done1, done1), "The data-tools test suite has 54 tests.",
                 "A one-off count about this repository.")
    return s


def oa22_mysql_ops():
    """OpenAI chat without a system row (exec tool, text results): MySQL 8 index length, auth plugin, slow query."""
    s = OA("oa22_mysql_ops.jsonl", 3202, "2026-02-26T14:00:00")
    L = s.labels

    def ex(cmd, out, code=0, text=None):
        return s.run("exec", {"command": cmd}, f"$ {cmd}\n{out}\n[exit status: {code}]", text)

    my = "docker compose exec -T db mysql -uroot -proot shop"
    warn = "mysql: [Warning] Using a password on the command line interface can be insecure."
    t1 = s.user("migration 0042 fails on the MySQL 8 container (same version as prod): ERROR 1071. can you look? "
                "the db is in docker compose, root/root locally")
    c1, _ = ex(f"{my} < migrations/0042_pages_canonical_url.sql", f"{warn}\nERROR 1071 (42000) at line 4: Specified key "
               "was too long; max key length is 3072 bytes", 1)
    ex("cat migrations/0042_pages_canonical_url.sql", """\
-- 0042: canonical URL per page, must be unique
ALTER TABLE pages ADD COLUMN canonical_url VARCHAR(1024) NOT NULL DEFAULT '';

CREATE UNIQUE INDEX ux_pages_canonical_url ON pages (canonical_url);""")
    s.say("The table is `utf8mb4`, so MySQL budgets 4 bytes per character: `VARCHAR(1024)` × 4 = 4096 bytes, over "
          "InnoDB's 3072-byte index key limit. A prefix index can't enforce uniqueness of the whole URL, so I'd add a "
          "stored SHA-256 column and put the unique index on that. OK?")
    s.user("yes go with the hash column")
    ex("cat > migrations/0042_pages_canonical_url.sql <<'SQL'\n-- 0042: canonical URL per page, must be unique\n"
       "ALTER TABLE pages\n  ADD COLUMN canonical_url VARCHAR(1024) NOT NULL DEFAULT '',\n"
       "  ADD COLUMN canonical_url_hash BINARY(32) AS (UNHEX(SHA2(canonical_url, 256))) STORED;\n\n"
       "CREATE UNIQUE INDEX ux_pages_canonical_url_hash ON pages (canonical_url_hash);\nSQL", "")
    _, ok1 = ex(f"{my} -e 'source migrations/0042_pages_canonical_url.sql' && {my} -e \"UPDATE pages SET canonical_url="
                "'https://shop.example.test/a' WHERE id IN (1,2)\"", f"{warn}\n{warn}\nERROR 1062 (23000) at line 1: "
                "Duplicate entry '\\xA3\\x1F...' for key 'pages.ux_pages_canonical_url_hash'", 1)
    done1 = s.say("Migration 0042 applies now, and the unique index works: setting the same URL on two pages is "
                  "rejected with `ERROR 1062` (that failure was the intended check). The new column "
                  "`canonical_url_hash` is generated by MySQL, so the app doesn't write it.")

    t2 = s.user("next problem: the app container can't connect to that MySQL 8: OperationalError 2059, "
                "\"Authentication plugin 'caching_sha2_password' cannot be loaded\"")
    c2, _ = ex("docker compose logs app --tail 3", """\
app-1  |   File "/usr/local/lib/python3.9/site-packages/MySQLdb/connections.py", line 185, in __init__
app-1  |     super().__init__(*args, **kwargs2)
app-1  | MySQLdb.OperationalError: (2059, "Authentication plugin 'caching_sha2_password' cannot be loaded: /usr/lib/x86_64-linux-gnu/mariadb19/plugin/caching_sha2_password.so: cannot open shared object file: No such file or directory")""")
    s.say("MySQL 8 creates users with `caching_sha2_password` by default, and the app's client library can't load "
          "that plugin. The quickest fix is to switch the app user back to the old plugin:")
    rj, _ = ex(f"{my} -e \"ALTER USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY 'app-dev-only'\"",
               "(not run: the user stopped this command)", 130)
    corr = s.user("no, don't downgrade the auth plugin. mysql_native_password is deprecated in 8.0 and disabled by "
                  "default in 8.4, prod will move there. fix the client side")
    ex("grep -n FROM Dockerfile && docker compose exec app sh -c 'cat /etc/debian_version; dpkg -l | grep -i mariadb'",
       """\
1:FROM python:3.9-slim-buster
10.13
ii  libmariadb-dev       1:10.3.39-0+deb10u1  amd64  MariaDB Connector/C, development files
ii  libmariadb3:amd64    3.0.x                amd64  MariaDB Connector/C, client library""")
    s.say("Understood. The image is Debian 10 (buster), whose MariaDB Connector/C is 3.0 and doesn't ship the "
          "`caching_sha2_password` plugin (it looks for it under `mariadb19/plugin`). Newer Debian releases do. "
          "Moving the image to `python:3.11-slim-bookworm`:")
    ex("sed -i 's/^FROM python:3.9-slim-buster/FROM python:3.11-slim-bookworm/' Dockerfile && docker compose build app "
       "2>&1 | tail -2", " => => naming to docker.io/library/shop-app:latest\n => [app] resolving provenance for metadata file")
    _, ok2 = ex("docker compose up -d app && sleep 5 && docker compose exec app python -c \"import MySQLdb; "
                "c = MySQLdb.connect(host='db', user='app', password='app-dev-only', database='shop'); "
                "print(c.get_server_info())\"", "8.0.36")
    done2 = s.say("The app connects with the default `caching_sha2_password` plugin now (server 8.0.36). The only "
                  "change is the base image: Debian bookworm's client library supports the plugin. No server-side auth "
                  "change.")

    t3 = s.user("great. last one: this query takes ~2s in prod, make it fast: SELECT id, total FROM orders WHERE "
                "customer_id = ? AND created_at >= ? ORDER BY created_at DESC LIMIT 20")
    c3, _ = ex(f"{my} -t -e \"EXPLAIN SELECT id, total FROM orders WHERE customer_id = 4711 AND created_at >= "
               "'2025-09-01' ORDER BY created_at DESC LIMIT 20\"", f"""{warn}
+----+-------------+--------+------------+------+---------------+--------------+---------+-------+-------+----------+-----------------------------+
| id | select_type | table  | partitions | type | possible_keys | key          | key_len | ref   | rows  | filtered | Extra                       |
+----+-------------+--------+------------+------+---------------+--------------+---------+-------+-------+----------+-----------------------------+
|  1 | SIMPLE      | orders | NULL       | ref  | idx_customer  | idx_customer | 4       | const | 48210 |    33.33 | Using where; Using filesort |
+----+-------------+--------+------------+------+---------------+--------------+---------+-------+-------+----------+-----------------------------+""")
    s.say("It uses `idx_customer` (customer_id only), reads all ~48k rows of that customer, filters by date and sorts "
          "them (`Using filesort`) to return 20. A composite index with the equality column first and the range/sort "
          "column second serves the filter and the ORDER BY directly:")
    pref_call, _ = ex(f"{my} -e \"CREATE INDEX idx_customer_created ON orders (customer_id, created_at)\"", warn)
    pref = s.user("fine here, but for the prod script: on orders and the other big tables always write index changes "
                  "as ALTER TABLE ... ADD INDEX ..., ALGORITHM=INPLACE, LOCK=NONE, so it fails instead of locking the "
                  "table if it can't run online")
    _, ok3 = ex(f"{my} -t -e \"EXPLAIN SELECT id, total FROM orders WHERE customer_id = 4711 AND created_at >= "
                "'2025-09-01' ORDER BY created_at DESC LIMIT 20\" | sed -n '4p'; cat > migrations/0043_orders_customer_created.sql "
                "<<'SQL'\nALTER TABLE orders ADD INDEX idx_customer_created (customer_id, created_at), ALGORITHM=INPLACE, "
                "LOCK=NONE;\nSQL", "|  1 | SIMPLE      | orders | NULL       | range | idx_customer,idx_customer_created | "
                "idx_customer_created | 9       | NULL  |    37 |   100.00 | Using index condition; Backward index scan |")
    done3 = s.say("With `(customer_id, created_at)` the plan is a `range` scan on the new index reading 37 rows, with "
                  "no filesort (a backward index scan gives the DESC order). Locally the query went from 2.1 s to 4 ms. "
                  "The prod migration 0043 uses `ALTER TABLE ... ADD INDEX ..., ALGORITHM=INPLACE, LOCK=NONE` as you "
                  "asked.")

    t4 = s.user("thanks. out of curiosity, how many rows are in orders_archive locally?")
    c4, _ = ex(f"{my} -N -e 'SELECT COUNT(*) FROM orders_archive'", f"{warn}\n18204331")
    fact = s.say("18,204,331 rows in `orders_archive` (local copy).")

    L.task(t1, "Fix migration 0042 failing with ERROR 1071 (index key too long) on MySQL 8")
    L.task(t2, "Fix the app's MySQL 8 connection error 2059 (caching_sha2_password plugin cannot be loaded)")
    L.task(t3, "Speed up the orders query by customer and date (composite index)")
    L.task(t4, "Side question: row count of orders_archive", "side-task")
    L.lesson((c1, done1), "error",
             "MySQL \"ERROR 1071: Specified key was too long; max key length is 3072 bytes\" for a unique index on a long utf8mb4 VARCHAR (4 bytes per character); index a stored generated hash column such as UNHEX(SHA2(col, 256)) instead, since a prefix index can't enforce uniqueness of the full value.",
             "VARCHAR(1024) utf8mb4 = 4096 bytes; with the BINARY(32) generated hash and a unique index on it the migration applies and duplicates are rejected with 1062.",
             [["3072", "key was too long", "1071"], ["hash", "SHA2"]])
    L.lesson((rj, corr), "correction",
             "Don't fix MySQL 8 client auth errors by switching the user to mysql_native_password: it is deprecated in 8.0 and disabled by default in 8.4; fix the client side instead.",
             "The agent's ALTER USER ... mysql_native_password command is stopped and the user explains why.",
             [["mysql_native_password"], ["deprecated", "don't", "do not", "client side", "client library"]])
    L.lesson((c2, done2), "error",
             "\"Authentication plugin 'caching_sha2_password' cannot be loaded ... mariadb19/plugin\" comes from the old MariaDB Connector/C in Debian buster images; move the image to a newer Debian (e.g. python:3.11-slim-bookworm), whose client library supports the plugin.",
             "dpkg shows buster's libmariadb; after switching the base image to bookworm the app connects to 8.0.36.",
             [["caching_sha2_password"], ["bookworm", "buster", "newer", "Connector/C", "base image"]])
    L.lesson((c3, done3), "pattern",
             "For `WHERE a = ? AND b >= ? ORDER BY b DESC LIMIT n` in MySQL, a composite index on (a, b) (equality column first, range/sort column second) replaces a ref scan plus filesort with a short range scan; check with EXPLAIN (rows, no \"Using filesort\").",
             "EXPLAIN before: ref on idx_customer, 48210 rows, Using filesort; after: range on idx_customer_created, 37 rows, backward index scan; 2.1 s -> 4 ms.",
             [["composite", "(customer_id, created_at)", "multi-column"], ["filesort", "equality", "EXPLAIN"]])
    L.lesson((pref_call, pref), "preference",
             "For this shop database, index changes on orders and the other big tables are written as `ALTER TABLE ... ADD INDEX ..., ALGORITHM=INPLACE, LOCK=NONE` so they fail rather than lock the table.",
             "Repository/user rule stated for the prod migration scripts; migration 0043 follows it.",
             [["LOCK=NONE", "ALGORITHM=INPLACE"], ["ALTER TABLE", "big tables", "index"]])
    L.non_lesson((c4, fact), "orders_archive has about 18.2 million rows locally.",
                 "A one-off data fact asked out of curiosity.")
    L.non_lesson((done1, done1), "Setting the same canonical URL on two pages fails with ERROR 1062.",
                 "The intended effect of the new unique index (a check), not a problem to remember.")
    return s


def oa23_kafka_ops():
    """OpenAI chat (terminal tool): consumer poll timeouts, topic replication on one broker, resetting offsets."""
    s = OA("oa23_kafka_ops.jsonl", 3303, "2026-02-27T08:30:00")
    L = s.labels

    def term(cmd, out, code=0, text=None):
        return s.run("terminal", {"cmd": cmd, "timeout_s": 120}, f"exit_code={code}\n---\n{out}", text)

    s.system("You are an operations assistant with shell access (tool: terminal) to the dev laptop, which has "
             "kubectl access to the staging cluster and a local single-broker Kafka in docker. Be careful with "
             "production-like systems.")
    t1 = s.user("""billing-consumer in staging keeps rebalancing and the lag on `invoices` only grows. log excerpt:

[Consumer clientId=billing-consumer-1, groupId=billing] Member billing-consumer-1-3f2a6c1e-7d1b-4b8e-9a64-0c5f2e71d9a3 sending LeaveGroup request to coordinator kafka-1.staging.example.internal:9092 (id: 2147483646 rack: null) due to consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records.""")
    term("grep -n -A6 'consumer:' billing/src/main/resources/application-staging.yml", """\
12:  kafka:
13:    consumer:
14:      group-id: billing
15:      max-poll-records: 500
16:      properties:
17:        max.poll.interval.ms: 300000""")
    term("kubectl -n billing logs deploy/billing-consumer --since=30m | grep -o 'processed invoice in [0-9]*ms' | "
         "awk '{s+=$4; n++} END {print n, s/n}'", "1932 1184.6")
    s.say("Each record takes ~1.2 s (the tax-service call), and a poll returns up to 500 records, so one batch takes "
          "~10 minutes. That's longer than `max.poll.interval.ms` (5 min), so the broker considers the consumer dead, "
          "it leaves the group, everything rebalances, and the uncommitted batch is processed again. Reducing the batch "
          "to 50 records keeps each poll loop at about a minute, well inside the interval.")
    term("sed -i 's/max-poll-records: 500/max-poll-records: 50/' billing/src/main/resources/application-staging.yml && "
         "git commit -qam 'billing: max-poll-records 50 in staging (poll timeout)' && git push -q && "
         "kubectl -n billing rollout status deploy/billing-consumer --timeout=10m",
         "Waiting for deployment \"billing-consumer\" rollout to finish: 1 of 2 updated replicas are available...\n"
         "deployment \"billing-consumer\" successfully rolled out")
    _, ok1 = term("sleep 600; kubectl -n kafka exec kafka-1 -- kafka-consumer-groups.sh --bootstrap-server localhost:9092 "
                  "--describe --group billing | awk 'NR>1 {lag+=$6} END {print \"total lag\", lag}'; kubectl -n billing logs "
                  "deploy/billing-consumer --since=10m | grep -c 'poll timeout has expired'", "total lag 4410\n0")
    done1 = s.say("Fixed: since the rollout there have been no poll timeouts in 10 minutes and the total lag dropped "
                  "(it was growing before; now 4,410 and falling). The change is `max-poll-records: 50` for staging.")

    t2 = s.user("thanks. different thing: create an invoices-dlq topic on my local kafka, 3 partitions")
    c2, _ = term("docker exec kafka kafka-topics.sh --bootstrap-server localhost:9092 --create --topic invoices-dlq "
                 "--partitions 3 --replication-factor 3", """\
Error while executing topic command : Replication factor: 3 larger than available brokers: 1.
[2026-02-27 09:02:11,481] ERROR org.apache.kafka.common.errors.InvalidReplicationFactorException: Replication factor: 3 larger than available brokers: 1.
 (kafka.admin.TopicCommand$)""", 1)
    _, ok2 = term("docker exec kafka kafka-topics.sh --bootstrap-server localhost:9092 --create --topic invoices-dlq "
                  "--partitions 3 --replication-factor 1 && docker exec kafka kafka-topics.sh --bootstrap-server "
                  "localhost:9092 --describe --topic invoices-dlq | head -1", """\
Created topic invoices-dlq.
Topic: invoices-dlq	TopicId: 2xk0uWQ9S4mZr7vTqLh3bA	PartitionCount: 3	ReplicationFactor: 1	Configs: """)
    done2 = s.say("Created `invoices-dlq` with 3 partitions. Your local Kafka is a single broker, so the replication "
                  "factor can be at most 1; I copied 3 from the staging script, which doesn't work here.")

    t3 = s.user("ok. now in staging: reset the billing group's offsets on invoices to yesterday 00:00 UTC so the "
                "failed invoices get reprocessed")
    kcg = ("kubectl -n kafka exec kafka-1 -- kafka-consumer-groups.sh --bootstrap-server localhost:9092 --group billing "
           "--topic invoices --reset-offsets --to-datetime 2026-02-26T00:00:00.000")
    c3, _ = term(kcg, """\
WARN: No action will be performed as the --execute option is missing. In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.

GROUP                          TOPIC                          PARTITION  NEW-OFFSET
billing                        invoices                       0          1820331
billing                        invoices                       1          1817954
billing                        invoices                       2          1822610""")
    s.say("Without `--execute` the command only prints the plan (a dry run). The new offsets look right, so "
          "executing it:")
    c4, _ = term(kcg + " --execute", """\
Error: Assignments can only be reset if the group 'billing' is inactive, but the current state is Stable.""", 1)
    s.say("Offsets can only be reset while the group has no active members, so the two billing-consumer pods have "
          "to be stopped first. That pauses invoice processing in staging for a minute. Shall I scale the deployment "
          "to 0, reset, and scale back to 2?")
    s.user("yes, do it")
    _, ok3 = term("kubectl -n billing scale deploy/billing-consumer --replicas=0 && sleep 20 && " + kcg + " --execute && "
                  "kubectl -n billing scale deploy/billing-consumer --replicas=2", """\
deployment.apps/billing-consumer scaled

GROUP                          TOPIC                          PARTITION  NEW-OFFSET
billing                        invoices                       0          1820331
billing                        invoices                       1          1817954
billing                        invoices                       2          1822610
deployment.apps/billing-consumer scaled""")
    done3 = s.say("Done: the billing group's offsets on `invoices` are reset to 2026-02-26 00:00 UTC and the consumer "
                  "is back at 2 replicas, reprocessing from there.")

    t4 = s.user("is it safe to go from 6 to 12 partitions on invoices later?")
    qa = s.say("Mostly, but adding partitions changes which partition a given key maps to (hash mod partition count), "
               "so for a while new records for an existing invoice key can land on a different partition than older "
               "ones, and per-key ordering across that switch isn't guaranteed. If billing relies on per-invoice "
               "ordering, do it when the topic is drained or pause producers briefly. Partitions can't be reduced again.")

    L.task(t1, "Stop the billing consumer's rebalance loop (poll timeout, max.poll.records)")
    L.task(t2, "Create the invoices-dlq topic on the local single-broker Kafka")
    L.task(t3, "Reset the billing group's offsets on invoices to yesterday 00:00 UTC in staging")
    L.task(t4, "Side question: is increasing invoices partitions from 6 to 12 safe", "side-task")
    L.lesson((t1, done1), "error",
             "A Kafka consumer that keeps rebalancing with \"consumer poll timeout has expired ... longer than the configured max.poll.interval.ms\" spends too long processing one poll batch; reduce max.poll.records (or raise max.poll.interval.ms) so a batch finishes within the interval.",
             "500 records x ~1.2 s per record exceeded the 5-minute interval; with max-poll-records 50 no poll timeouts in 10 minutes and the lag falls.",
             [["max.poll.records", "max-poll-records", "max.poll.interval.ms"], ["poll timeout", "rebalanc", "batch"]])
    L.lesson((c2, done2), "error",
             "On a single-broker dev Kafka, `kafka-topics.sh --create --replication-factor 3` fails with InvalidReplicationFactorException (\"Replication factor: 3 larger than available brokers: 1\"); use --replication-factor 1 locally.",
             "The create fails; the same command with --replication-factor 1 creates the topic.",
             [["replication factor", "replication-factor"], ["available brokers", "single broker", "single-broker", "one broker"]])
    L.lesson((c3, done3), "pattern",
             "`kafka-consumer-groups.sh --reset-offsets` without `--execute` only prints the planned offsets (a dry run); review them, then repeat with --execute.",
             "The first call prints the WARN and the NEW-OFFSET table; the later --execute run applies exactly those offsets.",
             [["--execute"], ["dry run", "dry-run", "only prints", "no action"]])
    L.lesson((c4, done3), "error",
             "Consumer group offsets can only be reset when the group is inactive (\"Assignments can only be reset if the group 'billing' is inactive, but the current state is Stable\"); stop or scale the consumers to 0, reset, then start them again.",
             "--execute fails while the group is Stable; after scaling billing-consumer to 0 the reset succeeds and the deployment is scaled back to 2.",
             [["inactive", "state is Stable"], ["scale", "stop"]])
    L.non_lesson((t4, qa), "Adding partitions to a Kafka topic changes the key-to-partition mapping, so per-key ordering is not guaranteed across the change.",
                 "Textbook answer to a side question; nothing was done.")
    L.non_lesson((t3, done3), "The billing group on invoices was reset to offsets 1820331/1817954/1822610.",
                 "One-off values of this reset.")
    return s


# =============================================================================================
# Codex CLI rollouts
# =============================================================================================

def cx21_alembic_async():
    """Codex rollout: an empty autogenerate (create_all), SQLite ALTER (batch mode), MissingGreenlet, alembic check."""
    s = CX("cx21_alembic_async.jsonl", 4101, "2026-03-02T09:10:00", "/home/dev/src/tasksvc")
    L = s.labels
    t1 = s.user("alembic revision --autogenerate gives me an empty migration for the new `archived_at` column on "
                "Project (and `name` became NOT NULL in the model). Fix that, generate the migration and apply it to the "
                "local sqlite dev.db (the data there is throwaway), then run the test suite.")
    items = ["Find why autogenerate produces an empty migration", "Generate and apply the migration to dev.db",
             "Run the test suite"]
    s.think("Planning", "Three steps: find out why autogenerate sees no difference, generate and apply, run tests.")
    s.plan(steps(items, 0, 0))
    c1, _ = s.shell("alembic revision --autogenerate -m 'project archived_at' && sed -n '18,24p' "
                    "migrations/versions/*_project_archived_at.py", """\
INFO  [alembic.runtime.migration] Context impl SQLiteImpl.
INFO  [alembic.runtime.migration] Will assume non-transactional DDL.
  Generating /home/dev/src/tasksvc/migrations/versions/5b2e8c41d7a9_project_archived_at.py ...  done

def upgrade() -> None:
    # ### commands auto generated by Alembic - please adjust! ###
    pass
    # ### end Alembic commands ###
""")
    s.shell("sqlite3 dev.db '.schema projects' 'select version_num from alembic_version'; grep -rn create_all src/", """\
CREATE TABLE projects (
	id INTEGER NOT NULL,
	name VARCHAR NOT NULL,
	owner_id INTEGER NOT NULL,
	archived_at DATETIME,
	PRIMARY KEY (id),
	FOREIGN KEY(owner_id) REFERENCES users (id)
);
9d41c0e2b311
src/tasksvc/app.py:31:        await conn.run_sync(Base.metadata.create_all)
""")
    s.think("Why the diff is empty",
            "dev.db already has archived_at and NOT NULL name, though alembic_version is the old head. The app's "
            "startup create_all built the tables from the models, and autogenerate compares models to that DB.")
    s.say("Found it: the app's startup hook runs `Base.metadata.create_all`, which created `projects` in dev.db straight "
          "from the current models. Autogenerate compares the models with the *database*, so it sees no difference "
          "(while `alembic_version` still says the old head). With Alembic managing the schema, `create_all` shouldn't "
          "run at startup. I'll remove it and generate against a database built only by migrations.")
    s.patch("""\
*** Begin Patch
*** Update File: src/tasksvc/app.py
@@ async def lifespan(app: FastAPI):
-    async with engine.begin() as conn:
-        await conn.run_sync(Base.metadata.create_all)
     yield
*** End Patch
""", [("M", "src/tasksvc/app.py")])
    g1, _ = s.shell("rm migrations/versions/5b2e8c41d7a9_project_archived_at.py dev.db && alembic upgrade head && "
                     "alembic revision --autogenerate -m 'project archived_at'", """\
INFO  [alembic.runtime.migration] Context impl SQLiteImpl.
INFO  [alembic.runtime.migration] Will assume non-transactional DDL.
INFO  [alembic.runtime.migration] Running upgrade  -> 1a7f3c9e2b10, initial
INFO  [alembic.runtime.migration] Running upgrade 1a7f3c9e2b10 -> 9d41c0e2b311, tasks due_at
INFO  [alembic.autogenerate.compare] Detected added column 'projects.archived_at'
INFO  [alembic.autogenerate.compare] Detected NOT NULL on column 'projects.name'
  Generating /home/dev/src/tasksvc/migrations/versions/c3d9a0e6f412_project_archived_at.py ...  done
""")
    n2 = s.say("Autogenerate now detects both changes. Step 1 done; next, applying the migration to dev.db.")
    n2b, _ = s.plan(steps(items, 1, 1))
    c2, _ = s.shell_json("alembic upgrade head", """\
INFO  [alembic.runtime.migration] Context impl SQLiteImpl.
INFO  [alembic.runtime.migration] Will assume non-transactional DDL.
INFO  [alembic.runtime.migration] Running upgrade 9d41c0e2b311 -> c3d9a0e6f412, project archived_at
Traceback (most recent call last):
  File "/home/dev/src/tasksvc/.venv/lib/python3.12/site-packages/sqlalchemy/engine/base.py", line 1967, in _exec_single_context
    self.dialect.do_execute(
  File "/home/dev/src/tasksvc/.venv/lib/python3.12/site-packages/sqlalchemy/engine/default.py", line 924, in do_execute
    cursor.execute(statement, parameters)
sqlite3.OperationalError: near "ALTER": syntax error

The above exception was the direct cause of the following exception:

sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) near "ALTER": syntax error
[SQL: ALTER TABLE projects ALTER COLUMN name SET NOT NULL]
(Background on this error at: https://sqlalche.me/e/20/e3q8)
""", code=1)
    s.think("SQLite ALTER", "SQLite has no ALTER COLUMN. Alembic's batch mode recreates the table (copy and move); "
                            "render_as_batch=True makes autogenerate emit batch_alter_table.")
    s.say("SQLite has no `ALTER COLUMN`, so changing `name` to NOT NULL can't be done in place. Alembic's batch mode "
          "handles this by recreating the table and copying the rows; with `render_as_batch=True` in `env.py`, "
          "autogenerate writes `batch_alter_table` blocks. The add-column part already ran before the failure "
          "(SQLite DDL isn't transactional here), so I'll rebuild the throwaway dev.db too.")
    s.patch("""\
*** Begin Patch
*** Update File: migrations/env.py
@@ def do_run_migrations(connection: Connection) -> None:
-    context.configure(connection=connection, target_metadata=target_metadata)
+    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
*** End Patch
""", [("M", "migrations/env.py")])
    _, ok2 = s.shell("rm dev.db migrations/versions/c3d9a0e6f412_project_archived_at.py && alembic -q upgrade head && "
                     "alembic revision --autogenerate -m 'project archived_at' >/dev/null && grep -n batch_alter_table "
                     "migrations/versions/*_project_archived_at.py && alembic upgrade head 2>&1 | tail -1 && "
                     "sqlite3 dev.db 'select version_num from alembic_version'", """\
21:    with op.batch_alter_table('projects', schema=None) as batch_op:
36:    with op.batch_alter_table('projects', schema=None) as batch_op:
INFO  [alembic.runtime.migration] Running upgrade 9d41c0e2b311 -> 7e0b5d2a9c83, project archived_at
7e0b5d2a9c83
""")
    n3 = s.say("dev.db is at the new head `7e0b5d2a9c83`. Next: the test suite.")
    n3b, _ = s.plan(steps(items, 2, 2))
    c3, _ = s.shell("pytest -q 2>&1 | tail -15", """\
        async with session_factory() as session:
            result = await session.execute(select(Project).order_by(Project.id))
            projects = result.scalars().all()
>           return [{"id": p.id, "name": p.name, "owner": p.owner.name} for p in projects]

src/tasksvc/api/projects.py:27:
E   sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called; can't call await_only() here. Was IO attempted in an unexpected place? (Background on this error at: https://sqlalche.me/e/20/xd2s)
=========================== short test summary info ============================
FAILED tests/test_api.py::test_list_projects_includes_owner - sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called; can't call await_only() here. Was IO attempted in an unexpected place? (Background on this error at: https://sqlalche.me/e/20/xd2s)
1 failed, 41 passed in 2.88s
""")
    s.shell("git log -1 --format='%h %s' -- src/tasksvc/api/projects.py tests/test_api.py; grep -n create_all tests/conftest.py",
            "e7a10c2 api: include owner name in project list\ntests/conftest.py:18:        await conn.run_sync(Base.metadata.create_all)\n")
    s.say("This failure isn't from the schema change: the test fixture still builds its own tables. The recent "
          "\"include owner name\" commit reads `p.owner` in the response. With an `AsyncSession`, touching a lazy-loaded "
          "relationship triggers implicit IO outside `await`, which is exactly `MissingGreenlet`. The relationship has "
          "to be loaded eagerly in the query:")
    s.patch("""\
*** Begin Patch
*** Update File: src/tasksvc/api/projects.py
@@
-        result = await session.execute(select(Project).order_by(Project.id))
+        result = await session.execute(
+            select(Project).options(selectinload(Project.owner)).order_by(Project.id)
+        )
*** End Patch
""", [("M", "src/tasksvc/api/projects.py")])
    _, ok3 = s.shell("pytest -q 2>&1 | tail -1", "42 passed in 2.71s\n")
    s.plan(steps(items, 3, -1))
    done1 = s.say("All done:\n\n1. **Empty autogenerate:** the app ran `Base.metadata.create_all` at startup, so dev.db "
                  "already matched the models. Removed it; the migration is `7e0b5d2a9c83_project_archived_at.py`.\n"
                  "2. **Applying:** SQLite can't `ALTER COLUMN`; `env.py` now uses `render_as_batch=True`, so the "
                  "migration uses `batch_alter_table`. dev.db was rebuilt from migrations.\n3. **Tests:** one failure "
                  "from the recent owner-name change (`MissingGreenlet` from a lazy load in async code); the query now "
                  "uses `selectinload(Project.owner)`. 42 passed.")
    s.end_turn()

    t2 = s.user("nice. can we make CI fail when someone changes a model without adding a migration?")
    s.shell("alembic --version && alembic check", "alembic 1.13.1\nINFO  [alembic.runtime.migration] Context impl "
            "SQLiteImpl.\nINFO  [alembic.runtime.migration] Will assume non-transactional DDL.\nNo new upgrade "
            "operations detected.\n")
    s.patch("""\
*** Begin Patch
*** Update File: src/tasksvc/models.py
@@ class Project(Base):
     archived_at: Mapped[datetime | None]
+    color: Mapped[str | None]
*** End Patch
""", [("M", "src/tasksvc/models.py")])
    c4, _ = s.shell("alembic check", """\
INFO  [alembic.runtime.migration] Context impl SQLiteImpl.
INFO  [alembic.runtime.migration] Will assume non-transactional DDL.
INFO  [alembic.autogenerate.compare] Detected added column 'projects.color'
ERROR [alembic.util.messaging] New upgrade operations detected: [('add_column', None, 'projects', Column('color', String(), table=<projects>))]
  FAILED: New upgrade operations detected: [('add_column', None, 'projects', Column('color', String(), table=<projects>))]
""", code=255)
    s.patch("""\
*** Begin Patch
*** Update File: src/tasksvc/models.py
@@ class Project(Base):
     archived_at: Mapped[datetime | None]
-    color: Mapped[str | None]
*** Update File: Makefile
@@
+migrate-check:  ## fail if the models have changes without a migration
+\trm -f /tmp/migrate-check.db
+\tDATABASE_URL=sqlite:////tmp/migrate-check.db alembic upgrade head
+\tDATABASE_URL=sqlite:////tmp/migrate-check.db alembic check
*** Update File: .github/workflows/ci.yml
@@
       - run: pytest -q
+      - run: make migrate-check
*** End Patch
""", [("M", "src/tasksvc/models.py"), ("M", "Makefile"), ("M", ".github/workflows/ci.yml")])
    _, ok4 = s.shell("make migrate-check 2>&1 | tail -1", "No new upgrade operations detected.\n")
    done2 = s.say("Added `make migrate-check`, which builds a fresh SQLite database from the migrations and runs "
                  "`alembic check`. It exits non-zero when autogenerate would produce operations (I checked with a "
                  "temporary `color` column, then removed it). CI runs it after the tests.")
    s.end_turn()

    L.task(t1, "Fix the empty alembic autogenerate for Project.archived_at (create_all at startup)")
    L.task(n2, "Generate and apply the migration to the local SQLite dev.db (batch mode)", "next-subtask", (n2, n2b))
    L.task(n3, "Run the test suite (MissingGreenlet from a lazy load in async code)", "next-subtask", (n3, n3b))
    L.task(t2, "Make CI fail when models change without a migration (alembic check)")
    L.lesson((c1, n2), "error",
             "An empty Alembic autogenerate migration although the models changed: autogenerate compares the models with the live database, and an app that runs `Base.metadata.create_all` at startup has already applied the change; remove create_all and generate against a database built only by `alembic upgrade head`.",
             "dev.db already has archived_at while alembic_version is the old head; app.py calls create_all; after removing it and rebuilding dev.db from migrations, autogenerate detects both changes.",
             [["create_all"], ["autogenerate", "empty migration"]])
    L.lesson((c2, done1), "error",
             "SQLite cannot ALTER COLUMN (`near \"ALTER\": syntax error` for `ALTER TABLE ... ALTER COLUMN ... SET NOT NULL`); configure Alembic with `render_as_batch=True` so autogenerate emits batch_alter_table, which recreates the table.",
             "alembic upgrade head fails on the NOT NULL change; with render_as_batch the regenerated migration uses batch_alter_table and applies.",
             [["render_as_batch", "batch_alter_table", "batch mode"], ["SQLite", "ALTER COLUMN"]])
    L.lesson((c3, done1), "error",
             "`sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called` in async SQLAlchemy code comes from lazy-loading a relationship (e.g. `p.owner`) outside an await; load it eagerly with `.options(selectinload(Model.rel))`.",
             "test_list_projects_includes_owner fails at p.owner.name; with selectinload(Project.owner) 42 tests pass.",
             [["MissingGreenlet", "greenlet_spawn"], ["selectinload", "eager"]])
    L.lesson((c4, done2), "pattern",
             "`alembic check` (Alembic 1.9+) exits non-zero when autogenerate would produce new operations; run it in CI against a fresh database upgraded to head to catch model changes without a migration.",
             "It reports no operations on the clean tree and fails (exit 255) with a temporary column; a make migrate-check target runs it in CI.",
             [["alembic check"], ["CI", "migration", "non-zero"]])
    L.non_lesson((g1, n2), "The previous Alembic head of tasksvc was 9d41c0e2b311.",
                 "A one-off revision id.")
    L.non_lesson((t1, t1), "The local dev.db data is throwaway.",
                 "A one-off fact the user gave for this task.")
    return s


def cx22_dotnet_nuget():
    """Codex rollout: NETSDK1045 (global.json), NU1100 (package source mapping), nullable with required members."""
    s = CX("cx22_dotnet_nuget.jsonl", 4202, "2026-03-04T15:20:00", "/home/dev/src/billing-api", cli="0.47.0")
    L = s.labels
    t1 = s.user("dotnet build fails on the new CI runner image with NETSDK1045. The devcontainer has the same image. "
                "Can you fix it?")
    c1, _ = s.shell_json("dotnet build -c Release 2>&1 | tail -6", """\
/usr/share/dotnet/sdk/7.0.410/Sdks/Microsoft.NET.Sdk/targets/Microsoft.NET.TargetFrameworkInference.targets(160,5): error NETSDK1045: The current .NET SDK does not support targeting .NET 8.0.  Either target .NET 7.0 or lower, or use a version of the .NET SDK that supports .NET 8.0. Download the .NET SDK from https://aka.ms/dotnet/download [/home/dev/src/billing-api/src/Billing.Api/Billing.Api.csproj]

Build FAILED.
    0 Warning(s)
    1 Error(s)
""")
    s.shell_json("dotnet --list-sdks; cat global.json; grep -rh '<TargetFramework>' src tests; "
                 "grep -n -A2 setup-dotnet .github/workflows/build.yml", """\
7.0.410 [/usr/share/dotnet/sdk]
{
  "sdk": {
    "version": "7.0.100",
    "rollForward": "latestFeature"
  }
}
    <TargetFramework>net8.0</TargetFramework>
    <TargetFramework>net8.0</TargetFramework>
14:      - uses: actions/setup-dotnet@v4
15-        with:
16-          dotnet-version: 7.0.x
""")
    s.think("SDK vs target", "Projects target net8.0 but global.json and the workflow still pin the 7.0 SDK. The tail "
                             "pipe hid the exit code (build failed).")
    s.say("The projects target `net8.0` (since the upgrade PR), but `global.json` and the workflow still select the "
          ".NET 7 SDK, and a 7.0 SDK can't build for .NET 8. (The build exit code was hidden by `| tail`, but it "
          "says `Build FAILED`.) I'll pin the 8.0 SDK band in `global.json` and make CI install whatever `global.json` "
          "says, so there's one place to change.")
    s.patch("""\
*** Begin Patch
*** Update File: global.json
@@
-    "version": "7.0.100",
+    "version": "8.0.100",
*** Update File: .github/workflows/build.yml
@@
       - uses: actions/setup-dotnet@v4
         with:
-          dotnet-version: 7.0.x
+          global-json-file: global.json
*** End Patch
""", [("M", "global.json"), ("M", ".github/workflows/build.yml")])
    s.shell("curl -sSL https://dot.net/v1/dotnet-install.sh -o /tmp/dotnet-install.sh && bash /tmp/dotnet-install.sh "
            "--jsonfile global.json --install-dir /usr/share/dotnet 2>&1 | tail -2", """\
dotnet-install: Installed version is 8.0.404
dotnet-install: Installation finished successfully.
""", secs=41.2)
    _, ok1 = s.shell("dotnet build -c Release 2>&1 | tail -4; echo \"exit=${PIPESTATUS[0]}\"", """\
Build succeeded.
    0 Warning(s)
    0 Error(s)

exit=0
""")
    s.shell("git commit -qam 'build: .NET 8 SDK via global.json, CI reads global.json' && git push -q && gh run watch "
            "--exit-status $(gh run list --limit 1 --json databaseId -q '.[0].databaseId') | tail -1",
            "✓ Run build (8312077431) completed with 'success'\n")
    done1 = s.say("Fixed and pushed; the CI run is green. `global.json` now pins SDK `8.0.100` with "
                  "`rollForward: latestFeature` (8.0.404 got installed), and `setup-dotnet` uses `global-json-file: "
                  "global.json` instead of a hard-coded `7.0.x`.")
    s.end_turn()

    t2 = s.user("next: restore fails since I added Example.Common 2.1.0 from our internal feed. NU1100")
    c2, _ = s.shell("dotnet restore 2>&1 | grep -E 'error|Restored'", """\
/home/dev/src/billing-api/src/Billing.Api/Billing.Api.csproj : error NU1100: Unable to resolve 'Example.Common (>= 2.1.0)' for 'net8.0'. PackageSourceMapping is enabled, the following source(s) were not considered: internal.
""")
    s.shell("cat nuget.config", """\
<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <packageSources>
    <clear />
    <add key="nuget.org" value="https://api.nuget.org/v3/index.json" />
    <add key="internal" value="https://nuget.example.internal/v3/index.json" />
  </packageSources>
  <packageSourceMapping>
    <packageSource key="nuget.org">
      <package pattern="*" />
    </packageSource>
    <packageSource key="internal">
      <package pattern="Example.Internal.*" />
    </packageSource>
  </packageSourceMapping>
</configuration>
""")
    s.say("Package source mapping is on: every package ID is only looked up in the sources whose patterns match it. "
          "`Example.Common` matches only `*` (nuget.org), so the internal feed is never asked. The fix is a mapping "
          "entry for it under `internal`; the most specific pattern wins. Should I map just `Example.Common` or the "
          "whole `Example.*` prefix?")
    s.end_turn()
    s.user("just Example.Common, there are public Example.* packages on nuget.org that we use too")
    s.patch("""\
*** Begin Patch
*** Update File: nuget.config
@@
     <packageSource key="internal">
       <package pattern="Example.Internal.*" />
+      <package pattern="Example.Common" />
     </packageSource>
*** End Patch
""", [("M", "nuget.config")])
    _, ok2 = s.shell("dotnet restore 2>&1 | grep -E 'error|Restored'", """\
  Restored /home/dev/src/billing-api/src/Billing.Api/Billing.Api.csproj (in 2.31 sec).
  Restored /home/dev/src/billing-api/tests/Billing.Api.Tests/Billing.Api.Tests.csproj (in 2.33 sec).
""")
    done2 = s.say("Restore works: `Example.Common` is now mapped to the `internal` source, and everything else still "
                  "comes from nuget.org.")
    s.end_turn()

    t3 = s.user("good. now turn on nullable reference types in Billing.Api with warnings as errors, and fix whatever "
                "comes up")
    s.patch("""\
*** Begin Patch
*** Update File: src/Billing.Api/Billing.Api.csproj
@@
     <TargetFramework>net8.0</TargetFramework>
+    <Nullable>enable</Nullable>
+    <TreatWarningsAsErrors>true</TreatWarningsAsErrors>
*** End Patch
""", [("M", "src/Billing.Api/Billing.Api.csproj")])
    c3, _ = s.shell("dotnet build 2>&1 | grep -E 'error' | sed 's| \\[/home.*||' | sort -u", """\
/home/dev/src/billing-api/src/Billing.Api/Contracts/CustomerDto.cs(5,19): error CS8618: Non-nullable property 'Name' must contain a non-null value when exiting constructor. Consider adding the 'required' modifier or declaring the property as nullable.
/home/dev/src/billing-api/src/Billing.Api/Contracts/CustomerDto.cs(6,19): error CS8618: Non-nullable property 'Email' must contain a non-null value when exiting constructor. Consider adding the 'required' modifier or declaring the property as nullable.
/home/dev/src/billing-api/src/Billing.Api/Contracts/InvoiceDto.cs(7,19): error CS8618: Non-nullable property 'Number' must contain a non-null value when exiting constructor. Consider adding the 'required' modifier or declaring the property as nullable.
""")
    s.say("All three are DTO properties that are always set by whoever creates the object (JSON or an initializer). "
          "Making them `required` states that, and System.Text.Json in .NET 8 enforces `required` when "
          "deserialising, so it's better than `= null!` or making them nullable.")
    s.patch("""\
*** Begin Patch
*** Update File: src/Billing.Api/Contracts/CustomerDto.cs
@@
-    public string Name { get; init; }
-    public string Email { get; init; }
+    public required string Name { get; init; }
+    public required string Email { get; init; }
*** Update File: src/Billing.Api/Contracts/InvoiceDto.cs
@@
-    public string Number { get; init; }
+    public required string Number { get; init; }
*** End Patch
""", [("M", "src/Billing.Api/Contracts/CustomerDto.cs"), ("M", "src/Billing.Api/Contracts/InvoiceDto.cs")])
    _, f4 = s.shell("dotnet build 2>&1 | grep -E 'error' | sed 's| \\[/home.*||' | sort -u", """\
/home/dev/src/billing-api/tests/Billing.Api.Tests/CustomerEndpointTests.cs(41,24): error CS9035: Required member 'CustomerDto.Email' must be set in the object initializer or attribute constructor.
""")
    s.say("As expected, `required` moves the check to the callers: one test builds a `CustomerDto` without `Email`. "
          "Setting it there:")
    s.patch("""\
*** Begin Patch
*** Update File: tests/Billing.Api.Tests/CustomerEndpointTests.cs
@@
-        var dto = new CustomerDto { Name = "ACME" };
+        var dto = new CustomerDto { Name = "ACME", Email = "billing@example.test" };
*** End Patch
""", [("M", "tests/Billing.Api.Tests/CustomerEndpointTests.cs")])
    _, ok3 = s.shell("dotnet build -c Release 2>&1 | grep -cE 'error|warning'; dotnet test 2>&1 | tail -1", """\
0
Passed!  - Failed:     0, Passed:    63, Skipped:     0, Total:    63, Duration: 4 s - Billing.Api.Tests.dll (net8.0)
""")
    done3 = s.say("Nullable is on with warnings as errors. The build has no warnings, and all 63 tests pass. Changes: "
                  "`required` on `CustomerDto.Name/Email` and `InvoiceDto.Number`, plus one test that now sets "
                  "`Email`.")
    s.end_turn()

    t4 = s.user("what does rollForward latestFeature in global.json actually do?")
    qa = s.say("With `\"version\": \"8.0.100\"` and `latestFeature`, the host uses the newest installed SDK with the "
               "same major.minor (8.0) and a feature band of 100 or higher (8.0.1xx, 2xx, 3xx, 4xx...), so 8.0.404 "
               "qualifies; it never rolls forward to 9.0. If no matching SDK is installed, commands fail with a "
               "message naming the requested version.")
    s.end_turn()

    L.task(t1, "Fix NETSDK1045 on the new CI runner image (.NET 8 projects, global.json pinned the 7.0 SDK)")
    L.task(t2, "Fix NU1100 restoring Example.Common from the internal feed (package source mapping)")
    L.task(t3, "Enable nullable reference types with warnings as errors in Billing.Api and fix the errors")
    L.task(t4, "Side question: what rollForward latestFeature does", "side-task")
    L.lesson((c1, done1), "error",
             "NETSDK1045 \"The current .NET SDK does not support targeting .NET 8.0\" after retargeting to net8.0: global.json (and CI's setup-dotnet) still select the 7.0 SDK; pin an 8.0 SDK band in global.json and let setup-dotnet read it with `global-json-file: global.json`.",
             "dotnet --list-sdks shows only 7.0.410 and global.json says 7.0.100; after the global.json change, installing 8.0.404 and global-json-file in the workflow, the build and CI succeed.",
             [["NETSDK1045"], ["global.json", "global-json-file"]])
    L.lesson((c2, done2), "error",
             "NuGet NU1100 \"PackageSourceMapping is enabled, the following source(s) were not considered\": with package source mapping every package ID must match a pattern of the feed that hosts it; add `<package pattern=\"Example.Common\" />` under that source in nuget.config (the most specific pattern wins).",
             "Example.Common only matched * on nuget.org; after mapping it to the internal source restore succeeds.",
             [["PackageSourceMapping", "package source mapping", "packageSourceMapping"], ["pattern"]])
    L.lesson((c3, done3), "error",
             "With nullable reference types on, CS8618 (\"Non-nullable property must contain a non-null value when exiting constructor\") on DTOs is best fixed with the C# 11 `required` modifier; callers that omit the member then fail with CS9035, so update them.",
             "Three CS8618 errors; after adding required, one test fails with CS9035 until it sets Email; the build is clean and 63 tests pass.",
             [["CS8618"], ["required"]])
    L.non_lesson((t4, qa), "rollForward latestFeature picks the newest installed SDK of the same major.minor with an equal or higher feature band.",
                 "Textbook answer to a side question.")
    L.non_lesson((done3, done3), "Billing.Api.Tests has 63 tests.",
                 "A one-off count about this repository.")
    return s


# ==== END OF SESSIONS ====

# =============================================================================================
# Output and validation
# =============================================================================================

OPEN_ROLES = {"user", "assistant"}
CX_ASSISTANT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call"}


def sessions():
    return [f for name, f in sorted(globals().items()) if FILE_RE.match(name) and callable(f)]


def fmt(row: dict) -> str:
    if "payload" in row and "type" in row:
        return "codex"
    if "role" in row and "type" not in row:
        return "openai"
    return "claude-code"


def _conv_kind(row: dict) -> str | None:
    """'user'/'assistant' for rows a label may point at (any of the three formats), else None."""
    f = fmt(row)
    if f == "openai":
        return row["role"] if row["role"] in OPEN_ROLES else None
    if f == "codex":
        if row["type"] != "response_item":
            return None
        p = row["payload"]
        if p["type"] == "message":
            return p["role"] if p["role"] in OPEN_ROLES else None
        return "assistant" if p["type"] in CX_ASSISTANT_ITEMS else None
    return row.get("type") if row.get("type") in OPEN_ROLES else None


def _matches(keywords, text) -> bool:
    t = text.lower()
    return all(any(k.lower() in t for k in group) for group in keywords)


def _first_prompt(rows) -> int:
    for i, r in enumerate(rows, 1):
        f = fmt(r)
        if f == "openai":
            if r["role"] == "user":
                return i
        elif f == "codex":
            p = r["payload"]
            if r["type"] == "response_item" and p["type"] == "message" and p["role"] == "user" \
                    and not p["content"][0]["text"].startswith("<"):
                return i
        elif r.get("type") == "user" and not r.get("isMeta") and not r.get("isCompactSummary"):
            c = r["message"]["content"]
            if isinstance(c, str) and not c.startswith("<"):
                return i
    raise AssertionError("no user prompt")


def _tool_ids(rows):
    calls, results = [], []
    for r in rows:
        f = fmt(r)
        if f == "openai":
            for c in r.get("tool_calls") or []:
                calls.append(c["id"])
                json.loads(c["function"]["arguments"])
            if r["role"] == "tool":
                results.append(r["tool_call_id"])
        elif f == "codex":
            p = r["payload"]
            if r["type"] == "response_item" and p["type"] in ("function_call", "custom_tool_call"):
                calls.append(p["call_id"])
                if p["type"] == "function_call":
                    json.loads(p["arguments"])
            elif r["type"] == "response_item" and p["type"] in ("function_call_output", "custom_tool_call_output"):
                results.append(p["call_id"])
        elif r.get("type") == "assistant":
            calls += [b["id"] for b in r["message"]["content"] if b["type"] == "tool_use"]
        elif r.get("type") == "user" and isinstance(r["message"]["content"], list):
            results += [b["tool_use_id"] for b in r["message"]["content"] if b.get("type") == "tool_result"]
    return calls, results


def validate(files: dict[str, list[dict]], boundaries, lessons, non_lessons) -> list[str]:
    errs = []
    for name, rows in files.items():
        calls, results = _tool_ids(rows)
        if sorted(calls) != sorted(results) or len(set(calls)) != len(calls):
            errs.append(f"{name}: unmatched or repeated tool ids {sorted(set(calls) ^ set(results))[:3]}")
        uuids = {r["uuid"] for r in rows if "uuid" in r}
        stamps = [r["timestamp"] for r in rows if "timestamp" in r and r.get("type") != "file-history-snapshot"]
        if stamps != sorted(stamps):
            errs.append(f"{name}: timestamps not monotonic")
        for i, r in enumerate(rows, 1):
            if r.get("parentUuid") and r["parentUuid"] not in uuids:
                errs.append(f"{name}:{i}: parentUuid points nowhere")
            if r.get("sourceToolAssistantUUID") and r["sourceToolAssistantUUID"] not in uuids:
                errs.append(f"{name}:{i}: sourceToolAssistantUUID points nowhere")
        if len({fmt(r) for r in rows}) != 1:
            errs.append(f"{name}: mixed row formats")
    seen = set()
    for b in boundaries:
        name, rows = b["file"], files.get(b["file"])
        seen.add(name)
        if rows is None:
            errs.append(f"boundaries: unknown file {name}")
            continue
        if b["tasks"][0]["line"] != _first_prompt(rows):
            errs.append(f"{name}: first task at {b['tasks'][0]['line']}, first prompt at {_first_prompt(rows)}")
        prev_line, prev_hi = 0, 0
        for t in b["tasks"]:
            ln, (lo, hi) = t["line"], t["window"]
            if not (lo <= ln <= hi) or not (1 <= lo and hi <= len(rows)):
                errs.append(f"{name}: task {ln} window {t['window']}")
            if _conv_kind(rows[ln - 1]) is None:
                errs.append(f"{name}: task line {ln} is not a user/assistant row")
            if t["kind"] not in {"user-request", "next-subtask", "side-task", "after-continuation"}:
                errs.append(f"{name}: task {ln} kind {t['kind']}")
            if ln <= prev_line or lo <= prev_hi:
                errs.append(f"{name}: tasks out of order or windows overlapping at {ln}")
            prev_line, prev_hi = ln, hi
    if seen != set(files):
        errs.append(f"boundaries cover {len(seen)} of {len(files)} files")
    for item in lessons + non_lessons:
        rows = files[item["file"]]
        a, z = item["lines"]
        if not (1 <= a <= z <= len(rows)):
            errs.append(f"{item['id']}: lines {item['lines']}")
            continue
        for ln in (a, z):
            if _conv_kind(rows[ln - 1]) is None:
                errs.append(f"{item['id']}: line {ln} is not a user/assistant row")
    for les in lessons:
        if les["type"] not in {"error", "pattern", "correction", "preference"}:
            errs.append(f"{les['id']}: type {les['type']}")
        if not _matches(les["keywords"], les["lesson"]):
            errs.append(f"{les['id']}: keywords do not match its own lesson")
        for other in lessons:
            if other is not les and other["file"] == les["file"] and _matches(les["keywords"], other["lesson"]):
                errs.append(f"{les['id']}: keywords also match {other['id']}")
        for nl in non_lessons:
            if nl["file"] == les["file"] and _matches(les["keywords"], nl["text"]):
                errs.append(f"{les['id']}: keywords also match non-lesson {nl['id']}")

    def strings(x):
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from strings(v)
        elif isinstance(x, list):
            for v in x:
                yield from strings(v)
    blob = "\n".join(t for rows in files.values() for r in rows for t in strings(r))
    for m in set(re.findall(r"[\w.+-]+@[A-Za-z][\w-]*(?:\.[\w-]+)*\.[A-Za-z]{2,}\b", blob)):
        user, domain = m.split("@", 1)
        if not (domain.startswith("example.") or domain.endswith((".invalid", ".internal", ".test")) or user == "git"):
            errs.append(f"possible e-mail address: {m}")
    return errs


def collect():
    built = [f() for f in sessions()]
    files = {s.name: s.rows for s in built}
    boundaries, lessons, non_lessons = [], [], []
    for s in built:
        boundaries.append({"file": s.name, "tasks": s.labels.tasks})
        lessons += s.labels.lessons
        non_lessons += s.labels.non_lessons
    for i, les in enumerate(lessons, 1):
        les["id"] = f"H{i:03d}"
    for i, nl in enumerate(non_lessons, 1):
        nl["id"] = f"HN{i:03d}"
    lessons = [{k: les[k] for k in ["id", "file", "lines", "type", "lesson", "evidence", "keywords"]} for les in lessons]
    non_lessons = [{k: nl[k] for k in ["id", "file", "lines", "text", "why"]} for nl in non_lessons]
    return built, files, boundaries, lessons, non_lessons


def _load_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def summary(files, boundaries, lessons, non_lessons) -> str:
    from collections import Counter
    kinds = Counter(t["kind"] for b in boundaries for t in b["tasks"][1:])
    types = Counter(l["type"] for l in lessons)
    fmts = Counter(fmt(rows[0]) for rows in files.values())
    conv = {n: sum(1 for r in rows if _conv_kind(r) or r.get("role") == "tool"
                   or (fmt(r) == "codex" and r["type"] == "response_item" and r["payload"]["type"].endswith("_output")))
            for n, rows in files.items()}
    out = [f"files: {len(files)} {dict(fmts)}",
           f"rows: {sum(len(r) for r in files.values())}; conversation rows per file: {min(conv.values())}-{max(conv.values())}",
           f"tasks: {sum(len(b['tasks']) for b in boundaries)}; boundaries: {sum(kinds.values())} {dict(kinds)}",
           f"lessons: {len(lessons)} {dict(types)}",
           f"non-lessons: {len(non_lessons)}"]
    for n in files:
        b = next(x for x in boundaries if x["file"] == n)
        out.append(f"  {n}: {len(files[n])} rows, {conv[n]} msgs, {len(b['tasks'])} tasks, "
                   f"{sum(1 for l in lessons if l['file'] == n)} lessons, "
                   f"{sum(1 for l in non_lessons if l['file'] == n)} non-lessons")
    return "\n".join(out)


def main(argv):
    if "--check" in argv:
        names = sorted(p.name for p in HERE.glob("*.jsonl") if FILE_RE.match(p.name))
        files = {n: _load_jsonl(HERE / n) for n in names}
        boundaries = _load_jsonl(HERE / "boundaries.jsonl")
        lessons = _load_jsonl(HERE / "lessons.jsonl")
        non_lessons = _load_jsonl(HERE / "non_lessons.jsonl")
        built = collect()
        if [json.dumps(x) for x in built[2]] != [json.dumps(x) for x in boundaries] or \
                [json.dumps(x) for x in built[3]] != [json.dumps(x) for x in lessons] or \
                any(s.dump() != (HERE / s.name).read_text() for s in built[0] if (HERE / s.name).exists()) or \
                sorted(built[1]) != names:
            print("ERROR files on disk differ from what build.py generates (run it without --check)")
            return 1
    else:
        built, files, boundaries, lessons, non_lessons = collect()
        for old in HERE.glob("*.jsonl"):
            if FILE_RE.match(old.name):
                old.unlink()
        for s in built:
            (HERE / s.name).write_text(s.dump())
        for fname, items in (("boundaries.jsonl", boundaries), ("lessons.jsonl", lessons),
                             ("non_lessons.jsonl", non_lessons)):
            (HERE / fname).write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items))
    errs = validate(files, boundaries, lessons, non_lessons)
    print(summary(files, boundaries, lessons, non_lessons))
    for e in errs:
        print("ERROR", e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
