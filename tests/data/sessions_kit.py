"""Shared machinery of the plain-shape session generators.

Used by ``sessions_plain/build.py`` and ``sessions_plain_heldout/build.py``; each of those keeps
only its own conversations, system prompts and labels and calls :func:`main`.

Stdlib only and deterministic: ids, uuids and timestamps come from a random.Random seeded by
the session's base name, so v1/v2 pairs share the same prefix byte for byte.

A conversation is written once in a small neutral script (:class:`Session`: user / say / think /
sh / read / edit / write) and rendered into one of three row formats:

* ``openai``      OpenAI chat messages (``tool_calls`` + ``tool`` rows)
* ``anthropic``   Anthropic Messages rows with content blocks (``tool_use`` / ``tool_result``)
* ``claude_code`` Claude Code project-export envelopes, one assistant block per row, with
                  ``file-history-snapshot``, ``progress`` and ``system`` noise rows

The ``--check`` validation (row shapes, tool-call pairing, labels, v1/v2 prefixes, no e-mails or
secrets, files up to date) lives here too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import textwrap
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

FORMATS = ("openai", "anthropic", "claude_code")
SHAPES = set("ABCDEFG")
TYPES = {"error", "pattern", "preference"}


def D(text: str) -> str:
    """Dedent a triple-quoted block and drop the first/last newline."""
    return textwrap.dedent(text).strip("\n")


# --------------------------------------------------------------------------------------------
# Neutral session script
# --------------------------------------------------------------------------------------------


class Session:
    def __init__(self, name: str, fmt: str, *, system: str | None = None,
                 cwd: str = "/home/dev/projects/app", branch: str = "main") -> None:
        assert fmt in FORMATS, fmt
        self.name = name
        self.fmt = fmt
        self.system = system
        self.cwd = cwd
        self.branch = branch
        self.events: list[tuple] = []
        self.shapes: list[str] = []
        self.expected: list[dict] = []
        self.forbidden: list[dict] = []

    # conversation ---------------------------------------------------------------------------
    def user(self, text: str) -> "Session":
        self.events.append(("user", D(text)))
        return self

    def say(self, text: str) -> "Session":
        self.events.append(("say", D(text)))
        return self

    def think(self, text: str) -> "Session":
        self.events.append(("think", D(text)))
        return self

    def sh(self, command: str, output: str, code: int = 0, desc: str | None = None) -> "Session":
        self.events.append(("call", "sh", {"command": command, "desc": desc}, D(output), code))
        return self

    def read(self, path: str, content: str) -> "Session":
        self.events.append(("call", "read", {"path": path}, D(content) + "\n", 0))
        return self

    def edit(self, path: str, old: str, new: str) -> "Session":
        self.events.append(("call", "edit", {"path": path, "old": old, "new": new}, "", 0))
        return self

    def write(self, path: str, content: str) -> "Session":
        self.events.append(("call", "write", {"path": path, "content": D(content) + "\n"}, "", 0))
        return self

    # labels ---------------------------------------------------------------------------------
    def shape(self, *letters: str) -> "Session":
        for letter in letters:
            if letter not in self.shapes:
                self.shapes.append(letter)
        return self

    def expect(self, type_, *keyword_lists: list[str]) -> "Session":
        self.expected.append({"type": type_, "any_of_keywords": [list(k) for k in keyword_lists]})
        return self

    def forbid(self, type_, keywords: list[str], why: str) -> "Session":
        self.forbidden.append({"type": type_, "keywords": list(keywords), "why": why})
        return self

    def label(self, filename: str) -> dict:
        return {"file": filename, "format": self.fmt, "shapes": sorted(self.shapes),
                "expected": self.expected, "forbidden": self.forbidden}


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def rid(rng: random.Random, prefix: str, n: int) -> str:
    return prefix + "".join(rng.choice(ALNUM) for _ in range(n))


def ruuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def seed_of(base: str) -> int:
    return int.from_bytes(hashlib.sha256(base.encode()).digest()[:8], "big")


def join(cwd: str, path: str) -> str:
    return path if path.startswith("/") else f"{cwd}/{path}"


def render_openai(s: Session, rng: random.Random) -> list[dict]:
    rows: list[dict] = []
    if s.system:
        rows.append({"role": "system", "content": s.system})
    ev = [e for e in s.events if e[0] != "think"]
    i = 0
    while i < len(ev):
        e = ev[i]
        if e[0] == "user":
            rows.append({"role": "user", "content": e[1]})
        elif e[0] == "say":
            if i + 1 < len(ev) and ev[i + 1][0] == "call":  # text that introduces a tool call
                rows.append(_openai_call(ev[i + 1], rng, content=e[1]))
                rows.append(_openai_result(ev[i + 1], rows[-1]))
                i += 1
            else:
                rows.append({"role": "assistant", "content": e[1]})
        elif e[0] == "call":
            rows.append(_openai_call(e, rng, content=None))
            rows.append(_openai_result(e, rows[-1]))
        i += 1
    return rows


def _openai_call(e: tuple, rng: random.Random, content: str | None) -> dict:
    _, kind, a, _, _ = e
    if kind == "sh":
        name, args = "run_shell", {"command": a["command"]}
    elif kind == "read":
        name, args = "read_file", {"path": a["path"]}
    elif kind == "edit":
        name, args = "edit_file", {"path": a["path"], "old_text": a["old"], "new_text": a["new"]}
    else:
        name, args = "write_file", {"path": a["path"], "content": a["content"]}
    call = {"id": rid(rng, "call_", 24), "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": content, "tool_calls": [call]}


def _openai_result(e: tuple, call_row: dict) -> dict:
    _, kind, a, out, code = e
    if kind == "sh":
        text = f"exit code: {code}\n{out}"
    elif kind == "read":
        text = out
    elif kind == "edit":
        text = f"ok: replaced 1 occurrence in {a['path']}"
    else:
        text = f"ok: wrote {len(a['content'].encode())} bytes to {a['path']}"
    return {"role": "tool", "tool_call_id": call_row["tool_calls"][0]["id"], "content": text}


def _anthropic_use(e: tuple, s: Session, rng: random.Random) -> tuple[dict, str, bool]:
    _, kind, a, out, code = e
    tid = rid(rng, "toolu_01", 22)
    if kind == "sh":
        block = {"type": "tool_use", "id": tid, "name": "bash", "input": {"command": a["command"]}}
        return block, out, code != 0
    if kind == "read":
        block = {"type": "tool_use", "id": tid, "name": "str_replace_based_edit_tool",
                 "input": {"command": "view", "path": join(s.cwd, a["path"])}}
        numbered = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(out.rstrip("\n").split("\n"), 1))
        return block, f"Here's the result of running `cat -n` on {join(s.cwd, a['path'])}:\n{numbered}", False
    if kind == "edit":
        block = {"type": "tool_use", "id": tid, "name": "str_replace_based_edit_tool",
                 "input": {"command": "str_replace", "path": join(s.cwd, a["path"]),
                           "old_str": a["old"], "new_str": a["new"]}}
        return block, f"The file {join(s.cwd, a['path'])} has been edited successfully.", False
    block = {"type": "tool_use", "id": tid, "name": "str_replace_based_edit_tool",
             "input": {"command": "create", "path": join(s.cwd, a["path"]), "file_text": a["content"]}}
    return block, f"File created successfully at: {join(s.cwd, a['path'])}", False


def render_anthropic(s: Session, rng: random.Random) -> list[dict]:
    rows: list[dict] = []
    cur: list[dict] = []

    def flush() -> None:
        if cur:
            rows.append({"role": "assistant", "content": list(cur)})
            cur.clear()

    for e in s.events:
        if e[0] == "user":
            flush()
            rows.append({"role": "user", "content": [{"type": "text", "text": e[1]}]})
        elif e[0] == "say":
            cur.append({"type": "text", "text": e[1]})
        elif e[0] == "think":
            cur.append({"type": "thinking", "thinking": e[1], "signature": "[REDACTED_SIGNATURE]"})
        else:
            block, text, err = _anthropic_use(e, s, rng)
            cur.append(block)
            flush()
            rows.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": block["id"], "content": text, "is_error": err}]})
    flush()
    return rows


class _CC:
    """Claude Code envelope writer: uuids, parent chain, clock, message ids."""

    def __init__(self, s: Session, rng: random.Random) -> None:
        self.s, self.rng = s, rng
        self.rows: list[dict] = []
        self.session_id = ruuid(rng)
        day = datetime(2026, 1, 5, 8, 30, tzinfo=timezone.utc) + timedelta(
            days=rng.randint(0, 70), minutes=rng.randint(0, 540), seconds=rng.randint(0, 59))
        self.clock = day
        self.last_uuid: str | None = None
        self.msg_id = rid(rng, "msg_01", 22)
        self.req_id = rid(rng, "req_011C", 16)
        self.turn_start = day
        self.in_turn = False

    def tick(self, lo: float, hi: float) -> str:
        self.clock += timedelta(milliseconds=int(self.rng.uniform(lo, hi) * 1000))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def base(self, kind: str) -> dict:
        return {"parentUuid": self.last_uuid, "isSidechain": False, "userType": "external",
                "cwd": self.s.cwd, "sessionId": self.session_id, "version": "2.1.42",
                "gitBranch": self.s.branch, "type": kind}

    def push(self, row: dict) -> dict:
        self.rows.append(row)
        if "uuid" in row:
            self.last_uuid = row["uuid"]
        return row

    def start(self, first_prompt_uuid: str) -> None:
        ts = self.tick(0.5, 2)
        self.rows.append(self._snapshot(first_prompt_uuid, ts))
        hook = ruuid(self.rng)
        row = self.base("progress")
        row.update({"data": {"type": "hook_progress", "hookEvent": "SessionStart",
                             "hookName": "SessionStart:startup", "command": "~/.claude/hooks/notify.sh start"},
                    "parentToolUseID": hook, "toolUseID": hook, "timestamp": self.tick(0.01, 0.1),
                    "uuid": ruuid(self.rng)})
        self.push(row)

    def _snapshot(self, message_id: str, ts: str) -> dict:
        return {"type": "file-history-snapshot", "messageId": message_id,
                "snapshot": {"messageId": message_id, "trackedFileBackups": {}, "timestamp": ts},
                "isSnapshotUpdate": False}

    def end_turn(self) -> None:
        if not self.in_turn:
            return
        row = self.base("system")
        ts = self.tick(0.01, 0.05)
        ms = int((self.clock - self.turn_start).total_seconds() * 1000)
        row.update({"subtype": "turn_duration", "durationMs": ms, "timestamp": ts,
                    "uuid": ruuid(self.rng), "isMeta": False})
        self.push(row)
        self.in_turn = False

    def prompt(self, text: str, first: bool) -> None:
        if first:
            u = ruuid(self.rng)
            self.start(u)
        else:
            self.end_turn()  # drawn before the prompt's uuid, so a v1 file is a prefix of its v2
            u = ruuid(self.rng)
            self.rows.append(self._snapshot(u, self.tick(20, 90)))
        row = self.base("user")
        row.update({"message": {"role": "user", "content": text}, "uuid": u, "timestamp": self.tick(0.01, 0.2),
                    "thinkingMetadata": {"maxThinkingTokens": 31999}, "todos": [], "permissionMode": "default"})
        self.push(row)
        self.turn_start = self.clock
        self.in_turn = True
        self.new_message()

    def new_message(self) -> None:
        self.msg_id = rid(self.rng, "msg_01", 22)
        self.req_id = rid(self.rng, "req_011C", 16)
        self.usage = {"input_tokens": self.rng.randint(2, 12),
                      "cache_creation_input_tokens": self.rng.randint(400, 9000),
                      "cache_read_input_tokens": self.rng.randint(9000, 90000),
                      "output_tokens": self.rng.randint(60, 900), "service_tier": "standard"}

    def block(self, block: dict, lo: float = 1.5, hi: float = 6) -> dict:
        row = self.base("assistant")
        row.update({"message": {"model": "claude-opus-4-6", "id": self.msg_id, "type": "message",
                                "role": "assistant", "content": [block], "stop_reason": None,
                                "stop_sequence": None, "usage": self.usage},
                    "requestId": self.req_id, "uuid": ruuid(self.rng), "timestamp": self.tick(lo, hi)})
        return self.push(row)

    def result(self, tool_id: str, source_uuid: str, text: str, err: bool, tur, lo: float, hi: float) -> None:
        row = self.base("user")
        row.update({"message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": err}]},
            "uuid": ruuid(self.rng), "timestamp": self.tick(lo, hi), "toolUseResult": tur,
            "sourceToolAssistantUUID": source_uuid})
        self.push(row)
        self.new_message()

    def hook(self, tool_id: str, tool: str) -> None:
        row = self.base("progress")
        row.update({"data": {"type": "hook_progress", "hookEvent": "PostToolUse",
                             "hookName": f"PostToolUse:{tool}", "command": "~/.claude/hooks/format-on-save.sh"},
                    "parentToolUseID": tool_id, "toolUseID": tool_id, "timestamp": self.tick(0.05, 0.4),
                    "uuid": ruuid(self.rng)})
        self.push(row)


def render_claude_code(s: Session, rng: random.Random) -> list[dict]:
    cc = _CC(s, rng)
    first = True
    for e in s.events:
        if e[0] == "user":
            cc.prompt(e[1], first)
            first = False
        elif e[0] == "think":
            cc.block({"type": "thinking", "thinking": e[1], "signature": "[REDACTED_SIGNATURE]"}, 2, 9)
        elif e[0] == "say":
            cc.block({"type": "text", "text": e[1]})
        else:
            _, kind, a, out, code = e
            tid = rid(rng, "toolu_01", 22)
            if kind == "sh":
                inp = {"command": a["command"], "description": a["desc"] or "Run shell command"}
                name = "Bash"
            elif kind == "read":
                inp, name = {"file_path": join(s.cwd, a["path"])}, "Read"
            elif kind == "edit":
                inp = {"file_path": join(s.cwd, a["path"]), "old_string": a["old"], "new_string": a["new"],
                       "replace_all": False}
                name = "Edit"
            else:
                inp, name = {"file_path": join(s.cwd, a["path"]), "content": a["content"]}, "Write"
            src = cc.block({"type": "tool_use", "id": tid, "name": name, "input": inp,
                            "caller": {"type": "direct"}}, 0.8, 3)["uuid"]
            if kind == "sh":
                if code:
                    text = f"Exit code {code}\n{out}"
                    cc.result(tid, src, text, True, f"Error: {text}", 1, 40)
                else:
                    cc.result(tid, src, out, False, {"stdout": out, "stderr": "", "interrupted": False,
                                                     "isImage": False, "noOutputExpected": False}, 0.5, 30)
            elif kind == "read":
                lines = out.rstrip("\n").split("\n")
                text = "\n".join(f"{n:6}\u2192{line}" for n, line in enumerate(lines, 1))
                cc.result(tid, src, text, False, {"type": "text", "file": {
                    "filePath": inp["file_path"], "content": out, "numLines": len(lines), "startLine": 1,
                    "totalLines": len(lines)}}, 0.2, 1)
            elif kind == "edit":
                cc.result(tid, src, f"The file {inp['file_path']} has been updated successfully.", False,
                          {"filePath": inp["file_path"], "oldString": a["old"], "newString": a["new"],
                           "structuredPatch": [], "userModified": False, "replaceAll": False}, 0.2, 1)
                cc.hook(tid, name)
            else:
                cc.result(tid, src, f"File created successfully at: {inp['file_path']}", False,
                          {"type": "create", "filePath": inp["file_path"], "content": a["content"],
                           "structuredPatch": []}, 0.2, 1)
                cc.hook(tid, name)
    cc.end_turn()
    return cc.rows


RENDER = {"openai": render_openai, "anthropic": render_anthropic, "claude_code": render_claude_code}


def render(s: Session, base: str) -> str:
    rows = RENDER[s.fmt](s, random.Random(seed_of(base)))
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# --------------------------------------------------------------------------------------------
# Building a set
# --------------------------------------------------------------------------------------------

SessionList = list[tuple[str, Session]]


def pair(name: str, fmt: str, parts, **kw) -> SessionList:
    """A v1/v2 pair: v1 runs ``parts[:1]``, v2 runs ``parts[:2]`` on a fresh Session."""
    out = []
    for n in (1, 2):
        s = Session(name, fmt, **kw)
        for part in parts[:n]:
            part(s)
        out.append((f"{name}.v{n}.jsonl", s))
    return out


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
SECRET = re.compile(r"(sk-[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}"
                    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})")


def detect(rows: list[dict]) -> str:
    if any("message" in r and isinstance(r.get("type"), str) for r in rows) or \
            any(r.get("type") in ("file-history-snapshot", "progress") for r in rows):
        return "claude_code"
    if any(isinstance(r.get("content"), list) for r in rows):
        return "anthropic"
    return "openai"


def strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [x for k, v in obj.items() if k not in ("id", "tool_use_id", "type", "signature") for x in strings(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in strings(v)]
    return []


def every_string(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in every_string(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in every_string(v)]
    return []


def conversation_text(rows: list[dict], fmt: str) -> str:
    parts: list[str] = []
    for r in rows:
        if fmt == "claude_code":
            if r.get("type") in ("user", "assistant"):
                parts += strings(r["message"].get("content"))
        else:
            parts += strings(r.get("content"))
            for call in r.get("tool_calls") or []:
                parts += strings(call["function"]["arguments"])
    return "\n".join(parts).lower()


def check_openai(rows: list[dict], err) -> None:
    open_calls: dict[str, int] = {}
    seen: set[str] = set()
    for n, r in enumerate(rows, 1):
        role = r.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            err(n, f"bad role {role!r}")
        if role != "tool" and open_calls:
            err(n, f"tool calls {sorted(open_calls)} not answered before this row")
            open_calls.clear()
        for call in r.get("tool_calls") or []:
            if role != "assistant" or call.get("type") != "function":
                err(n, "tool_calls on a non-assistant row or non-function call")
            cid = call.get("id")
            if cid in seen:
                err(n, f"duplicate call id {cid}")
            seen.add(cid)
            open_calls[cid] = n
            try:
                json.loads(call["function"]["arguments"])
            except (KeyError, TypeError, ValueError):
                err(n, "function.arguments is not a JSON string")
        if role == "tool":
            if r.get("tool_call_id") not in open_calls:
                err(n, f"tool row answers unknown/closed call {r.get('tool_call_id')}")
            open_calls.pop(r.get("tool_call_id"), None)
            if not isinstance(r.get("content"), str):
                err(n, "tool content must be a string")
        elif role != "assistant" or not r.get("tool_calls"):
            if not isinstance(r.get("content"), str) or not r["content"].strip():
                err(n, "empty content")
    if open_calls:
        err(len(rows), f"unanswered tool calls {sorted(open_calls)}")


def _check_blocks(n: int, role: str, blocks, open_uses: dict, err) -> None:
    if not isinstance(blocks, list):
        if role == "user" and isinstance(blocks, str):
            return
        err(n, "content is not a block list")
        return
    for b in blocks:
        kind = b.get("type")
        if kind == "tool_use":
            if role != "assistant":
                err(n, "tool_use outside an assistant row")
            if b.get("id") in open_uses:
                err(n, f"duplicate tool_use id {b.get('id')}")
            if not isinstance(b.get("input"), dict):
                err(n, "tool_use input is not an object")
            open_uses[b.get("id")] = n
        elif kind == "tool_result":
            if role != "user":
                err(n, "tool_result outside a user row")
            if b.get("tool_use_id") not in open_uses or open_uses[b["tool_use_id"]] is None:
                err(n, f"tool_result for unknown/closed id {b.get('tool_use_id')}")
            else:
                open_uses[b["tool_use_id"]] = None
            if not isinstance(b.get("is_error"), bool):
                err(n, "tool_result without boolean is_error")
        elif kind not in ("text", "thinking"):
            err(n, f"unexpected block type {kind!r}")


def check_anthropic(rows: list[dict], err) -> None:
    open_uses: dict[str, int | None] = {}
    last_role = None
    for n, r in enumerate(rows, 1):
        role = r.get("role")
        if role not in ("user", "assistant"):
            err(n, f"bad role {role!r}")
        if role == last_role:
            err(n, "roles do not alternate")
        last_role = role
        _check_blocks(n, role, r.get("content"), open_uses, err)
        pending = [k for k, v in open_uses.items() if v is not None and v < n]
        if pending:
            err(n, f"tool_use {pending} not answered in the next row")
            for k in pending:
                open_uses[k] = None
    if any(v is not None for v in open_uses.values()):
        err(len(rows), "unanswered tool_use at the end")


def check_claude_code(rows: list[dict], err) -> None:
    uuids: set[str] = set()
    open_uses: dict[str, int | None] = {}
    last_ts = ""
    session_ids = set()
    for n, r in enumerate(rows, 1):
        kind = r.get("type")
        if kind == "file-history-snapshot":
            continue
        if kind not in ("user", "assistant", "progress", "system"):
            err(n, f"unexpected row type {kind!r}")
        u = r.get("uuid")
        if not u or u in uuids:
            err(n, "missing or duplicate uuid")
        parent = r.get("parentUuid")
        if parent is not None and parent not in uuids:
            err(n, f"parentUuid {parent} does not point to an earlier row")
        if parent is None and uuids:
            err(n, "parentUuid is null after the first row")
        uuids.add(u)
        session_ids.add(r.get("sessionId"))
        ts = r.get("timestamp", "")
        if ts <= last_ts:
            err(n, "timestamp does not increase")
        last_ts = ts
        for key in ("cwd", "version", "sessionId", "gitBranch"):
            if key not in r:
                err(n, f"missing {key}")
        if kind in ("user", "assistant"):
            msg = r.get("message") or {}
            if msg.get("role") != kind:
                err(n, "message.role differs from row type")
            if kind == "assistant" and len(msg.get("content") or []) != 1:
                err(n, "assistant row must carry exactly one content block")
            _check_blocks(n, kind, msg.get("content"), open_uses, err)
            if "sourceToolAssistantUUID" in r and r["sourceToolAssistantUUID"] not in uuids:
                err(n, "sourceToolAssistantUUID does not point to an earlier row")
        pending = [k for k, v in open_uses.items() if v is not None and v < n and kind in ("user", "assistant")]
        if pending and not (kind == "user" and isinstance((r.get("message") or {}).get("content"), list)):
            err(n, f"tool_use {pending} not answered before this row")
            for k in pending:
                open_uses[k] = None
    if len(session_ids) != 1:
        err(len(rows), "more than one sessionId")
    if any(v is not None for v in open_uses.values()):
        err(len(rows), "unanswered tool_use at the end")


CHECKERS = {"openai": check_openai, "anthropic": check_anthropic, "claude_code": check_claude_code}


def validate(files: dict[str, str], labels: list[dict]) -> list[str]:
    problems: list[str] = []
    parsed: dict[str, tuple[str, list[dict]]] = {}
    for name, text in sorted(files.items()):
        def err(line: int, msg: str, name=name) -> None:
            problems.append(f"{name}:{line}: {msg}")
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            try:
                row = json.loads(line)
            except ValueError as e:
                err(n, f"invalid JSON: {e}")
                continue
            if not isinstance(row, dict):
                err(n, "row is not an object")
                continue
            rows.append(row)
        if not rows:
            err(0, "empty file")
            continue
        fmt = detect(rows)
        CHECKERS[fmt](rows, err)
        parsed[name] = (fmt, rows)
        decoded = "\n".join(every_string(rows))
        for m in EMAIL.findall(decoded):
            if not m.lower().endswith("example.com"):
                err(0, f"e-mail-like string {m!r}")
        for m in SECRET.findall(decoded):
            err(0, f"secret-looking string {m!r}")

    if not isinstance(labels, list):
        return problems + ["labels.json: not a list"]
    labelled = [e.get("file") for e in labels]
    for name in files:
        if labelled.count(name) != 1:
            problems.append(f"labels.json: {name} has {labelled.count(name)} entries (want 1)")
    for e in labels:
        name = e.get("file")
        where = f"labels.json[{name}]"
        if name not in files:
            problems.append(f"{where}: file does not exist")
            continue
        if set(e) != {"file", "format", "shapes", "expected", "forbidden"}:
            problems.append(f"{where}: keys {sorted(e)}")
        fmt, rows = parsed.get(name, (None, []))
        if e.get("format") != fmt:
            problems.append(f"{where}: format {e.get('format')!r} but the file looks like {fmt!r}")
        if not e.get("shapes") or not set(e["shapes"]) <= SHAPES:
            problems.append(f"{where}: bad shapes {e.get('shapes')}")
        text = conversation_text(rows, fmt) if fmt else ""

        def types_ok(t) -> bool:
            ts = t if isinstance(t, list) else [t]
            return bool(ts) and set(ts) <= TYPES

        def words_ok(words, what: str, where=where, text=text) -> None:
            if not words:
                problems.append(f"{where}: empty keyword list in {what}")
            for w in words:
                if not isinstance(w, str) or w != w.lower() or not w.strip():
                    problems.append(f"{where}: keyword {w!r} must be a non-empty lower-case string")
                elif w not in text:
                    problems.append(f"{where}: keyword {w!r} ({what}) does not appear in the session text")

        for x in e.get("expected", []):
            if not types_ok(x.get("type")):
                problems.append(f"{where}: bad expected type {x.get('type')!r}")
            lists = x.get("any_of_keywords") or []
            if not lists:
                problems.append(f"{where}: expected item without keywords")
            if x.get("type") == "error" and len(lists) < 2:
                problems.append(f"{where}: an error item needs a fix list and a problem list")
            for words in lists:
                words_ok(words, f"expected {x.get('type')}")
        for x in e.get("forbidden", []):
            if not types_ok(x.get("type")) or not x.get("why"):
                problems.append(f"{where}: bad forbidden item {x}")
            words_ok(x.get("keywords") or [], f"forbidden {x.get('type')}")
        if "G" not in e.get("shapes", []) and not e.get("expected"):
            problems.append(f"{where}: positive session without expected items")

    for name in files:
        if name.endswith(".v2.jsonl"):
            v1 = name.replace(".v2.jsonl", ".v1.jsonl")
            if v1 not in files:
                problems.append(f"{name}: no matching {v1}")
            elif not (files[name].startswith(files[v1]) and len(files[name]) > len(files[v1])):
                problems.append(f"{name}: is not {v1} with lines appended")
    return problems


def generate(sessions: Callable[[], SessionList]) -> tuple[dict[str, str], list[dict]]:
    files: dict[str, str] = {}
    labels: list[dict] = []
    for filename, s in sessions():
        base = filename.split(".")[0]
        files[filename] = render(s, base)
        labels.append(s.label(filename))
    return files, labels


def dump_labels(labels: list[dict]) -> str:
    return json.dumps(labels, ensure_ascii=False, indent=2) + "\n"


def main(here: Path, sessions: Callable[[], SessionList], description: str | None = None,
         argv: list[str] | None = None) -> int:
    """Regenerate (or with ``--check`` validate) the set in folder ``here``.

    ``sessions`` returns ``(filename, Session)`` pairs; ``description`` is the build script's
    docstring, shown by ``--help``.
    """
    labels_path = here / "labels.json"
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="validate the committed files without writing")
    args = ap.parse_args(argv)
    problems: list[str] = []
    if args.check:
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(here.glob("*.jsonl"))}
        try:
            labels = json.loads(labels_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"labels.json: {e}")
            return 1
        want_files, want_labels = generate(sessions)
        if set(want_files) != set(files):
            problems.append(f"file set differs from build.py output: {sorted(set(want_files) ^ set(files))}")
        problems += [f"{n}: differs from build.py output (rerun build.py)"
                     for n in sorted(set(want_files) & set(files)) if want_files[n] != files[n]]
        if dump_labels(want_labels) != labels_path.read_text(encoding="utf-8"):
            problems.append("labels.json: differs from build.py output (rerun build.py)")
    else:
        files, labels = generate(sessions)
        for stale in here.glob("*.jsonl"):
            if stale.name not in files:
                stale.unlink()
        for name, text in files.items():
            (here / name).write_text(text, encoding="utf-8")
        labels_path.write_text(dump_labels(labels), encoding="utf-8")
    problems = validate(files, labels) + problems
    for p in problems:
        print(p)
    n_rows = sum(t.count("\n") for t in files.values())
    by_fmt = {f: sum(1 for e in labels if e.get("format") == f) for f in FORMATS}
    print(f"{len(files)} files, {n_rows} rows, {by_fmt}; {len(problems)} problem(s)")
    return 1 if problems else 0
