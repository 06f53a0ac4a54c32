#!/usr/bin/env python3
"""Generate the hand-written session set in this directory, with its labels.

Run from anywhere: ``python tests/data/sessions_written/build.py``. It rewrites every
``cc*.jsonl`` / ``oa*.jsonl`` session file plus ``boundaries.jsonl``, ``lessons.jsonl`` and
``non_lessons.jsonl``, then validates them (``--check`` validates the files on disk only).

The sessions were written by hand in the row shapes of real agent exports (Claude Code
project JSONL and plain OpenAI-chat JSONL). Line numbers in the labels are not typed in by
hand: each session script keeps the line that a builder call returned, so the labels follow
the rows when a session is edited. Everything is deterministic (seeded ids and timestamps).
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

    def _rand(self, n: int) -> str:
        return "".join(self.rng.choice(B62) for _ in range(n))

    def _tick(self, lo=0.2, hi=4.0) -> str:
        self.now += dt.timedelta(seconds=self.rng.uniform(lo, hi))
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"

    def wait(self, minutes: float):
        self.now += dt.timedelta(minutes=minutes)

    @property
    def line(self) -> int:
        """Line number of the last row written (1-based)."""
        return len(self.rows)

    def dump(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows)


class CC(_Base):
    """Claude Code project-export builder (one JSON object per row)."""

    def __init__(self, name, seed, start, cwd, branch="main", hooks=(), version="2.1.42",
                 model="claude-opus-4-6", slug=None):
        super().__init__(name, seed, start)
        self.cwd = cwd
        self.branch = branch
        self.hooks = list(hooks)          # PreToolUse hook commands shown as progress rows
        self.version = version
        self.model = model
        self.session_id = self._uuid()
        self.slug = slug
        self.parent = None
        self.msg_id = None
        self.req_id = None
        self.pending: list[tuple[str, str]] = []   # (tool_use_id, assistant uuid) awaiting results
        self.turn_started = self.now

    # -- envelope ---------------------------------------------------------------------------
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

    # -- noise rows -------------------------------------------------------------------------
    def snapshot(self, message_id=None):
        mid = message_id or self._uuid()
        self.rows.append({"type": "file-history-snapshot", "messageId": mid,
                          "snapshot": {"messageId": mid, "trackedFileBackups": {}, "timestamp": self._tick(0, 0.1)},
                          "isSnapshotUpdate": False})
        return mid

    def session_start(self, commands=("~/.claude/hooks/notify.sh start",), kind="startup"):
        tid = self._uuid()
        for c in commands:
            self._push(self._env("progress", data={"type": "hook_progress", "hookEvent": "SessionStart",
                                                   "hookName": f"SessionStart:{kind}", "command": c},
                                 parentToolUseID=tid, toolUseID=tid, timestamp=self._tick(0, 0.1), uuid=self._uuid()))

    def end_turn(self):
        if self.hooks:
            self._push(self._env("system", subtype="stop_hook_summary", hookCount=1,
                                 hookInfos=[{"command": "~/.claude/hooks/notify.sh stop"}], hookErrors=[],
                                 preventedContinuation=False, stopReason="", hasOutput=False, level="suggestion",
                                 timestamp=self._tick(0, 0.2), uuid=self._uuid(), toolUseID=self._uuid()))
        ms = int((self.now - self.turn_started).total_seconds() * 1000)
        self._push(self._env("system", subtype="turn_duration", durationMs=max(ms, 900), timestamp=self._tick(0, 0.1),
                             uuid=self._uuid(), isMeta=False))

    def queue(self, content):
        self.rows.append({"type": "queue-operation", "operation": "enqueue", "timestamp": self._tick(0, 0.5),
                          "sessionId": self.session_id, "content": content})
        self.rows.append({"type": "queue-operation", "operation": "remove", "timestamp": self._tick(0, 0.5),
                          "sessionId": self.session_id})

    def command(self, name, stdout):
        """A slash command typed by the user: caveat + command + stdout rows (all isMeta-ish user rows)."""
        self.snapshot()
        self._push(self._env("user", message={"role": "user", "content": (
            "<local-command-caveat>Caveat: The messages below were generated by the user while running local "
            "commands. DO NOT respond to these messages or otherwise consider them in your response unless the "
            "user explicitly asks you to.</local-command-caveat>")}, isMeta=True, uuid=self._uuid(), timestamp=self._tick()))
        first = self.line
        self._push(self._env("user", message={"role": "user", "content": (
            f"<command-name>/{name}</command-name>\n            <command-message>{name}</command-message>\n"
            "            <command-args></command-args>")}, uuid=self._uuid(), timestamp=self._tick(0, 0.1)))
        self._push(self._env("user", message={"role": "user", "content": f"<local-command-stdout>{stdout}</local-command-stdout>"},
                             uuid=self._uuid(), timestamp=self._tick(0, 0.1)))
        return first

    def reminder(self, text):
        """A system-reminder injected as a meta user row."""
        return self._push(self._env("user", message={"role": "user", "content": [
            {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}]}, isMeta=True,
            uuid=self._uuid(), timestamp=self._tick(0, 0.1)))

    def compact(self, summary):
        self._push(self._env("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                             timestamp=self._tick(20, 60), uuid=self._uuid(), level="info",
                             compactMetadata={"trigger": "auto", "preTokens": self.rng.randint(150000, 172000)}),
                   chain=True)
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

    # -- conversation rows ------------------------------------------------------------------
    def user(self, text, blocks=False) -> int:
        self.wait(self.rng.uniform(0.3, 3))
        uid = self._uuid()
        self.snapshot(uid)
        if all(r.get("type") in ("progress", "file-history-snapshot") for r in self.rows):
            self.rows.insert(0, self.rows.pop())   # a session's first snapshot precedes its start hooks
        content = [{"type": "text", "text": text}] if blocks else text
        self.turn_started = self.now
        self.msg_id = None
        return self._push(self._env("user", message={"role": "user", "content": content}, uuid=uid,
                                    timestamp=self._tick(0, 0.1), thinkingMetadata={"maxThinkingTokens": 31999},
                                    todos=[], permissionMode="default"))

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

    # -- tool helpers -----------------------------------------------------------------------
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

    def reject(self, name, input_) -> tuple[int, int, int]:
        line, tid = self.call(name, input_)
        r = self.result(tid, REJECTED, True, "User rejected tool use")
        return line, r, self.interrupted(for_tool=True)


class OA(_Base):
    """Plain OpenAI-chat JSONL builder: one message per line."""

    def __init__(self, name, seed, start):
        super().__init__(name, seed, start)

    def system(self, text) -> int:
        self.rows.append({"role": "system", "content": text})
        return self.line

    def user(self, text) -> int:
        self.rows.append({"role": "user", "content": text})
        return self.line

    def say(self, text) -> int:
        return self.call(text)[0]

    def call(self, text, calls=()) -> tuple[int, list[str]]:
        """An assistant message, optionally with tool calls [(name, arguments)]; returns (line, call ids)."""
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
        """One assistant message with a single tool call, then its tool row."""
        line, ids = self.call(text, [(fn, args)])
        return line, self.tool(ids[0], content)


# =============================================================================================
# Claude Code sessions
# =============================================================================================

def cc01_node_fs_promises():
    """Story (a): build fails on node:fs/promises under Node 12; upgrade to Node 20 with nvm."""
    s = CC("cc01_node_fs_promises.jsonl", 101, "2026-01-14T09:12:03", "/home/dev/projects/docsite")
    L = s.labels
    s.session_start()
    t1 = s.user("npm run build is failing on my machine, can you take a look?")
    s.think("The user says the build fails. Run it first and read the actual error before touching anything.")
    s.say("Let me run the build and see what it prints.")
    _, fail = s.bash("npm run build", desc="Run the production build", code=1, out="""\
> docsite@2.3.0 build /home/dev/projects/docsite
> node scripts/build.mjs

internal/modules/run_main.js:54
    internalBinding('errors').triggerUncaughtException(
                              ^

Error [ERR_UNKNOWN_BUILTIN_MODULE]: No such built-in module: node:fs/promises
    at Loader.builtinStrategy (internal/modules/esm/translators.js:285:11)
    at new ModuleJob (internal/modules/esm/module_job.js:42:41)
    at Loader.getModuleJob (internal/modules/esm/loader.js:241:11)
    at async ModuleWrap.<anonymous> (internal/modules/esm/module_job.js:57:21)
    at async Promise.all (index 1)
    at async link (internal/modules/esm/module_job.js:62:9) {
  code: 'ERR_UNKNOWN_BUILTIN_MODULE'
}
npm ERR! code ELIFECYCLE
npm ERR! errno 1
npm ERR! docsite@2.3.0 build: `node scripts/build.mjs`
npm ERR! Exit status 1
npm ERR!
npm ERR! Failed at the docsite@2.3.0 build script.
npm ERR! This is probably not a problem with npm. There is likely additional logging output above.

npm ERR! A complete log of this run can be found in:
npm ERR!     /home/dev/.npm/_logs/2026-01-14T09_12_11_482Z-debug.log""")
    s.say("The build script can't load `node:fs/promises`. Let me look at the build script.")
    miss, miss_r = s.read_missing("/home/dev/projects/docsite/scripts/build.js")
    s.glob("scripts/*", ["/home/dev/projects/docsite/scripts/build.mjs",
                         "/home/dev/projects/docsite/scripts/render.cjs"])
    s.read("/home/dev/projects/docsite/scripts/build.mjs", """\
import { readFile, writeFile, mkdir } from 'node:fs/promises'
import path from 'node:path'
import { renderPages } from './render.cjs'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const out = path.join(root, 'dist')

const manifest = JSON.parse(await readFile(path.join(root, 'content', 'manifest.json'), 'utf8'))
console.log(`[build] rendering ${manifest.pages.length} pages`)
await mkdir(out, { recursive: true })
const started = Date.now()
const bytes = await renderPages(manifest, out, { writeFile })
console.log(`[build] wrote dist/ (${manifest.pages.length} pages, ${(bytes / 1e6).toFixed(1)} MB) in ${((Date.now() - started) / 1000).toFixed(1)}s`)
""")
    s.say("The code itself looks fine, and it uses top-level await too. Let me check whether the running Node supports the `node:` scheme at all.")
    s.bash("node -e \"require('node:fs/promises')\"", code=1, out="""\
internal/modules/cjs/loader.js:818
  throw err;
  ^

Error: Cannot find module 'node:fs/promises'
Require stack:
- /home/dev/projects/docsite/[eval]
    at Function.Module._resolveFilename (internal/modules/cjs/loader.js:815:15)
    at Function.Module._load (internal/modules/cjs/loader.js:667:27)
    at Module.require (internal/modules/cjs/loader.js:887:19)
    at require (internal/modules/cjs/helpers.js:74:18)
    at [eval]:1:1
    at Script.runInThisContext (vm.js:120:18)
    at Object.runInThisContext (vm.js:309:38)
    at Object.<anonymous> ([eval]-wrapper:10:26)
    at Module._compile (internal/modules/cjs/loader.js:999:30)
    at evalScript (internal/process/execution.js:94:25) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/home/dev/projects/docsite/[eval]' ]
}""")
    s.bash("node --version && npm --version && which node", out="v12.22.9\n6.14.15\n/usr/bin/node")
    s.bash("grep -n -A2 '\"engines\"' package.json", out='14:  "engines": {\n15-    "node": ">=18"\n16-  },')
    s.say("That's the cause: the shell picks up the distro's Node **v12.22.9** from `/usr/bin`, but the project "
          "declares `\"node\": \">=18\"`. The `node:` prefix for built-ins (and `node:fs/promises` in particular) "
          "only exists in newer Node releases, so Node 12 rejects it. Let me see if nvm is available.")
    nvm1, nvm1_r = s.bash("nvm --version", code=127, out="/bin/bash: line 1: nvm: command not found")
    s.bash("ls ~/.nvm | head", out="CONTRIBUTING.md\nLICENSE.md\nMakefile\nREADME.md\nalias\nbash_completion\nnvm-exec\nnvm.sh\nversions")
    s.say("nvm is installed; it's a shell function, so it has to be sourced in a non-interactive shell.")
    _, nvm2_r = s.bash("source ~/.nvm/nvm.sh && nvm --version && nvm ls", out="""\
0.39.7
->     v12.22.9 (system)
default -> system
iojs -> N/A (default)
node -> stable (-> N/A) (default)
lts/* -> lts/iron (-> N/A)""")
    inst, _ = s.bash("source ~/.nvm/nvm.sh && nvm install 20", desc="Install Node 20 with nvm", out="""\
Downloading and installing node v20.11.1...
Downloading https://nodejs.org/dist/v20.11.1/node-v20.11.1-linux-x64.tar.xz...
######################################################################################################## 100.0%
Computing checksum with sha256sum
Checksums matched!
Now using node v20.11.1 (npm v10.2.4)
Creating default alias: default -> 20 (-> v20.11.1)""")
    s.bash("source ~/.nvm/nvm.sh && nvm use 20 >/dev/null && node --version && rm -rf node_modules && npm ci",
           desc="Reinstall dependencies under Node 20", out="""\
v20.11.1

added 412 packages, and audited 413 packages in 9s

61 packages are looking for funding
  run `npm fund` for details

found 0 vulnerabilities""")
    _, ok = s.bash("source ~/.nvm/nvm.sh && nvm use 20 >/dev/null && npm run build", out="""\

> docsite@2.3.0 build
> node scripts/build.mjs

[build] rendering 148 pages
[build] wrote dist/ (148 pages, 2.1 MB) in 3.4s""")
    expl = s.say("The build passes now.\n\n**Cause:** your shell was running the system Node **v12.22.9**. "
                 "`scripts/build.mjs` imports `node:fs/promises`, and Node 12 doesn't know the `node:` scheme for "
                 "built-in modules, hence `ERR_UNKNOWN_BUILTIN_MODULE` (and `Cannot find module 'node:fs/promises'` "
                 "from `require`).\n\n**Fix:** installed Node 20 with `nvm install 20` (it's now nvm's default), "
                 "reinstalled `node_modules` with `npm ci` and re-ran the build: 148 pages written.\n\nOpen a new "
                 "terminal (or run `nvm use 20`) so your own shell picks it up too.")
    s.end_turn()
    t2 = s.user("great, works here too. can you make CI use the same node version? I think it's still on 16")
    s.read("/home/dev/projects/docsite/.github/workflows/ci.yml", """\
name: CI
on:
  push:
    branches: [main]
  pull_request:

jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
        with:
          node-version: 16
          cache: npm
      - run: npm ci
      - run: npm run build
""")
    s.say("CI pins Node 16. Rather than hard-coding 20 in a second place, I'll add an `.nvmrc` and point "
          "`actions/setup-node` at it with `node-version-file`, so local nvm and CI read the same file.")
    s.write("/home/dev/projects/docsite/.nvmrc", "20\n")
    s.edit("/home/dev/projects/docsite/.github/workflows/ci.yml", "          node-version: 16\n",
           "          node-version-file: .nvmrc\n")
    s.say("Shall I commit and push this to main?")
    s.end_turn()
    s.user("yes, push to main, it's just me on this repo")
    s.bash("git add .nvmrc .github/workflows/ci.yml && git commit -m \"ci: read Node version from .nvmrc (Node 20)\" && git push",
           out="[main 4be91c2] ci: read Node version from .nvmrc (Node 20)\n 2 files changed, 2 insertions(+), 1 deletion(-)\n create mode 100644 .nvmrc\nTo github.com:example-org/docsite.git\n   9d03e1a..4be91c2  main -> main")
    s.bash("gh run watch --exit-status $(gh run list --limit 1 --json databaseId -q '.[0].databaseId')", timeout=600000, out="""\
Refreshing run status every 3 seconds. Press Ctrl+C to quit.

✓ main CI · 7731046625
Triggered via push less than a minute ago

JOBS
✓ build in 41s (ID 21200394117)
  ✓ Set up job
  ✓ Run actions/checkout@v4
  ✓ Run actions/setup-node@v4
  ✓ Run npm ci
  ✓ Run npm run build
  ✓ Post Run actions/setup-node@v4
  ✓ Complete job

✓ Run CI (7731046625) completed with 'success'""")
    s.say("Pushed, and the CI run is green on Node 20 (`setup-node` now resolves the version from `.nvmrc`).")
    s.end_turn()
    done = s.user("perfect, thanks")
    s.say("You're welcome!")
    s.end_turn()

    L.task(t1, "Fix `npm run build` failing with ERR_UNKNOWN_BUILTIN_MODULE for node:fs/promises (system Node 12; upgrade to Node 20 via nvm)")
    L.task(t2, "Make CI use the same Node version as local (.nvmrc + setup-node node-version-file), commit, push and watch the run")
    L.lesson((fail, expl), "error",
             "A build that imports `node:fs/promises` fails on Node 12 with ERR_UNKNOWN_BUILTIN_MODULE / \"Cannot find module 'node:fs/promises'\" because old Node lacks the `node:` scheme for built-ins; check `node --version` and upgrade to a current Node (here `nvm install 20`), then reinstall node_modules.",
             "npm run build fails; node --version shows v12.22.9 from /usr/bin while package.json engines says >=18; after nvm install 20 and npm ci the build writes 148 pages.",
             [["node:fs/promises", "ERR_UNKNOWN_BUILTIN_MODULE", "node: prefix", "node: scheme"],
              ["upgrade", "nvm install", "node 20", "newer node"]])
    L.lesson((nvm1_r, nvm2_r), "error",
             "In an agent's non-interactive Bash tool `nvm` is not on PATH (\"nvm: command not found\", exit 127) because it is a shell function; run `source ~/.nvm/nvm.sh && nvm ...` in the same command.",
             "`nvm --version` exits 127; `source ~/.nvm/nvm.sh && nvm --version` works and every later nvm/npm call is prefixed with the source.",
             [["nvm.sh"], ["source", "non-interactive", "shell function", "command not found"]])
    L.lesson((t2, done), "pattern",
             "Keep CI on the same Node as local development by putting the version in `.nvmrc` and configuring `actions/setup-node` with `node-version-file: .nvmrc` instead of a hard-coded `node-version`.",
             "CI pinned node-version: 16; the agent adds .nvmrc (20) and node-version-file, pushes, and the watched run succeeds; the user thanks.",
             [["node-version-file"], [".nvmrc"]])
    L.non_lesson((miss, miss_r), "The docsite build script lives at scripts/build.js.",
                 "A wrong path guess: the Read fails with 'File does not exist' and the next Glob finds scripts/build.mjs. Nothing to learn.")
    return s


def cc02_docker_slim():
    """Story (b): shrink a Docker image with a multi-stage build and a slim base; then a compose healthcheck."""
    s = CC("cc02_docker_slim.jsonl", 102, "2026-01-15T14:02:40", "/home/dev/projects/inventory-api",
           hooks=["~/.claude/hooks/guard.sh"])
    L = s.labels
    s.session_start(commands=["~/.claude/hooks/notify.sh start", "~/.claude/hooks/load-context.sh"])
    t1 = s.user("our inventory-api docker image is 1.31GB and deploys take forever. can you shrink it?")
    s.think("Look at the current image and Dockerfile first. Likely a full python base with build tools and no .dockerignore.")
    s.bash("docker images inventory-api", out="REPOSITORY      TAG       IMAGE ID       CREATED      SIZE\ninventory-api   latest    3f2a9c1b7e44   2 days ago   1.31GB")
    s.read("/home/dev/projects/inventory-api/Dockerfile", """\
FROM python:3.11
WORKDIR /app
RUN apt-get update && apt-get install -y build-essential libpq-dev
COPY . .
RUN pip install -r requirements.txt
EXPOSE 8000
CMD ["uvicorn", "inventory.main:app", "--host", "0.0.0.0", "--port", "8000"]
""")
    s.read("/home/dev/projects/inventory-api/requirements.txt",
           "fastapi==0.109.2\nuvicorn[standard]==0.27.1\npsycopg2==2.9.9\nsqlalchemy==2.0.27\npydantic-settings==2.1.0\n")
    s.bash("ls -a && du -sh .git .venv 2>/dev/null", out=".\n..\n.env.example\n.git\n.github\n.venv\nDockerfile\ndocker-compose.yml\ninventory\nrequirements.txt\ntests\n412M\t.git\n486M\t.venv")
    s.say("Three things make it big:\n\n1. `python:3.11` is the full Debian image (compilers, headers, ~1 GB on its own).\n"
          "2. `build-essential` and `libpq-dev` stay in the final image although they're only needed to compile `psycopg2`.\n"
          "3. `COPY . .` has no `.dockerignore`, so `.git` (412M) and `.venv` (486M) go into the build context and `.git` into the image.\n\n"
          "Plan: a multi-stage build. A `builder` stage on the full image compiles wheels; the runtime stage is "
          "`python:3.11-slim` and only installs those wheels plus the app code.")
    s.write("/home/dev/projects/inventory-api/Dockerfile", """\
# syntax=docker/dockerfile:1
FROM python:3.11 AS builder
WORKDIR /build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential libpq-dev \\
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip wheel --no-cache-dir --wheel-dir /wheels -r requirements.txt

FROM python:3.11-slim
WORKDIR /app
COPY --from=buider /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels /wheels/* && rm -rf /wheels
COPY inventory/ inventory/
EXPOSE 8000
CMD ["uvicorn", "inventory.main:app", "--host", "0.0.0.0", "--port", "8000"]
""", new=False)
    typo, typo_r = s.bash("docker build -t inventory-api:slim .", timeout=600000, code=1, out="""\
#0 building with "default" instance using docker driver

#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 612B done
#1 DONE 0.0s

#2 [internal] load .dockerignore
#2 transferring context: 2B done
#2 DONE 0.0s

#3 [internal] load metadata for docker.io/library/python:3.11-slim
#3 DONE 0.9s

#4 [internal] load metadata for docker.io/library/python:3.11
#4 DONE 0.9s

#5 [internal] load build context
#5 transferring context: 912.47MB 6.2s done
#5 DONE 6.3s

#6 FROM docker.io/library/buider:latest
#6 ERROR: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed
------
 > FROM docker.io/library/buider:latest:
------
ERROR: failed to solve: buider: failed to resolve source metadata for docker.io/library/buider:latest: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed""")
    s.say("Typo in the stage name (`buider`). Also note the 912MB build context: adding a `.dockerignore` too.")
    _, typo_fix = s.edit("/home/dev/projects/inventory-api/Dockerfile", "COPY --from=buider /wheels /wheels",
                         "COPY --from=builder /wheels /wheels")
    di, _ = s.write("/home/dev/projects/inventory-api/.dockerignore",
                    ".git\n.github\n.venv\n**/__pycache__\n*.pyc\n.pytest_cache\ntests\n.env\n.env.*\n!.env.example\n")
    s.bash("docker build -t inventory-api:slim . 2>&1 | grep -E 'transferring context|naming|DONE [0-9.]+s$' | tail -5",
           timeout=600000, out="#2 transferring context: 163B done\n#5 transferring context: 41.20kB done\n#11 DONE 38.4s\n#14 DONE 2.1s\n#15 naming to docker.io/library/inventory-api:slim done")
    _, imp = s.bash("docker run --rm inventory-api:slim python -c 'import inventory.main; print(\"ok\")'", code=1, out="""\
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/app/inventory/main.py", line 5, in <module>
    from inventory.db import engine
  File "/app/inventory/db.py", line 3, in <module>
    import psycopg2
  File "/usr/local/lib/python3.11/site-packages/psycopg2/__init__.py", line 51, in <module>
    from psycopg2._psycopg import (                     # noqa
ImportError: libpq.so.5: cannot open shared object file: No such file or directory""")
    s.say("The image builds but `psycopg2` can't load: the wheel compiled in the builder links against `libpq.so.5`, "
          "and the slim base doesn't ship the PostgreSQL client library. The runtime stage needs `libpq5` (the "
          "shared library only, not `libpq-dev`).")
    s.edit("/home/dev/projects/inventory-api/Dockerfile", "FROM python:3.11-slim\nWORKDIR /app\n",
           "FROM python:3.11-slim\nWORKDIR /app\nRUN apt-get update && apt-get install -y --no-install-recommends libpq5 \\\n    && rm -rf /var/lib/apt/lists/*\n")
    s.bash("docker build -q -t inventory-api:slim . && docker run --rm inventory-api:slim python -c 'import inventory.main; print(\"ok\")'",
           timeout=600000, out="sha256:8c1d04f5a9e2b7d3c6a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9\nok")
    _, size = s.bash("docker images inventory-api && docker run -d --rm --name inv-smoke -p 8000:8000 -e DATABASE_URL=postgresql://app:app@host.docker.internal/inventory inventory-api:slim && sleep 3 && curl -s localhost:8000/health; docker stop inv-smoke",
                     out="REPOSITORY      TAG       IMAGE ID       CREATED          SIZE\ninventory-api   slim      8c1d04f5a9e2   10 seconds ago   196MB\ninventory-api   latest    3f2a9c1b7e44   2 days ago       1.31GB\n5f0c2e1d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d\n{\"status\":\"ok\"}inv-smoke")
    s.say("Done: **1.31GB → 196MB**, and the container answers `/health`.\n\n- multi-stage build: wheels are compiled in a "
          "`python:3.11` builder stage; the final stage is `python:3.11-slim` with only the wheels, `libpq5` and `inventory/`\n"
          "- `.dockerignore` keeps `.git`, `.venv` and tests out (build context 912MB → 41kB)\n- `--no-cache-dir` and apt list cleanup")
    s.end_turn()
    ok1 = s.user("that worked! deploy went from ~4 min to under 1. thanks")
    s.say("Glad it helped.")
    s.end_turn()
    t2 = s.user("one more thing: add a healthcheck for the api service in docker-compose.yml so nginx only gets traffic once it's up")
    s.read("/home/dev/projects/inventory-api/docker-compose.yml", """\
services:
  api:
    build: .
    image: inventory-api:slim
    env_file: .env
    ports:
      - "8000:8000"
  nginx:
    image: nginx:1.25-alpine
    depends_on:
      - api
    ports:
      - "80:80"
    volumes:
      - ./deploy/nginx.conf:/etc/nginx/conf.d/default.conf:ro
""")
    s.edit("/home/dev/projects/inventory-api/docker-compose.yml", "    ports:\n      - \"8000:8000\"\n  nginx:",
           "    ports:\n      - \"8000:8000\"\n    healthcheck:\n      test: [\"CMD\", \"curl\", \"-f\", \"http://localhost:8000/health\"]\n      interval: 10s\n      timeout: 3s\n      retries: 3\n  nginx:")
    s.edit("/home/dev/projects/inventory-api/docker-compose.yml", "    depends_on:\n      - api\n",
           "    depends_on:\n      api:\n        condition: service_healthy\n")
    _, hc_fail = s.bash("docker compose up -d && sleep 35 && docker inspect --format '{{json .State.Health}}' inventory-api-api-1",
                        timeout=120000, out="""\
 Container inventory-api-api-1  Recreate
 Container inventory-api-api-1  Recreated
 Container inventory-api-nginx-1  Recreate
 Container inventory-api-nginx-1  Recreated
 Container inventory-api-api-1  Starting
 Container inventory-api-api-1  Started
 Container inventory-api-api-1  Waiting
 container inventory-api-api-1 is unhealthy
dependency failed to start: container inventory-api-api-1 is unhealthy
{"Status":"unhealthy","FailingStreak":3,"Log":[{"Start":"2026-01-15T14:41:02.118Z","End":"2026-01-15T14:41:02.171Z","ExitCode":-1,"Output":"OCI runtime exec failed: exec failed: unable to start container process: exec: \\"curl\\": executable file not found in $PATH: unknown"}]}""")
    s.say("The app is fine, the probe isn't: the slim image has no `curl`. Instead of adding curl back to the image, "
          "the healthcheck can use the Python that's already there.")
    s.edit("/home/dev/projects/inventory-api/docker-compose.yml",
           "      test: [\"CMD\", \"curl\", \"-f\", \"http://localhost:8000/health\"]",
           "      test: [\"CMD\", \"python\", \"-c\", \"import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://localhost:8000/health', timeout=2).status == 200 else 1)\"]")
    _, hc_ok = s.bash("docker compose up -d && sleep 15 && docker compose ps --format 'table {{.Name}}\\t{{.Status}}'", timeout=120000, out="""\
 Container inventory-api-api-1  Recreate
 Container inventory-api-api-1  Recreated
 Container inventory-api-api-1  Starting
 Container inventory-api-api-1  Started
 Container inventory-api-api-1  Waiting
 Container inventory-api-api-1  Healthy
 Container inventory-api-nginx-1  Starting
 Container inventory-api-nginx-1  Started
NAME                    STATUS
inventory-api-api-1     Up 15 seconds (healthy)
inventory-api-nginx-1   Up 4 seconds""")
    s.say("`api` reports healthy and nginx starts only after that (`condition: service_healthy`).")
    s.end_turn()
    ok2 = s.user("perfect")
    s.end_turn()

    L.task(t1, "Shrink the 1.31GB inventory-api Docker image (multi-stage build, slim base, .dockerignore, libpq5 at runtime)")
    L.task(t2, "Add a docker-compose healthcheck for the api service and make nginx wait for it")
    L.lesson((t1, ok1), "pattern",
             "To shrink a Python service image, use a multi-stage build: compile wheels in a full `python` builder stage and install only those wheels into a `python:*-slim` final stage, leaving compilers and -dev headers out (here 1.31GB to 196MB).",
             "Agent rewrites the Dockerfile as builder + python:3.11-slim runtime, verifies the import and /health, image size drops to 196MB; the user confirms deploys got faster.",
             [["multi-stage", "multistage", "two-stage"], ["slim"]])
    L.lesson((typo_r, size), "pattern",
             "Add a `.dockerignore` excluding .git, .venv and test caches before `COPY . .`; without it the Docker build context here was 912MB instead of 41kB.",
             "First build log shows 'transferring context: 912.47MB'; after writing .dockerignore it is 41.20kB.",
             [[".dockerignore"], ["context", ".git", ".venv"]])
    L.lesson((imp, size), "error",
             "A psycopg2 wheel compiled in a builder stage fails at import in a python slim runtime image with \"ImportError: libpq.so.5: cannot open shared object file\"; install the runtime library `libpq5` (not libpq-dev) in the final stage.",
             "docker run ... import inventory.main raises the ImportError; after adding apt-get install libpq5 to the runtime stage the import prints ok.",
             [["libpq.so.5", "libpq5"], ["runtime", "final stage", "install"]])
    L.lesson((hc_fail, hc_ok), "error",
             "A compose healthcheck using `curl` fails in a python slim image (\"exec: \\\"curl\\\": executable file not found in $PATH\", container unhealthy); probe with the image's own Python (`python -c` with urllib.request) instead of installing curl.",
             "docker inspect shows the curl exec error and 'unhealthy'; after switching the test to python urllib, compose reports the api healthy and nginx starts.",
             [["healthcheck", "health check"], ["curl"], ["python", "urllib"]])
    L.non_lesson((typo, typo_fix), "Docker build fails with 'pull access denied' for docker.io/library/buider.",
                 "A typo in the COPY --from stage name made by the agent and fixed on the next call.")
    return s


def cc03_pip_venv_correction():
    s = CC("cc03_pip_venv_correction.jsonl", 103, "2026-01-16T10:20:00", "/home/dev/projects/feed-sync")
    L = s.labels
    s.session_start()
    t1 = s.user("can you get scripts/sync_feeds.py running? it needs requests-oauthlib I think")
    s.bash("python3 scripts/sync_feeds.py --dry-run", code=1, out="""\
Traceback (most recent call last):
  File "/home/dev/projects/feed-sync/scripts/sync_feeds.py", line 9, in <module>
    from requests_oauthlib import OAuth1Session
ModuleNotFoundError: No module named 'requests_oauthlib'""")
    _, pep = s.bash("pip install requests-oauthlib", code=1, out="""\
error: externally-managed-environment

× This environment is externally managed
╰─> To install Python packages system-wide, try apt install
    python3-xyz, where xyz is the package you are trying to
    install.

    If you wish to install a non-Debian-packaged Python package,
    create a virtual environment using python3 -m venv path/to/venv.
    Then use path/to/venv/bin/python and path/to/venv/bin/pip. Make
    sure you have python3-full installed.

    If you wish to install a non-Debian packaged Python application,
    it may be easiest to use pipx install xyz, which will manage a
    virtual environment for you. Make sure you have pipx installed.

    See /usr/share/doc/python3.11/README.venv for more information.

note: If you believe this is a mistake, please contact your Python installation or OS distribution provider. You can override this, at the risk of breaking your Python installation or OS, by passing --break-system-packages.
hint: See PEP 668 for the detailed specification.""")
    s.say("The system pip refuses to install. I'll install it system-wide with sudo.")
    rj, _, _ = s.reject("Bash", {"command": "sudo pip install requests-oauthlib", "description": "Install requests-oauthlib system-wide"})
    corr = s.user("no, don't use sudo pip — use a venv. never touch the system python on this box")
    s.say("Understood, no sudo and no system packages. I'll create a project virtualenv in `.venv`.")
    s.bash("ls && cat requirements.txt", out="README.md\nconfig\npytest.ini\nrequirements.txt\nscripts\ntests\nrequests-oauthlib==1.3.1\nfeedparser==6.0.11")
    s.bash("python3 -m venv .venv && .venv/bin/pip install -q -r requirements.txt && .venv/bin/pip list | grep -iE 'oauthlib|feedparser'",
           out="feedparser         6.0.11\noauthlib           3.2.2\nrequests-oauthlib  1.3.1")
    _, venv_ok = s.bash(".venv/bin/python scripts/sync_feeds.py --dry-run", code=1, out="""\
Traceback (most recent call last):
  File "/home/dev/projects/feed-sync/scripts/sync_feeds.py", line 11, in <module>
    import yaml
ModuleNotFoundError: No module named 'yaml'""")
    s.bash(".venv/bin/pip install yaml", code=1, out="""\
ERROR: Could not find a version that satisfies the requirement yaml (from versions: none)
ERROR: No matching distribution found for yaml""")
    s.say("The module is imported as `yaml`, but the package on PyPI is called **PyYAML**.")
    s.bash(".venv/bin/pip install -q PyYAML && .venv/bin/pip show PyYAML | head -2", out="Name: PyYAML\nVersion: 6.0.1")
    s.edit("/home/dev/projects/feed-sync/requirements.txt", "feedparser==6.0.11\n", "feedparser==6.0.11\nPyYAML==6.0.1\n")
    _, run_ok = s.bash(".venv/bin/python scripts/sync_feeds.py --dry-run",
                       out="loaded config/feeds.yaml: 14 feeds\nfetching... done (3.8s)\ndry run: 212 new items, nothing written")
    s.say("It runs now: 14 feeds, 212 new items in the dry run.\n\n- dependencies live in `.venv` (use `.venv/bin/python` "
          "or `source .venv/bin/activate`)\n- added the missing `PyYAML==6.0.1` to `requirements.txt`")
    s.end_turn()
    t2 = s.user("nice. can you add a pytest for parse_config()?")
    s.grep("def parse_config", "scripts/sync_feeds.py:24:def parse_config(path: Path) -> dict:")
    s.read("/home/dev/projects/feed-sync/scripts/sync_feeds.py", """\
#!/usr/bin/env python3
\"\"\"Pull configured feeds and push new items to the reader API.\"\"\"
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from requests_oauthlib import OAuth1Session
import feedparser
import yaml

DEFAULT_INTERVAL = 900


def parse_config(path: Path) -> dict:
    data = yaml.safe_load(path.read_text()) or {}
    feeds = data.get("feeds") or []
    if not isinstance(feeds, list):
        raise ValueError("feeds must be a list")
    for feed in feeds:
        feed.setdefault("interval", DEFAULT_INTERVAL)
    return {"feeds": feeds, "endpoint": data.get("endpoint", "http://localhost:8080")}
""")
    s.write("/home/dev/projects/feed-sync/tests/test_config.py", """\
import pytest

from sync_feeds import DEFAULT_INTERVAL, parse_config


def test_defaults_interval(tmp_path):
    cfg = tmp_path / "feeds.yaml"
    cfg.write_text("feeds:\\n  - url: https://example.invalid/a.xml\\n")
    assert parse_config(tmp_pth / "feeds.yaml")["feeds"][0]["interval"] == DEFAULT_INTERVAL


def test_empty_file(tmp_path):
    cfg = tmp_path / "feeds.yaml"
    cfg.write_text("")
    assert parse_config(cfg) == {"feeds": [], "endpoint": "http://localhost:8080"}


def test_feeds_must_be_list(tmp_path):
    cfg = tmp_path / "feeds.yaml"
    cfg.write_text("feeds: nope\\n")
    with pytest.raises(ValueError):
        parse_config(cfg)
""")
    s.bash(".venv/bin/pip install -q pytest", out="")
    _, nm = s.bash(".venv/bin/python -m pytest -q tests/test_config.py", code=1, out="""\
F..                                                                      [100%]
=================================== FAILURES ===================================
____________________________ test_defaults_interval ____________________________

tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-3/test_defaults_interval0')

    def test_defaults_interval(tmp_path):
        cfg = tmp_path / "feeds.yaml"
        cfg.write_text("feeds:\\n  - url: https://example.invalid/a.xml\\n")
>       assert parse_config(tmp_pth / "feeds.yaml")["feeds"][0]["interval"] == DEFAULT_INTERVAL
E       NameError: name 'tmp_pth' is not defined

tests/test_config.py:9: NameError
=========================== short test summary info ============================
FAILED tests/test_config.py::test_defaults_interval - NameError: name 'tmp_pth' is not defined
1 failed, 2 passed in 0.05s""")
    s.edit("/home/dev/projects/feed-sync/tests/test_config.py", 'parse_config(tmp_pth / "feeds.yaml")', "parse_config(cfg)")
    _, nm_ok = s.bash(".venv/bin/python -m pytest -q tests/test_config.py", out="...                                                                      [100%]\n3 passed in 0.04s")
    s.say("Added `tests/test_config.py` with three tests (default interval, empty file, non-list `feeds`); all pass. "
          "`pytest` is installed in `.venv` only.")
    s.end_turn()
    t3 = s.user("thanks! btw what's actually the difference between venv and virtualenv?")
    qa = s.say("Short version:\n\n- **venv** ships with Python 3.3+ in the standard library (`python3 -m venv`). On Debian/Ubuntu it needs the `python3-venv` package.\n"
               "- **virtualenv** is the older third-party tool that venv was based on. It is faster at creating environments (it caches seed packages), can target other interpreters, and supports Python 2.\n\n"
               "For a project like this, `python3 -m venv` is all you need.")
    s.end_turn()
    s.user("ok cool, that's all for today")
    s.end_turn()

    L.task(t1, "Get scripts/sync_feeds.py running (missing requests-oauthlib and PyYAML; install into a venv, not system pip)")
    L.task(t2, "Add pytest tests for parse_config()")
    L.task(t3, "Side question: difference between venv and virtualenv", kind="side-task")
    L.lesson((pep, run_ok), "error",
             "On Debian 12 / recent Ubuntu `pip install` outside a virtual environment fails with \"error: externally-managed-environment\" (PEP 668); create a project venv (`python3 -m venv .venv`) and install with `.venv/bin/pip`.",
             "pip install requests-oauthlib fails with the PEP 668 message; after python3 -m venv .venv and .venv/bin/pip install -r requirements.txt the script runs.",
             [["externally-managed", "externally managed", "pep 668"], ["venv", "virtual env"]])
    L.lesson((rj, corr), "correction",
             "The user rejected `sudo pip install` and said to use a venv and never touch the system Python on that machine.",
             "Agent's sudo pip call is rejected; user: \"no, don't use sudo pip — use a venv. never touch the system python on this box\".",
             [["sudo"], ["venv", "virtual env", "system python"]])
    L.lesson((venv_ok, run_ok), "error",
             "`ModuleNotFoundError: No module named 'yaml'` is fixed by installing the PyYAML distribution; `pip install yaml` finds no matching distribution because the import name and the package name differ.",
             "pip install yaml: 'No matching distribution found for yaml'; pip install PyYAML fixes the import and it is added to requirements.txt.",
             [["pyyaml"], ["yaml'", "import name", "no module named", "package name"]])
    L.non_lesson((nm, nm_ok), "pytest fails with NameError: name 'tmp_pth' is not defined in test_defaults_interval.",
                 "The agent's own typo in the test it had just written, fixed on the next edit.")
    L.non_lesson((t3, qa), "venv is in the standard library; virtualenv is a faster third-party tool that also supports Python 2.",
                 "General-knowledge answer to a side question; nothing was tried or verified in the session.")
    return s


def _todos(items, done, active):
    """TodoWrite items: the first `done` are completed, item `active` is in progress."""
    out = []
    for i, (content, form) in enumerate(items):
        status = "completed" if i < done else ("in_progress" if i == active else "pending")
        out.append((content, status, form))
    return out


def cc04_go_checklist():
    """The agent works through a TODO.md checklist on its own (next-subtask boundaries on assistant rows)."""
    s = CC("cc04_go_checklist.jsonl", 104, "2026-01-19T08:40:00", "/home/dev/projects/linkstat",
           branch="release-0.4", hooks=["~/.claude/hooks/guard.sh", "~/.claude/hooks/log-tool.sh"])
    L = s.labels
    s.session_start()
    t1 = s.user("Work through TODO.md in the repo root, it's what we need before the 0.4 release. Commit on this branch when everything is green.")
    s.read("/home/dev/projects/linkstat/TODO.md", """\
# Before 0.4
- [ ] build is broken since the chi upgrade (`go build ./...`)
- [ ] release binary for the arm64 box must be static (CGO_ENABLED=0), tests must pass that way too
- [ ] `go test -race ./...` reports a race in the stats collector
- [ ] add /healthz (200 + build version, version set at build time)
""")
    items = [("Fix go build after the chi upgrade", "Fixing go build after the chi upgrade"),
             ("Static arm64 build with CGO_ENABLED=0", "Making the arm64 build static"),
             ("Fix data race in stats collector", "Fixing the data race in the stats collector"),
             ("Add /healthz with build version", "Adding /healthz with build version"),
             ("Commit on release-0.4", "Committing on release-0.4")]
    s.todo(_todos(items, 0, 0))
    s.bash("go version && go build ./...", code=1, out="""\
go version go1.22.1 linux/amd64
internal/server/router.go:8:2: missing go.sum entry for module providing package github.com/go-chi/chi/v5 (imported by github.com/example-org/linkstat/internal/server); to add:
	go get github.com/example-org/linkstat/internal/server""")
    gosum = s.line
    s.bash("git log --oneline -3 -- go.mod go.sum && git diff HEAD~1 --stat", out="""\
a41c9e0 bump chi to v5
77d2b18 initial module
 go.mod                     | 2 +-
 internal/server/router.go  | 4 ++--
 2 files changed, 3 insertions(+), 3 deletions(-)""")
    s.say("The chi bump changed `go.mod` and the imports but never updated `go.sum`. `go mod tidy` will add the checksums and drop the old v1 entries.")
    s.bash("go mod tidy && git diff --stat go.mod go.sum && go build ./... && echo BUILD OK", out="""\
go: downloading github.com/go-chi/chi/v5 v5.0.12
 go.sum | 4 ++--
 1 file changed, 2 insertions(+), 2 deletions(-)
BUILD OK""")
    gosum_ok = s.line
    n2 = s.say("Item 1 done. Next: the static arm64 build.")
    s.todo(_todos(items, 1, 1))
    n2b, _ = s.bash("CGO_ENABLED=0 go test ./... 2>&1 | tail -12", out="""\
ok  	github.com/example-org/linkstat/internal/server	0.019s
--- FAIL: TestOpenMemory (0.00s)
    store_test.go:14: open store: Binary was compiled with 'CGO_ENABLED=0', go-sqlite3 requires cgo to work. This is a stub
--- FAIL: TestInsertAndCount (0.00s)
    store_test.go:31: open store: Binary was compiled with 'CGO_ENABLED=0', go-sqlite3 requires cgo to work. This is a stub
FAIL
FAIL	github.com/example-org/linkstat/internal/store	0.008s
ok  	github.com/example-org/linkstat/internal/stats	0.004s
FAIL""")
    cgo = s.line
    s.grep("go-sqlite3|sql.Open", "internal/store/store.go:9:\t_ \"github.com/mattn/go-sqlite3\"\ninternal/store/store.go:21:\tdb, err := sql.Open(\"sqlite3\", path)")
    s.say("`mattn/go-sqlite3` is a cgo binding; with `CGO_ENABLED=0` it compiles to a stub that fails at runtime. "
          "To get a static binary the store needs a pure-Go driver: `modernc.org/sqlite` registers itself as `\"sqlite\"` and needs no C toolchain.")
    s.bash("go get modernc.org/sqlite@v1.29.5", out="go: downloading modernc.org/sqlite v1.29.5\ngo: downloading modernc.org/libc v1.41.0\ngo: added modernc.org/sqlite v1.29.5")
    s.edit("/home/dev/projects/linkstat/internal/store/store.go", '\t_ "github.com/mattn/go-sqlite3"', '\t_ "modernc.org/sqlite"')
    s.edit("/home/dev/projects/linkstat/internal/store/store.go", 'sql.Open("sqlite3", path)', 'sql.Open("sqlite", path)')
    s.bash("go mod tidy && CGO_ENABLED=0 go test ./... && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o dist/linkstat-arm64 ./cmd/linkstat && file dist/linkstat-arm64", out="""\
ok  	github.com/example-org/linkstat/internal/server	0.021s
ok  	github.com/example-org/linkstat/internal/stats	0.005s
ok  	github.com/example-org/linkstat/internal/store	0.047s
dist/linkstat-arm64: ELF 64-bit LSB executable, ARM aarch64, version 1 (SYSV), statically linked, Go BuildID=Xq2-_Zr9c1/4hYVd, with debug_info, not stripped""")
    cgo_ok = s.line
    n3 = s.say("Static arm64 binary builds and all tests pass with CGO disabled. Next: the race in the stats collector.")
    s.todo(_todos(items, 2, 2))
    n3b, _ = s.bash("go test -race ./internal/stats/", code=1, out="""\
==================
WARNING: DATA RACE
Write at 0x00c0000a2090 by goroutine 9:
  runtime.mapassign_faststr()
      /usr/local/go/src/runtime/map_faststr.go:203 +0x0
  github.com/example-org/linkstat/internal/stats.(*Collector).Record()
      /home/dev/projects/linkstat/internal/stats/collector.go:24 +0x84
  github.com/example-org/linkstat/internal/stats.TestCollectorConcurrent.func1()
      /home/dev/projects/linkstat/internal/stats/collector_test.go:18 +0x6c

Previous read at 0x00c0000a2090 by goroutine 8:
  runtime.mapaccess1_faststr()
      /usr/local/go/src/runtime/map_faststr.go:13 +0x0
  github.com/example-org/linkstat/internal/stats.(*Collector).Snapshot()
      /home/dev/projects/linkstat/internal/stats/collector.go:30 +0x5c
  github.com/example-org/linkstat/internal/stats.TestCollectorConcurrent.func2()
      /home/dev/projects/linkstat/internal/stats/collector_test.go:24 +0x48
==================
--- FAIL: TestCollectorConcurrent (0.01s)
    testing.go:1398: race detected during execution of test
FAIL
FAIL	github.com/example-org/linkstat/internal/stats	0.027s
FAIL""")
    race = s.line
    s.read("/home/dev/projects/linkstat/internal/stats/collector.go", """\
package stats

import "time"

// Collector counts hits per short link.
type Collector struct {
	counts  map[string]int
	started time.Time
}

func New() *Collector {
	return &Collector{counts: map[string]int{}, started: time.Now()}
}

// Record is called from every request goroutine.
func (c *Collector) Record(slug string) {
	c.counts[slug]++
}

// Snapshot is called by the /stats handler.
func (c *Collector) Snapshot() map[string]int {
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}
""")
    s.edit("/home/dev/projects/linkstat/internal/stats/collector.go", 'import "time"', 'import (\n\t"sync"\n\t"time"\n)')
    s.edit("/home/dev/projects/linkstat/internal/stats/collector.go", "type Collector struct {\n\tcounts  map[string]int",
           "type Collector struct {\n\tmu      sync.Mutex\n\tcounts  map[string]int")
    s.edit("/home/dev/projects/linkstat/internal/stats/collector.go", "\tc.counts[slug]++\n",
           "\tc.mu.Lock()\n\tc.counts[slug]++\n\tc.mu.Unlock()\n")
    s.edit("/home/dev/projects/linkstat/internal/stats/collector.go", "\tout := make(map[string]int, len(c.counts))\n",
           "\tc.mu.Lock()\n\tdefer c.mu.Unlock()\n\tout := make(map[string]int, len(c.counts))\n")
    s.bash("go test -race ./internal/stats/", out="ok  \tgithub.com/example-org/linkstat/internal/stats\t1.043s")
    race_ok = s.line
    s.bash("go test ./...", code=1, out="""\
--- FAIL: TestServerShutdown (5.00s)
    server_test.go:61: shutdown: context deadline exceeded
FAIL
FAIL	github.com/example-org/linkstat/internal/server	5.024s
ok  	github.com/example-org/linkstat/internal/stats	0.006s
ok  	github.com/example-org/linkstat/internal/store	0.044s
FAIL""")
    flaky = s.line
    s.say("TestServerShutdown timed out, which is unrelated to the collector change. Re-running it on its own to see if it's flaky.")
    s.bash("go test -count=1 -run TestServerShutdown ./internal/server/ && go test -count=1 ./...", out="""\
ok  	github.com/example-org/linkstat/internal/server	0.412s
ok  	github.com/example-org/linkstat/internal/server	0.398s
ok  	github.com/example-org/linkstat/internal/stats	0.006s
ok  	github.com/example-org/linkstat/internal/store	0.045s""")
    flaky_ok = s.line
    n4 = s.say("Passes on re-run with nothing changed, so that was a flaky timing test. Race fixed. Last code item: /healthz.")
    s.todo(_todos(items, 3, 3))
    n4b, _ = s.read("/home/dev/projects/linkstat/internal/buildinfo/buildinfo.go", """\
package buildinfo

// Version is overwritten at build time via -ldflags.
var Version = "dev"
""")
    s.edit("/home/dev/projects/linkstat/internal/server/router.go", '\tr.Get("/stats", s.handleStats)\n',
           '\tr.Get("/stats", s.handleStats)\n\tr.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {\n\t\tw.Header().Set("Content-Type", "application/json")\n\t\tfmt.Fprintf(w, `{"status":"ok","version":%q}`, buildinfo.Version)\n\t})\n')
    s.edit("/home/dev/projects/linkstat/internal/server/router.go", '\t"github.com/go-chi/chi/v5"\n',
           '\t"github.com/go-chi/chi/v5"\n\n\t"github.com/example-org/linkstat/internal/buildinfo"\n')
    s.write("/home/dev/projects/linkstat/internal/server/healthz_test.go", """\
package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthz(t *testing.T) {
	srv := httptest.NewServer(New(nil, nil).Router())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	buf := new(strings.Builder)
	_, _ = buf.ReadFrom(res.Body)
	if !strings.Contains(buf.String(), `"status":"ok"`) {
		t.Fatalf("body %s", buf.String())
	}
}
""")
    s.bash("go test -count=1 ./internal/server/", out="ok  \tgithub.com/example-org/linkstat/internal/server\t0.433s")
    s.bash("go build -ldflags \"-X buildinfo.Version=0.4.0\" -o /tmp/linkstat ./cmd/linkstat && (/tmp/linkstat -addr :18080 & sleep 1; curl -s localhost:18080/healthz; kill %1)",
           out='{"status":"ok","version":"dev"}')
    ld = s.line
    s.say("The version stayed `dev`: `-X` silently ignores a symbol it can't find, and it needs the **full import path** of the package, not just its name.")
    s.bash("go build -ldflags \"-X github.com/example-org/linkstat/internal/buildinfo.Version=0.4.0\" -o /tmp/linkstat ./cmd/linkstat && (/tmp/linkstat -addr :18080 & sleep 1; curl -s localhost:18080/healthz; kill %1)",
           out='{"status":"ok","version":"0.4.0"}')
    ld_ok = s.line
    s.edit("/home/dev/projects/linkstat/Makefile",
           "LDFLAGS :=\n", "LDFLAGS := -X github.com/example-org/linkstat/internal/buildinfo.Version=$(VERSION)\n")
    n5 = s.say("/healthz works and reports the build version. Everything is green, committing.")
    s.todo(_todos(items, 4, 4))
    n5b, _ = s.bash("git status --short", out=" M Makefile\n M TODO.md\n M go.mod\n M go.sum\n M internal/server/router.go\n M internal/stats/collector.go\n M internal/store/store.go\n?? dist/\n?? internal/server/healthz_test.go")
    s.edit("/home/dev/projects/linkstat/TODO.md", "- [ ] build", "- [x] build")
    s.bash("git add Makefile TODO.md go.mod go.sum internal/ && git commit -q -m \"Fix build, static arm64 build (pure-Go sqlite), collector race, /healthz\" && git log --oneline -1",
           out="c9e1f03 Fix build, static arm64 build (pure-Go sqlite), collector race, /healthz")
    s.todo(_todos(items, 5, -1))
    s.say("All TODO items are done and committed on `release-0.4` (c9e1f03):\n\n1. `go mod tidy` added the missing chi v5 checksums\n"
          "2. switched `mattn/go-sqlite3` → `modernc.org/sqlite` so `CGO_ENABLED=0` builds and tests work; arm64 binary is static\n"
          "3. `sync.Mutex` around the collector map; `go test -race` is clean\n4. `/healthz` returns status + version; the Makefile sets it with "
          "`-X github.com/example-org/linkstat/internal/buildinfo.Version=$(VERSION)`\n\n`dist/` is left untracked. Note `TestServerShutdown` failed once with a timeout and passed on re-run.")
    s.end_turn()
    s.user("great, thanks")
    s.end_turn()

    L.task(t1, "Work through TODO.md before 0.4: first item, fix `go build` after the chi v5 upgrade (missing go.sum entries)")
    L.task(n2, "Make the arm64 release build static with CGO_ENABLED=0 (swap cgo sqlite driver for a pure-Go one)", "next-subtask", (n2, n2b))
    L.task(n3, "Fix the data race in the stats collector reported by go test -race", "next-subtask", (n3, n3b))
    L.task(n4, "Add a /healthz endpoint returning the build version set via -ldflags", "next-subtask", (n4, n4b))
    L.task(n5, "Commit the release-0.4 work", "next-subtask", (n5, n5b))
    L.lesson((gosum, gosum_ok), "error",
             "\"missing go.sum entry for module providing package\" after bumping a dependency in go.mod (here chi to v5) is fixed by running `go mod tidy`, which writes the missing checksums.",
             "go build fails naming github.com/go-chi/chi/v5; go mod tidy updates go.sum and the build passes.",
             [["go.sum"], ["go mod tidy"]])
    L.lesson((cgo, cgo_ok), "error",
             "With CGO_ENABLED=0 the mattn/go-sqlite3 driver is a stub that fails at runtime (\"Binary was compiled with 'CGO_ENABLED=0', go-sqlite3 requires cgo to work\"); for static builds switch to the pure-Go modernc.org/sqlite driver (driver name \"sqlite\").",
             "CGO_ENABLED=0 go test fails in internal/store; after go get modernc.org/sqlite and changing the import and sql.Open name, tests pass and the arm64 binary is statically linked.",
             [["cgo"], ["modernc", "pure-go", "pure go"]])
    L.lesson((race, race_ok), "error",
             "`go test -race` reported a DATA RACE on a plain map written by request goroutines and read by a snapshot method; guarding both with a sync.Mutex made the race detector pass.",
             "WARNING: DATA RACE in Collector.Record/Snapshot; after adding mu sync.Mutex the -race run is ok.",
             [["race"], ["mutex", "lock"]])
    L.lesson((ld, ld_ok), "error",
             "`go build -ldflags \"-X pkg.Var=value\"` silently does nothing unless the symbol is given by its full import path (e.g. github.com/org/repo/internal/buildinfo.Version); a short package name leaves the default value.",
             "With -X buildinfo.Version the binary still reports version dev; with the full import path it reports 0.4.0.",
             [["-x", "ldflags"], ["import path", "full path", "fully qualified"]])
    L.non_lesson((flaky, flaky_ok), "TestServerShutdown fails with 'context deadline exceeded' after the collector change.",
                 "A flaky timing test: it passed on re-run with nothing changed; the session found no cause and no fix.")
    return s


def cc05_rust_toolchain():
    s = CC("cc05_rust_toolchain.jsonl", 105, "2026-01-20T13:05:00", "/home/dev/projects/tilegen", model="claude-sonnet-4-5")
    L = s.labels
    s.session_start()
    t1 = s.user("cargo build fails after I pulled main, can you fix it?")
    s.bash("cargo build", code=101, out="""\
error: failed to parse manifest at `/home/dev/projects/tilegen/Cargo.toml`

Caused by:
  feature `edition2024` is required

  The package requires the Cargo feature called `edition2024`, but that feature is not stabilized in this version of Cargo (1.79.0 (ffa9cf99a 2024-06-03)).
  Consider trying a newer version of Cargo (this may require the nightly release).
  See https://doc.rust-lang.org/nightly/cargo/reference/unstable.html#edition-2024 for more information about the status of this feature.""")
    ed = s.line
    s.bash("cargo --version && rustup show active-toolchain && git log -1 --format=%h%x20%s -- Cargo.toml && grep -nE '^(edition|rust-version)' Cargo.toml",
           out="cargo 1.79.0 (ffa9cf99a 2024-06-03)\nstable-x86_64-unknown-linux-gnu (default)\n5e0a7d2 Move to edition 2024\n4:edition = \"2024\"\n5:rust-version = \"1.85\"")
    fact = s.line
    s.say("Main moved the crate to `edition = \"2024\"` with `rust-version = \"1.85\"`, but the local stable toolchain is 1.79. "
          "Edition 2024 is stable from Rust 1.85, so updating the stable toolchain should be enough.")
    s.bash("rustup update stable", timeout=600000, out="""\
info: syncing channel updates for 'stable-x86_64-unknown-linux-gnu'
info: latest update on 2025-02-20, rust version 1.85.0 (4d91de4e4 2025-02-17)
info: downloading component 'cargo'
info: downloading component 'clippy'
info: downloading component 'rust-docs'
info: downloading component 'rust-std'
info: downloading component 'rustc'
info: downloading component 'rustfmt'
info: removing previous version of component 'cargo'
info: installing component 'cargo'
info: installing component 'clippy'
info: installing component 'rust-docs'
info: installing component 'rust-std'
info: installing component 'rustc'
info: installing component 'rustfmt'

  stable-x86_64-unknown-linux-gnu updated - rustc 1.85.0 (4d91de4e4 2025-02-17) (from rustc 1.79.0 (129f3b996 2024-06-10))

info: checking for self-update""")
    s.bash("cargo build 2>&1 | tail -40", code=101, out="""\
   Compiling libc v0.2.155
   Compiling pkg-config v0.3.30
   Compiling cc v1.1.6
   Compiling openssl-sys v0.9.102
   Compiling serde v1.0.204
error: failed to run custom build command for `openssl-sys v0.9.102`

Caused by:
  process didn't exit successfully: `/home/dev/projects/tilegen/target/debug/build/openssl-sys-7c1f0e2b9a8d4e3f/build-script-main` (exit status: 101)
  --- stdout
  cargo:rerun-if-env-changed=X86_64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR
  X86_64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR unset
  cargo:rerun-if-env-changed=OPENSSL_LIB_DIR
  OPENSSL_LIB_DIR unset
  cargo:rerun-if-env-changed=OPENSSL_DIR
  OPENSSL_DIR unset
  cargo:rerun-if-env-changed=OPENSSL_NO_PKG_CONFIG
  run pkg_config fail: Could not run `PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 "pkg-config" "--libs" "--cflags" "openssl"`
  The pkg-config command could not be found.

  --- stderr
  thread 'main' panicked at /home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/openssl-sys-0.9.102/build/find_normal.rs:190:5:


  Could not find directory of OpenSSL installation, and this `-sys` crate cannot
  proceed without this knowledge. If OpenSSL is installed and this crate had
  trouble finding it,  you can set the `OPENSSL_DIR` environment variable for the
  compilation process.

  Make sure you also have the development packages of openssl installed.
  For example, `libssl-dev` on Ubuntu or `openssl-devel` on Fedora.

  If you're in a situation where you think the directory *should* be found
  automatically, please open an issue at https://github.com/sfackler/rust-openssl
  and include the following information:

  $HOST = x86_64-unknown-linux-gnu
  $TARGET = x86_64-unknown-linux-gnu
  openssl-sys = 0.9.102

  note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
warning: build failed, waiting for other jobs to finish...""")
    ossl = s.line
    s.bash("sudo apt-get install -y -qq pkg-config libssl-dev", out="Selecting previously unselected package pkg-config.\nSelecting previously unselected package libssl-dev:amd64.\nSetting up pkg-config (1.8.1-1) ...\nSetting up libssl-dev:amd64 (3.0.11-1~deb12u2) ...")
    s.bash("cargo build 2>&1 | tail -3", timeout=600000, out="   Compiling reqwest v0.12.5\n   Compiling tilegen v0.9.0 (/home/dev/projects/tilegen)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 48.21s")
    built = s.line
    s.say("Builds now. Two things were missing: the toolchain was too old for edition 2024 (updated stable 1.79 → 1.85), "
          "and the machine had no `pkg-config`/`libssl-dev`, which `openssl-sys` needs. Installed both.")
    s.end_turn()
    t2 = s.user("thanks. from now on please answer in British English, the docs team copies your summaries verbatim into the changelog. "
                "can you write a short changelog entry for the edition bump?")
    pref = s.line
    s.read("/home/dev/projects/tilegen/CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n## 0.9.0\n\n- Add WebP output.\n- Faster tile cache warm-up.\n")
    s.edit("/home/dev/projects/tilegen/CHANGELOG.md", "## Unreleased\n\n",
           "## Unreleased\n\n- Moved the crate to the Rust 2024 edition; the minimum supported Rust version is now 1.85.\n"
           "- Building from source now requires the OpenSSL development headers (`libssl-dev` or equivalent) and `pkg-config`, "
           "which were previously assumed to be present.\n\n")
    s.say("Added under *Unreleased*:\n\n> - Moved the crate to the Rust 2024 edition; the minimum supported Rust version is now 1.85.\n"
          "> - Building from source now requires the OpenSSL development headers (`libssl-dev` or equivalent) and `pkg-config`, which were previously assumed to be present.\n\n"
          "I've kept the wording neutral so it can be copied as is; I'll use British spelling (e.g. *behaviour*, *optimise*) from here on.")
    s.end_turn()
    t3 = s.user("lovely. cargo test has one failure in the tiling module, can you look at it?")
    s.bash("cargo test tiles 2>&1 | tail -15", code=101, out="""\
running 6 tests
test tiles::tests::splits_even_sizes ... ok
test tiles::tests::zero_size_is_empty ... ok
test tiles::tests::splits_odd_sizes ... FAILED

failures:

---- tiles::tests::splits_odd_sizes stdout ----
thread 'tiles::tests::splits_odd_sizes' panicked at src/tiles.rs:88:9:
assertion `left == right` failed
  left: 4
 right: 6
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tiles::tests::splits_odd_sizes

test result: FAILED. 5 passed; 1 failed; 0 ignored; 0 measured; 14 filtered out; finished in 0.00s""")
    tf = s.line
    s.read("/home/dev/projects/tilegen/src/tiles.rs", """\
pub fn grid(width: u32, height: u32, tile: u32) -> (u32, u32) {
    if width == 0 || height == 0 {
        return (0, 0);
    }
    let cols = width / tile;
    let rows = height / tile;
    (cols, rows)
}
""")
    s.say("`grid` drops the partial tile at the right/bottom edge: 300×200 with 100px tiles should be 3×2 = 6 tiles, and "
          "with a 130px tile the integer division gives 2×1. Using ceiling division keeps the edge tiles.")
    s.edit("/home/dev/projects/tilegen/src/tiles.rs", "    let cols = width / tile;\n    let rows = height / tile;",
           "    let cols = width.div_ceil(tile);\n    let rows = height.div_ceil(tile);")
    s.bash("cargo test 2>&1 | grep 'test result'", out="test result: ok. 20 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.03s\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.41s")
    tf_ok = s.line
    s.say("Fixed: `grid` now rounds up with `div_ceil`, so partial edge tiles are counted. All 23 tests pass.")
    s.end_turn()

    L.task(t1, "Fix cargo build after pulling main (edition 2024 needs a newer toolchain; openssl-sys needs pkg-config and libssl-dev)")
    L.task(t2, "Write a changelog entry for the edition bump (user asks for British English from now on)")
    L.task(t3, "Fix the failing tiles::tests::splits_odd_sizes test")
    L.lesson((ed, built), "error",
             "Cargo failing with \"feature `edition2024` is required ... not stabilized in this version of Cargo\" means the toolchain is older than Rust 1.85; `rustup update stable` fixes it, no nightly needed.",
             "cargo 1.79 rejects the manifest after main moved to edition 2024 / rust-version 1.85; after rustup update stable the manifest parses.",
             [["edition2024", "edition 2024"], ["rustup update", "1.85", "newer toolchain", "upgrade"]])
    L.lesson((ossl, built), "error",
             "The openssl-sys build script panics with \"Could not find directory of OpenSSL installation\" when pkg-config and the OpenSSL headers are missing; install `pkg-config` and `libssl-dev` (openssl-devel on Fedora).",
             "cargo build fails in openssl-sys (pkg-config not found); after apt-get install pkg-config libssl-dev the build finishes.",
             [["openssl"], ["libssl-dev", "pkg-config", "openssl-devel"]])
    L.lesson((pref, pref), "preference",
             "In the tilegen repo the user wants answers in British English because the docs team copies the agent's summaries into the changelog.",
             "Stated by the user at the start of the changelog request: \"from now on please answer in British English\".",
             [["british"], ["english", "spelling"]])
    L.non_lesson((fact, fact), "The local cargo on this machine is 1.79.0.",
                 "A one-off fact about the state of one machine before it was updated; not true after the session.")
    L.non_lesson((tf, tf_ok), "Tile grid counts should use div_ceil so partial edge tiles are counted.",
                 "A logic bug in this repository's own function, fixed against its own test; no reusable tool or environment lesson.")
    return s


def cc06_postgres_orders():
    s = CC("cc06_postgres_orders.jsonl", 106, "2026-01-21T09:30:00", "/home/dev/projects/analytics")
    L = s.labels
    s.session_start()
    t1 = s.user("how many orders were refunded last month? it's in the analytics DB ($ANALYTICS_DB_URL)")
    s.bash("psql \"$ANALYTICS_DB_URL\" -c '\\dt'", out="""\
              List of relations
 Schema |       Name        | Type  |   Owner
--------+-------------------+-------+-----------
 public | customers         | table | analytics
 public | order_items       | table | analytics
 public | orders            | table | analytics
 public | orders_v2         | table | analytics
 public | products          | table | analytics
 public | refunds_legacy    | table | analytics
 public | schema_migrations | table | analytics
(7 rows)""")
    s.bash("psql \"$ANALYTICS_DB_URL\" -c \"SELECT count(*) FROM orders WHERE status = 'refunded' AND updated_at >= date_trunc('month', now()) - interval '1 month' AND updated_at < date_trunc('month', now());\"",
           out=" count\n-------\n    37\n(1 row)")
    wrong = s.say("**37** orders were refunded last month (`orders` with `status = 'refunded'`, updated between the first of last month and the first of this month).")
    s.end_turn()
    corr = s.user("that's the wrong table, it's orders_v2. orders is the legacy one, nothing has been written to it since march")
    s.say("Sorry, re-running against `orders_v2`.")
    s.bash("psql \"$ANALYTICS_DB_URL\" -c \"SELECT count(*) FROM orders_v2 WHERE refunded_at >= date_trunc('month', now()) - interval '1 month' AND refunded_at < date_trunc('month', now());\"",
           code=1, out="""\
ERROR:  column "refunded_at" does not exist
LINE 1: SELECT count(*) FROM orders_v2 WHERE refunded_at >= date_tru...
                                             ^
HINT:  Perhaps you meant to reference the column "orders_v2.refund_at".""")
    col = s.line
    s.bash("psql \"$ANALYTICS_DB_URL\" -c \"SELECT count(*) FROM orders_v2 WHERE refund_at >= date_trunc('month', now()) - interval '1 month' AND refund_at < date_trunc('month', now());\"",
           out=" count\n-------\n  1284\n(1 row)")
    col_ok = s.line
    ans = s.say("**1,284** orders were refunded last month according to `orders_v2` (by `refund_at`). I'll use `orders_v2` for order questions from now on.")
    s.end_turn()
    cmd = s.command("cost", "Total cost:            $0.21\nTotal duration (API):  48.2s\nTotal duration (wall): 6m 12.9s\nTotal code changes:    0 lines added, 0 lines removed")
    t2 = s.user("the status lookups on orders_v2 are slow. add an index on (status, created_at). it's prod, so don't lock the table")
    s.bash("ls migrations | tail -3 && sed -n '1,12p' Makefile", out="""\
0039_products_sku_unique.sql
0040_refunds_view.sql
0041_orders_v2_refund_at.sql
PENDING = $(shell ./scripts/pending-migrations.sh)

migrate:  ## apply pending migrations, each file in its own transaction
	@for f in $(PENDING); do \\
	  echo "applying $$f"; \\
	  psql "$$ANALYTICS_DB_URL" --single-transaction -v ON_ERROR_STOP=1 -f $$f || exit 3; \\
	  psql "$$ANALYTICS_DB_URL" -qc "INSERT INTO schema_migrations (version) VALUES ('$$(basename $$f .sql)')"; \\
	done""")
    s.write("/home/dev/projects/analytics/migrations/0042_orders_v2_status_created_idx.sql",
            "-- Build without blocking writes on orders_v2.\nCREATE INDEX CONCURRENTLY IF NOT EXISTS idx_orders_v2_status_created\n    ON orders_v2 (status, created_at);\n")
    s.bash("make migrate", code=2, out="""\
applying migrations/0042_orders_v2_status_created_idx.sql
psql:migrations/0042_orders_v2_status_created_idx.sql:2: ERROR:  CREATE INDEX CONCURRENTLY cannot run inside a transaction block
make: *** [Makefile:4: migrate] Error 3""")
    conc = s.line
    s.say("`CREATE INDEX CONCURRENTLY` can't run inside a transaction, and `make migrate` wraps every file in "
          "`--single-transaction`. For this one file I'll run psql without that flag and record the version by hand, "
          "then check the index came out valid (a failed concurrent build leaves an INVALID index behind).")
    s.bash("psql \"$ANALYTICS_DB_URL\" -v ON_ERROR_STOP=1 -f migrations/0042_orders_v2_status_created_idx.sql && psql \"$ANALYTICS_DB_URL\" -qc \"INSERT INTO schema_migrations (version) VALUES ('0042_orders_v2_status_created_idx')\"",
           timeout=600000, out="CREATE INDEX")
    s.bash("psql \"$ANALYTICS_DB_URL\" -c \"SELECT indexrelid::regclass, indisvalid FROM pg_index WHERE indexrelid = 'idx_orders_v2_status_created'::regclass;\" -c \"EXPLAIN SELECT id FROM orders_v2 WHERE status = 'pending' AND created_at > now() - interval '1 day';\"",
           out="""\
          indexrelid          | indisvalid
------------------------------+------------
 idx_orders_v2_status_created | t
(1 row)

                                              QUERY PLAN
------------------------------------------------------------------------------------------------------
 Index Scan using idx_orders_v2_status_created on orders_v2  (cost=0.43..412.77 rows=118 width=8)
   Index Cond: (((status)::text = 'pending'::text) AND (created_at > (now() - '1 day'::interval)))
(2 rows)""")
    conc_ok = s.line
    s.edit("/home/dev/projects/analytics/migrations/0042_orders_v2_status_created_idx.sql",
           "-- Build without blocking writes on orders_v2.\n",
           "-- Build without blocking writes on orders_v2.\n-- NOTE: cannot run in a transaction; apply with plain `psql -f`, not `make migrate`.\n")
    s.say("Index `idx_orders_v2_status_created` is built (valid) and the status lookup now uses an index scan. No table lock was taken. "
          "I added a note to the migration file that it must be applied outside a transaction.")
    s.end_turn()
    t3 = s.user("another one: the reporting container can't connect to the db since we moved it to the new docker network")
    s.bash("docker compose exec reporting psql \"$ANALYTICS_DB_URL\" -c 'select 1'", code=2, out="""\
psql: error: connection to server at "10.0.4.12", port 5432 failed: FATAL:  no pg_hba.conf entry for host "172.18.0.5", user "reporting", database "analytics", no encryption""")
    hba = s.line
    s.bash("docker network inspect analytics_reporting -f '{{(index .IPAM.Config 0).Subnet}}' && sudo grep -vE '^(#|$)' /etc/postgresql/15/main/pg_hba.conf",
           out="""\
172.18.0.0/16
local   all             postgres                                peer
local   all             all                                     peer
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
host    analytics       reporting       172.17.0.0/16           scram-sha-256""")
    s.say("`pg_hba.conf` only admits the reporting user from the old default bridge (172.17.0.0/16); the new network is 172.18.0.0/16. "
          "Adding a line for it and reloading (pg_hba changes need a reload, not a restart).")
    s.bash("echo 'host    analytics       reporting       172.18.0.0/16           scram-sha-256' | sudo tee -a /etc/postgresql/15/main/pg_hba.conf >/dev/null && sudo -u postgres psql -tAc 'SELECT pg_reload_conf()'",
           out="t")
    s.bash("docker compose exec reporting psql \"$ANALYTICS_DB_URL\" -c 'select 1'", out=" ?column?\n----------\n        1\n(1 row)")
    hba_ok = s.line
    s.say("The reporting container connects again.")
    s.end_turn()
    t4 = s.user("cool. what postgres version is that box on btw?")
    s.bash("psql \"$ANALYTICS_DB_URL\" -tAc 'select version()'", out="PostgreSQL 15.5 (Debian 15.5-1.pgdg120+1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit")
    ver = s.say("PostgreSQL **15.5** (Debian package from the PGDG repo).")
    s.end_turn()

    L.task(t1, "Count the orders refunded last month in the analytics DB (user corrects the table to orders_v2)")
    L.task(t2, "Add an index on orders_v2 (status, created_at) in prod without locking the table", window=(cmd, t2))
    L.task(t3, "Fix the reporting container's DB connection after the move to a new Docker network (pg_hba.conf)")
    L.task(t4, "Side question: which PostgreSQL version runs on the DB host", "side-task")
    L.lesson((wrong, corr), "correction",
             "In the analytics database, order questions must use the orders_v2 table; orders is the legacy table that has not been written since March (user correction after the agent queried orders).",
             "Agent answers 37 from orders; the user: \"that's the wrong table, it's orders_v2. orders is the legacy one\"; re-run gives 1,284. Repository-specific.",
             [["orders_v2"], ["legacy", "wrong table", "not orders", "instead of orders"]])
    L.lesson((conc, conc_ok), "error",
             "`CREATE INDEX CONCURRENTLY` fails with \"cannot run inside a transaction block\" when a migration runner wraps files in a transaction (psql --single-transaction); run that file with plain `psql -f` and check `pg_index.indisvalid` afterwards.",
             "make migrate fails on the CONCURRENTLY statement; psql without --single-transaction builds the index, indisvalid is t and EXPLAIN uses it.",
             [["concurrently"], ["transaction"]])
    L.lesson((hba, hba_ok), "error",
             "\"FATAL: no pg_hba.conf entry for host 172.18.0.5\" after moving a client container to a new Docker network means pg_hba.conf only lists the old subnet; add a host line for the new subnet and `SELECT pg_reload_conf()` (no restart needed).",
             "docker network inspect shows 172.18.0.0/16, pg_hba only allows 172.17.0.0/16; after appending a line and reloading, select 1 works from the container.",
             [["pg_hba"], ["subnet", "reload", "host line", "network"]])
    L.non_lesson((col, col_ok), "The refund timestamp column in orders_v2 is refund_at, not refunded_at.",
                 "The agent guessed a column name; psql's HINT gave the right one and the next query worked. A schema detail, not a lesson.")
    L.non_lesson((t4, ver), "The analytics DB host runs PostgreSQL 15.5.",
                 "A one-off fact answered to a side question.")
    return s


def cc07_k8s_staging():
    s = CC("cc07_k8s_staging.jsonl", 107, "2026-01-22T07:55:00", "/home/dev/projects/platform-deploy",
           hooks=["~/.claude/hooks/guard.sh"])
    L = s.labels
    s.session_start()
    t1 = s.user("api pods on staging are in CrashLoopBackOff since this morning's deploy, can you check?")
    s.bash("kubectl get pods -n shop -l app=api", out="""\
NAME                   READY   STATUS             RESTARTS      AGE
api-7d9f8c6b5-k2xlp    0/1     CrashLoopBackOff   6 (38s ago)   14m
api-7d9f8c6b5-q8vzn    0/1     CrashLoopBackOff   6 (51s ago)   14m""")
    s.bash("kubectl describe pod api-7d9f8c6b5-k2xlp -n shop | sed -n '/Last State/,/Ready:/p;/Limits:/,/Requests:/p'", out="""\
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Thu, 22 Jan 2026 07:41:12 +0000
      Finished:     Thu, 22 Jan 2026 07:41:19 +0000
    Ready:          False
    Limits:
      memory:  128Mi
    Requests:""")
    oom = s.line
    s.bash("kubectl logs api-7d9f8c6b5-k2xlp -n shop --previous | tail -4", out="""\
2026-01-22T07:41:12Z INFO  starting api v3.14.0
2026-01-22T07:41:12Z INFO  connecting to postgres at db.shop.svc:5432
2026-01-22T07:41:13Z INFO  warming product catalogue cache (48213 items)""")
    s.bash("git log --oneline -3 -- services/api k8s/api", out="e1f07c2 api: warm catalogue cache on startup\n90b3aa1 api: bump to 3.13\n4c2d8e7 k8s: api probes")
    s.say("The container is **OOMKilled** (exit 137) a few seconds after start, right while warming the catalogue cache that "
          "this morning's commit added. The memory limit is still 128Mi. I'll raise the request/limit.")
    s.edit("/home/dev/projects/platform-deploy/k8s/api/deployment.yaml",
           "          resources:\n            requests:\n              memory: 96Mi\n            limits:\n              memory: 128Mi",
           "          resources:\n            requests:\n              memory: 256Mi\n            limits:\n              memory: 512Mi")
    s.bash("kubectl apply -f k8s/api/deployment.yaml && kubectl rollout status deploy/api -n shop --timeout=180s && kubectl top pod -n shop -l app=api",
           timeout=240000, out="""\
deployment.apps/api configured
Waiting for deployment "api" rollout to finish: 1 out of 2 new replicas have been updated...
Waiting for deployment "api" rollout to finish: 1 old replicas are pending termination...
deployment "api" successfully rolled out
NAME                   CPU(cores)   MEMORY(bytes)
api-5c8b7f9d4-7mfqh    41m          311Mi
api-5c8b7f9d4-tx9cw    38m          306Mi""")
    oom_ok = s.line
    s.say("Rolled out: both pods are Running and settle at ~310Mi, so the old 128Mi limit could never fit the warmed cache. "
          "New values: request 256Mi, limit 512Mi. Remember to commit `k8s/api/deployment.yaml`.")
    s.end_turn()
    t2 = s.user("worker is stuck in ImagePullBackOff too, different problem I think")
    s.bash("kubectl describe pod -n shop -l app=worker | grep -A3 'Failed to pull' | head -4", out="""\
  Warning  Failed     2m11s (x4 over 3m40s)  kubelet  Failed to pull image "registry.example.internal/shop/worker:1.8.2": failed to pull and unpack image "registry.example.internal/shop/worker:1.8.2": failed to resolve reference "registry.example.internal/shop/worker:1.8.2": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://registry.example.internal/token?scope=repository%3Ashop%2Fworker%3Apull&service=registry: 401 Unauthorized""")
    pull = s.line
    s.bash("kubectl get secret -n shop --field-selector type=kubernetes.io/dockerconfigjson && kubectl get deploy api worker -n shop -o custom-columns=NAME:.metadata.name,PULLSECRETS:.spec.template.spec.imagePullSecrets",
           out="NAME      TYPE                             DATA   AGE\nregcred   kubernetes.io/dockerconfigjson   1      212d\nNAME     PULLSECRETS\napi      [map[name:regcred]]\nworker   <none>")
    s.say("The registry wants credentials (401 on the token request). The `regcred` pull secret exists in the namespace and the "
          "api deployment references it, but the worker's pod spec has no `imagePullSecrets`, so kubelet pulls anonymously.")
    s.edit("/home/dev/projects/platform-deploy/k8s/worker/deployment.yaml",
           "    spec:\n      containers:\n        - name: worker",
           "    spec:\n      imagePullSecrets:\n        - name: regcred\n      containers:\n        - name: worker")
    s.bash("kubectl apply -f k8s/worker/deployment.yaml && kubectl rollout status deploy/worker -n shop --timeout=180s",
           timeout=240000, out="deployment.apps/worker configured\nWaiting for deployment \"worker\" rollout to finish: 0 of 1 updated replicas are available...\ndeployment \"worker\" successfully rolled out")
    pull_ok = s.line
    s.say("Worker pulled the image and is running.")
    s.end_turn()
    t3 = s.user("thanks. from now on always pass --context explicitly on every kubectl command, prod is in the same kubeconfig "
                "and I don't want accidents. now scale the worker to 3 on staging")
    s.bash("kubectl config get-contexts -o name", out="prod\nstaging")
    s.bash("kubectl --context staging -n shop scale deploy/worker --replicas=3 && kubectl --context staging -n shop get pods -l app=worker",
           out="deployment.apps/worker scaled\nNAME                      READY   STATUS    RESTARTS   AGE\nworker-6f4d9b8c7-2jrkd    1/1     Running   0          4m\nworker-6f4d9b8c7-hq5wx    1/1     Running   0          6s\nworker-6f4d9b8c7-zp7mn    1/1     Running   0          6s")
    s.say("Scaled to 3 on `staging`; all three are Running. I'll pass `--context` on every kubectl call from here on.")
    s.end_turn()
    t4 = s.user("last thing: the nightly export cronjob failed, check the logs")
    s.bash("kubectl --context staging -n shop get jobs --sort-by=.metadata.creationTimestamp | tail -2 && kubectl --context staging -n shop logs job/export-29467320 | tail -3",
           out="""\
NAME             COMPLETIONS   DURATION   AGE
export-29467320  0/1           6h12m      6h12m
2026-01-22T01:00:04Z INFO  exporting 1872 orders
2026-01-22T01:00:09Z ERROR upload failed: Put "https://storage.example.internal/exports/2026-01-21.csv.gz": tls: failed to verify certificate: x509: certificate signed by unknown authority
2026-01-22T01:00:09Z FATAL giving up after 3 attempts""")
    x509 = s.line
    s.say("The export itself worked; the upload fails TLS verification: the storage endpoint presents a certificate the job's image doesn't trust. "
          "Let me re-run the job once to see if it's persistent.")
    rj, _, _ = s.reject("Bash", {"command": "kubectl --context staging -n shop create job --from=cronjob/export export-manual-1", "description": "Re-run the export job once"})
    rj_why = s.user("don't rerun it, it would push a partial export. leave it, the storage team rotated their cert yesterday, I'll ask them tomorrow")
    end = s.say("OK, leaving it. For tomorrow: the job fails with `x509: certificate signed by unknown authority` against "
                "storage.example.internal, so either the new cert's CA needs to be added to the job image/trust bundle or "
                "the storage team's chain is incomplete.")
    s.end_turn()

    L.task(t1, "Diagnose and fix api pods in CrashLoopBackOff on staging (OOMKilled; raise memory limit)")
    L.task(t2, "Fix the worker's ImagePullBackOff (401 from the registry; add imagePullSecrets)")
    L.task(t3, "Scale the worker to 3 replicas on staging (user states the --context rule)")
    L.task(t4, "Check why the nightly export cronjob failed (x509 error on upload; left unresolved)")
    L.lesson((oom, oom_ok), "error",
             "A pod in CrashLoopBackOff whose last state is `OOMKilled` / exit code 137 is hitting its memory limit; check usage with `kubectl top pod` and raise resources.requests/limits.memory (here 128Mi to 512Mi).",
             "describe shows OOMKilled/137 with a 128Mi limit; after raising it the rollout succeeds and pods use about 310Mi.",
             [["oomkilled", "exit code 137", "137"], ["limit"]])
    L.lesson((pull, pull_ok), "error",
             "ImagePullBackOff with `401 Unauthorized` from a private registry while a dockerconfigjson secret exists in the namespace means the pod spec does not reference it; add `imagePullSecrets: [{name: regcred}]` to the deployment.",
             "describe shows the 401 on the token request; worker has no imagePullSecrets while api uses regcred; after adding it the rollout succeeds.",
             [["imagepullsecrets"], ["401", "unauthorized", "imagepullbackoff"]])
    L.lesson((t3, t3), "preference",
             "The user wants every kubectl command to pass --context explicitly, because prod and staging share one kubeconfig.",
             "Stated by the user: \"from now on always pass --context explicitly on every kubectl command\". Repository/user-specific.",
             [["--context"], ["always", "every", "explicit"]])
    L.non_lesson((x509, end), "The nightly export job fails with x509: certificate signed by unknown authority when uploading to storage.",
                 "Unresolved: the session ends with the error diagnosed but not fixed (the user defers to another team).")
    L.non_lesson((rj, rj_why), "Do not re-run the export cronjob manually.",
                 "A rejected tool call with a situation-specific reason (it would push a partial export that day); not a general rule.")
    return s


def cc08_git_branches():
    s = CC("cc08_git_branches.jsonl", 108, "2026-01-23T16:10:00", "/home/dev/projects/handbook")
    L = s.labels
    s.session_start()
    t1 = s.user("commit the README changes and push")
    s.bash("git stauts", code=1, out="git: 'stauts' is not a git command. See 'git --help'.\n\nThe most similar command is\n\tstatus")
    typo = s.line
    s.bash("git status --short --branch", out="## main...origin/main\n M README.md")
    typo_ok = s.line
    rj, _, _ = s.reject("Bash", {"command": "git add README.md && git commit -m \"docs: update local setup section\" && git push",
                                  "description": "Commit README and push"})
    pref = s.user("never commit directly to main in this repo. always make a branch and open a PR")
    s.say("Got it, feature branch + PR.")
    s.bash("git switch -c docs/readme-setup && git add README.md && git commit -m \"docs: update local setup section\"",
           out="Switched to a new branch 'docs/readme-setup'\n[docs/readme-setup 2b7e9d1] docs: update local setup section\n 1 file changed, 14 insertions(+), 6 deletions(-)")
    s.bash("git push", code=128, out="""\
fatal: The current branch docs/readme-setup has no upstream branch.
To push the current branch and set the remote as upstream, use

    git push --set-upstream origin docs/readme-setup

To have this happen automatically for branches without a tracking
upstream, see 'push.autoSetupRemote' in 'git help config'.
""")
    up = s.line
    s.bash("git push -u origin docs/readme-setup", out="""\
remote:
remote: Create a pull request for 'docs/readme-setup' on GitHub by visiting:
remote:      https://github.com/example-org/handbook/pull/new/docs/readme-setup
remote:
To github.com:example-org/handbook.git
 * [new branch]      docs/readme-setup -> docs/readme-setup
branch 'docs/readme-setup' set up to track 'origin/docs/readme-setup'.""")
    up_ok = s.line
    s.bash("gh pr create --fill", out="https://github.com/example-org/handbook/pull/57")
    s.say("Committed on `docs/readme-setup`, pushed with upstream tracking and opened PR #57.")
    s.end_turn()
    t2 = s.user("main moved on in the meantime, rebase the branch on latest main")
    s.bash("git fetch -q && git rebase origin/main", code=1, out="""\
Auto-merging package-lock.json
CONFLICT (content): Merge conflict in package-lock.json
error: could not apply 2b7e9d1... docs: update local setup section
hint: Resolve all conflicts manually, mark them as resolved with
hint: "git add/rm <conflicted_files>", then run "git rebase --continue".
hint: You can instead skip this commit with "git rebase --skip".
hint: To abort and get back to the state before "git rebase", run "git rebase --abort".
Could not apply 2b7e9d1... docs: update local setup section""")
    lock = s.line
    s.bash("git diff --name-only --diff-filter=U && git show --stat HEAD@{1} | head -5", out="package-lock.json\ncommit 2b7e9d1\n    docs: update local setup section\n\n README.md         | 20 ++++++++------\n package-lock.json |  6 ++--")
    s.say("Only `package-lock.json` conflicts (my commit picked up a local `npm install` change). Lockfiles shouldn't be merged by "
          "hand: I'll take main's version and let npm regenerate it. Careful, during a rebase `--ours` is the branch being "
          "rebased onto (origin/main) and `--theirs` is my commit.")
    s.bash("git checkout --ours package-lock.json && npm install --package-lock-only --ignore-scripts && git add package-lock.json && GIT_EDITOR=true git rebase --continue",
           out="\nup to date, audited 388 packages in 2s\n\nfound 0 vulnerabilities\n[detached HEAD 6c0a4f2] docs: update local setup section\n 1 file changed, 14 insertions(+), 6 deletions(-)\nSuccessfully rebased and updated refs/heads/docs/readme-setup.")
    s.bash("npm ci --silent && npm run lint:md && git push --force-with-lease", out="\n> handbook@1.0.0 lint:md\n> markdownlint '**/*.md' --ignore node_modules\n\nTo github.com:example-org/handbook.git\n + 2b7e9d1...6c0a4f2 docs/readme-setup -> docs/readme-setup (forced update)")
    lock_ok = s.line
    s.say("Rebased onto origin/main; the lockfile conflict is gone (main's lockfile, regenerated), `npm ci` and the markdown lint pass, "
          "and the branch is force-pushed with `--force-with-lease`.")
    s.end_turn()
    t3 = s.user("ugh, I just noticed the last commit on this branch also has .env in it, with the AWS keys. get it out of there")
    s.bash("git show --stat --format=%h HEAD && git show HEAD:.env", out="""\
6c0a4f2
 .env      |  3 +++
 README.md | 20 ++++++++------
 2 files changed, 17 insertions(+), 6 deletions(-)
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
AWS_REGION=eu-west-1""")
    env1 = s.line
    s.bash("git rm --cached .env && (grep -qx '.env' .gitignore || echo '.env' >> .gitignore) && git add .gitignore && git commit --amend --no-edit && git push --force-with-lease",
           out="rm '.env'\n[docs/readme-setup 0d93b5a] docs: update local setup section\n Date: Fri Jan 23 16:10:41 2026 +0000\n 2 files changed, 15 insertions(+), 6 deletions(-)\nTo github.com:example-org/handbook.git\n + 6c0a4f2...0d93b5a docs/readme-setup -> docs/readme-setup (forced update)")
    s.bash("git show --stat --format=%h HEAD && ls -la .env", out="0d93b5a\n .gitignore |  1 +\n README.md  | 20 ++++++++------\n 2 files changed, 15 insertions(+), 6 deletions(-)\n-rw-r--r-- 1 dev dev 118 Jan 23 15:02 .env")
    env_ok = s.line
    s.say("`.env` is out of the commit (still on disk, now in `.gitignore`), the commit was amended and force-pushed.\n\n"
          "**But** the old commit was already pushed to GitHub, and PR #57's timeline keeps force-pushed commits reachable, so treat "
          "that key pair as leaked: rotate it in IAM now.")
    s.end_turn()
    done = s.user("done, rotated. thanks")
    s.end_turn()

    L.task(t1, "Commit the README changes and push (user: never commit to main; branch, push with upstream, open a PR)")
    L.task(t2, "Rebase the PR branch on the latest main (package-lock.json conflict)")
    L.task(t3, "Remove an accidentally committed .env (AWS keys) from the last commit on the branch")
    L.lesson((rj, pref), "preference",
             "In the handbook repo never commit directly to main: always create a feature branch and open a pull request.",
             "The agent's commit-and-push on main is rejected; the user: \"never commit directly to main in this repo. always make a branch and open a PR\".",
             [["directly to main", "on main", "to main"], ["never", "don't", "do not", "always"]])
    L.lesson((up, up_ok), "error",
             "`git push` on a new local branch fails with \"fatal: The current branch ... has no upstream branch\" (exit 128); push once with `git push -u origin <branch>` (or set push.autoSetupRemote).",
             "git push exits 128; git push -u origin docs/readme-setup pushes and sets tracking.",
             [["upstream"], ["-u origin", "--set-upstream", "autosetupremote"]])
    L.lesson((lock, lock_ok), "pattern",
             "When a rebase conflicts only in package-lock.json, don't hand-merge it: take the upstream copy (`git checkout --ours` during a rebase means the branch being rebased onto), regenerate with `npm install --package-lock-only`, `git add` it and `git rebase --continue`.",
             "Rebase stops on a package-lock.json conflict; the agent takes origin/main's lockfile, regenerates it, continues the rebase, npm ci and lint pass, and force-pushes with --force-with-lease.",
             [["package-lock", "lockfile", "lock file"], ["regenerat", "--package-lock-only"]])
    L.lesson((env1, done), "pattern",
             "To drop a secrets file from the last (already pushed) commit: `git rm --cached .env`, add it to .gitignore, `git commit --amend --no-edit`, `git push --force-with-lease`, and rotate the exposed keys because the pushed commit stays reachable.",
             "HEAD contains .env with (example) AWS keys; after rm --cached, amend and force-with-lease the commit no longer lists .env; the user rotates the key and thanks the agent.",
             [["rm --cached"], ["amend"]])
    L.non_lesson((typo, typo_ok), "git: 'stauts' is not a git command.",
                 "The agent's typo, corrected on the very next call.")
    return s


def cc09_django_sprint():
    """Long session: the agent works through GitHub issues on its own, with a user side-task and a compaction."""
    s = CC("cc09_django_sprint.jsonl", 109, "2026-01-26T09:00:00", "/home/dev/projects/clinic-booking",
           branch="sprint-12", hooks=["~/.claude/hooks/guard.sh"], slug="quiet-orbiting-lantern")
    L = s.labels
    P = "/home/dev/projects/clinic-booking"
    s.session_start(commands=["~/.claude/hooks/notify.sh start", "~/.claude/hooks/load-context.sh"])
    t1 = s.user("work through the open sprint-12 issues (gh issue list --label sprint-12), one commit per issue, "
                "on the sprint-12 branch. open a PR when you're done")
    s.think("List the issues, then plan them in a todo list. One commit per issue.")
    s.bash("gh issue list --label sprint-12 --state open", out="""\
#45	N+1 queries on /appointments/ list	perf, sprint-12	about 1 day ago
#44	Export appointments as iCal	feature, sprint-12, blocked	about 2 days ago
#43	Static files 404 when DEBUG=False	bug, sprint-12	about 3 days ago
#42	Switch test runner to pytest	chore, sprint-12	about 3 days ago
#41	makemigrations creates a new migration on every run	bug, sprint-12	about 4 days ago""")
    s.bash("gh issue view 44 --json labels,body -q '.body'", out="Blocked until the design for the calendar feed is agreed (see discussion in #39). Do not start yet.")
    skip = s.say("#44 is labelled *blocked* and its body says not to start yet, so I'll skip it. Plan: #41, #42, #43, #45, then the PR.")
    items = [("#41 makemigrations creates a migration on every run", "Fixing #41"),
             ("#42 switch test runner to pytest", "Switching to pytest (#42)"),
             ("#43 static files 404 with DEBUG=False", "Fixing static files (#43)"),
             ("#45 N+1 queries on /appointments/", "Fixing N+1 queries (#45)"),
             ("Push sprint-12 and open PR", "Opening the PR")]
    s.todo(_todos(items, 0, 0))
    s.bash("gh issue view 41 -q .body --json body", out="Every `python manage.py makemigrations` produces a new `AlterField` for `Appointment.created_at`, even with no model changes. We have 0012 and 0013 that are identical apart from the timestamp.")
    s.bash(".venv/bin/python manage.py makemigrations --check --dry-run", code=1, out="""\
Migrations for 'bookings':
  bookings/migrations/0014_alter_appointment_created_at.py
    - Alter field created_at on appointment""")
    mig = s.line
    s.grep("created_at", "bookings/models.py:38:    created_at = models.DateTimeField(default=timezone.now())\nbookings/models.py:61:        ordering = [\"-created_at\"]", path=f"{P}/bookings")
    s.bash("sed -n '1,20p' bookings/migrations/0013_alter_appointment_created_at.py", out="""\
# Generated by Django 4.2.9 on 2026-01-21 10:14

import datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("bookings", "0012_alter_appointment_created_at"),
    ]

    operations = [
        migrations.AlterField(
            model_name="appointment",
            name="created_at",
            field=models.DateTimeField(default=datetime.datetime(2026, 1, 21, 10, 14, 2, 118833, tzinfo=datetime.timezone.utc)),
        ),
    ]""")
    s.say("Found it: `default=timezone.now()` *calls* the function once at import time, so the default is a fixed datetime "
          "that changes on every process start, and the autodetector sees a new default each time (the migration literally "
          "contains `datetime.datetime(2026, 1, 21, ...)`). The default must be the callable `timezone.now`.")
    s.edit(f"{P}/bookings/models.py", "    created_at = models.DateTimeField(default=timezone.now())",
           "    created_at = models.DateTimeField(default=timezone.now)")
    s.bash(".venv/bin/python manage.py makemigrations bookings -n created_at_callable_default", out="""\
Migrations for 'bookings':
  bookings/migrations/0014_created_at_callable_default.py
    - Alter field created_at on appointment""")
    s.bash(".venv/bin/python manage.py makemigrations --check --dry-run && .venv/bin/python manage.py makemigrations --check --dry-run", out="No changes detected\nNo changes detected")
    mig_ok = s.line
    s.bash(".venv/bin/python manage.py test bookings -v 1 2>&1 | tail -3", out="----------------------------------------------------------------------\nRan 58 tests in 3.912s\n\nOK")
    s.bash("git add bookings/models.py bookings/migrations/0014_created_at_callable_default.py && git commit -q -m \"Use callable default for Appointment.created_at (fixes #41)\" && git log --oneline -1",
           out="3e8d0a1 Use callable default for Appointment.created_at (fixes #41)")
    n2 = s.say("#41 done. Next, #42: switch the test runner to pytest.")
    s.todo(_todos(items, 1, 1))
    n2b, _ = s.bash("gh issue view 42 -q .body --json body", out="Use pytest + pytest-django instead of `manage.py test` locally and in CI. Existing TestCase classes should keep working.")
    s.bash("ls config/settings/ && cat requirements-dev.txt && ls pytest.ini setup.cfg pyproject.toml 2>&1", code=2, out="""\
__init__.py
base.py
local.py
production.py
test.py
-r requirements.txt
coverage==7.4.0
factory-boy==3.3.0
ls: cannot access 'pytest.ini': No such file or directory
ls: cannot access 'setup.cfg': No such file or directory
ls: cannot access 'pyproject.toml': No such file or directory""")
    s.bash(".venv/bin/pip install -q pytest==8.0.0 pytest-django==4.8.0 && .venv/bin/pytest -q 2>&1 | tail -25", code=2, out="""\
==================================== ERRORS ====================================
_______________ ERROR collecting bookings/tests/test_models.py ________________
bookings/tests/test_models.py:3: in <module>
    from bookings.models import Appointment
bookings/models.py:9: in <module>
    class Clinic(models.Model):
.venv/lib/python3.12/site-packages/django/db/models/base.py:129: in __new__
    app_config = apps.get_containing_app_config(module)
.venv/lib/python3.12/site-packages/django/apps/registry.py:260: in get_containing_app_config
    self.check_apps_ready()
.venv/lib/python3.12/site-packages/django/apps/registry.py:137: in check_apps_ready
    settings.INSTALLED_APPS
.venv/lib/python3.12/site-packages/django/conf/__init__.py:89: in __getattr__
    self._setup(name)
.venv/lib/python3.12/site-packages/django/conf/__init__.py:69: in _setup
    raise ImproperlyConfigured(
E   django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not configured. You must either define the environment variable DJANGO_SETTINGS_MODULE or call settings.configure() before accessing settings.
=========================== short test summary info ============================
ERROR bookings/tests/test_models.py - django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not configured. You must either define the environment variable DJANGO_SETTINGS_MODULE or call settings.configure() before accessing settings.
!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.31s""")
    dsm = s.line
    s.say("pytest-django needs to know the settings module; `manage.py` sets it, pytest doesn't. Putting it in `pytest.ini` "
          "makes it work for everyone and in CI without an env var.")
    s.write(f"{P}/pytest.ini", "[pytest]\nDJANGO_SETTINGS_MODULE = config.settings.test\npython_files = tests.py test_*.py *_tests.py\naddopts = --reuse-db\n")
    s.bash(".venv/bin/pytest -q 2>&1 | tail -3", out="..........................................................               [100%]\n58 passed in 4.12s")
    dsm_ok = s.line
    s.edit(f"{P}/requirements-dev.txt", "factory-boy==3.3.0\n", "factory-boy==3.3.0\npytest==8.0.0\npytest-django==4.8.0\n")
    s.read(f"{P}/.github/workflows/ci.yml", """\
name: CI
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        env:
          POSTGRES_PASSWORD: postgres
        ports: ["5432:5432"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install -r requirements-dev.txt
      - run: python manage.py test
        env:
          DJANGO_SETTINGS_MODULE: config.settings.test
""")
    s.edit(f"{P}/.github/workflows/ci.yml", "      - run: python manage.py test\n        env:\n          DJANGO_SETTINGS_MODULE: config.settings.test\n",
           "      - run: pytest -q\n")
    s.bash("git add pytest.ini requirements-dev.txt .github/workflows/ci.yml && git commit -q -m \"Run tests with pytest + pytest-django (closes #42)\" && git log --oneline -1",
           out="a7c52f9 Run tests with pytest + pytest-django (closes #42)")
    s.say("#42 done: 58 tests pass under pytest; CI runs `pytest -q`. Moving on to #43.")
    s.end_turn()
    side = s.user("quick one while you're at it: bump Django to 4.2.11 in requirements.txt, there's a security release")
    s.bash("grep -n '^Django' requirements.txt", out="1:Django==4.2.9")
    s.edit(f"{P}/requirements.txt", "Django==4.2.9\n", "Django==4.2.11\n")
    s.bash(".venv/bin/pip install -q -r requirements.txt && .venv/bin/python -m django --version && .venv/bin/pytest -q 2>&1 | tail -1",
           out="4.2.11\n58 passed in 4.07s")
    s.bash("git add requirements.txt && git commit -q -m \"Bump Django to 4.2.11 (security release)\" && git log --oneline -1",
           out="0b4f6e3 Bump Django to 4.2.11 (security release)")
    s.say("Django is on 4.2.11, tests pass, committed separately.")
    n3 = s.say("Back to the list: #43, static files returning 404 with DEBUG=False.")
    s.todo(_todos(items, 2, 2))
    n3b, _ = s.bash("gh issue view 43 -q .body --json body", out="On the staging container (DEBUG=False, gunicorn, no nginx in front) every /static/ URL returns 404 and the admin is unstyled.")
    s.bash("grep -nE 'STATIC|MIDDLEWARE|whitenoise' config/settings/base.py config/settings/production.py", out="""\
config/settings/base.py:34:MIDDLEWARE = [
config/settings/base.py:101:STATIC_URL = "static/"
config/settings/base.py:102:STATICFILES_DIRS = [BASE_DIR / "static"]""")
    s.bash("DJANGO_SETTINGS_MODULE=config.settings.production DJANGO_SECRET_KEY=dummy-not-a-secret .venv/bin/gunicorn config.wsgi -b 127.0.0.1:8011 --daemon --pid /tmp/gc.pid && sleep 2 && curl -s -o /dev/null -w '%{http_code}\\n' localhost:8011/static/css/app.css; kill $(cat /tmp/gc.pid)",
           out="404")
    st = s.line
    s.say("Reproduced. With `DEBUG=False` Django doesn't serve static files at all, and there's no nginx in front on staging. "
          "The usual fix for a single-container deploy is WhiteNoise: collect files into `STATIC_ROOT` and serve them from the WSGI app.")
    s.bash(".venv/bin/pip install -q whitenoise==6.6.0 && echo 'whitenoise==6.6.0' >> requirements.txt", out="")
    s.read(f"{P}/config/settings/base.py", """\
from pathlib import Path
import os

BASE_DIR = Path(__file__).resolve().parent.parent.parent
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "bookings",
    "patients",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
""")
    s.edit(f"{P}/config/settings/base.py", '    "django.middleware.security.SecurityMiddleware",\n',
           '    "django.middleware.security.SecurityMiddleware",\n    "whitenoise.middleware.WhiteNoiseMiddleware",\n')
    s.edit(f"{P}/config/settings/base.py", 'STATICFILES_DIRS = [BASE_DIR / "static"]',
           'STATICFILES_DIRS = [BASE_DIR / "static"]\nSTATIC_ROOT = BASE_DIR / "staticfiles"\nSTORAGES = {\n    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},\n    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},\n}')
    s.bash("DJANGO_SECRET_KEY=dummy-not-a-secret .venv/bin/python manage.py collectstatic --noinput --settings=config.settings.production | tail -1",
           out="142 static files copied to '/home/dev/projects/clinic-booking/staticfiles', 398 post-processed.")
    s.bash("DJANGO_SETTINGS_MODULE=config.settings.production DJANGO_SECRET_KEY=dummy-not-a-secret .venv/bin/gunicorn config.wsgi -b 127.0.0.1:8011 --daemon --pid /tmp/gc.pid && sleep 2 && curl -s -o /dev/null -w '%{http_code}\\n' localhost:8011/static/css/app.css && curl -s -o /dev/null -w '%{http_code}\\n' localhost:8011/static/admin/css/base.css; kill $(cat /tmp/gc.pid)",
           out="200\n200")
    st_ok = s.line
    s.bash(".venv/bin/pytest -q 2>&1 | tail -6", code=1, out="""\
FAILED bookings/tests/test_views.py::AppointmentListTests::test_list_renders - ValueError: Missing staticfiles manifest entry for 'css/app.css'
FAILED bookings/tests/test_views.py::AppointmentListTests::test_list_paginates - ValueError: Missing staticfiles manifest entry for 'css/app.css'
FAILED patients/tests/test_views.py::PatientDetailTests::test_detail_renders - ValueError: Missing staticfiles manifest entry for 'css/app.css'
FAILED patients/tests/test_views.py::PatientDetailTests::test_detail_404 - ValueError: Missing staticfiles manifest entry for 'css/app.css'
FAILED patients/tests/test_views.py::PatientSearchTests::test_search - ValueError: Missing staticfiles manifest entry for 'css/app.css'
5 failed, 53 passed in 4.66s""")
    man = s.line
    s.say("The manifest storage needs `collectstatic` to have run, which the tests don't do. Tests should use the plain storage.")
    s.read(f"{P}/config/settings/test.py", 'from .base import *  # noqa: F403\n\nSECRET_KEY = "test-only-not-secret"\nDEBUG = False\nPASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]\n')
    s.edit(f"{P}/config/settings/test.py", 'PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]\n',
           'PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]\n\n# The manifest storage needs collectstatic; tests use plain storage.\nSTORAGES = {\n    **STORAGES,  # noqa: F405\n    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},\n}\n')
    s.bash(".venv/bin/pytest -q 2>&1 | tail -1", out="58 passed in 4.21s")
    man_ok = s.line
    s.bash("echo 'staticfiles/' >> .gitignore && git add requirements.txt config/settings/base.py config/settings/test.py .gitignore && git commit -q -m \"Serve static files with WhiteNoise when DEBUG=False (fixes #43)\" && git log --oneline -1",
           out="f18a2c7 Serve static files with WhiteNoise when DEBUG=False (fixes #43)")
    s.say("#43 committed. Note for deploy: the Dockerfile must run `collectstatic` at build time; it already does (`RUN python manage.py collectstatic --noinput`).")
    s.todo(_todos(items, 3, 3))
    cont = s.compact("""\
1. The user asked to work through the open GitHub issues labelled sprint-12 on branch sprint-12, one commit per issue, then open a PR.
2. #44 is labelled blocked ("do not start yet") and was skipped.
3. #41 fixed: `created_at` used `default=timezone.now()`; changed to the callable, migration 0014 generated, `makemigrations --check` clean. Commit 3e8d0a1.
4. #42 done: pytest + pytest-django, `pytest.ini` with DJANGO_SETTINGS_MODULE = config.settings.test, CI runs `pytest -q`. Commit a7c52f9.
5. User side request: Django bumped to 4.2.11, commit 0b4f6e3.
6. #43 done: WhiteNoise middleware + STATIC_ROOT + CompressedManifestStaticFilesStorage; test settings override staticfiles storage to StaticFilesStorage because manifest storage failed tests ("Missing staticfiles manifest entry"). Commit f18a2c7.

Pending tasks:
- #45 N+1 queries on /appointments/
- push sprint-12 and open the PR

Current work: about to start #45.""")
    n4 = s.say("Continuing with #45, the N+1 queries on the appointments list.")
    n4b, _ = s.bash("gh issue view 45 -q .body --json body", out="/appointments/ takes 2-3 s with ~50 appointments on the page. Debug toolbar shows ~150 queries.")
    s.read(f"{P}/bookings/views.py", """\
from django.contrib.auth.mixins import LoginRequiredMixin
from django.views.generic import ListView

from .models import Appointment


class AppointmentListView(LoginRequiredMixin, ListView):
    model = Appointment
    paginate_by = 50
    template_name = "bookings/appointment_list.html"

    def get_queryset(self):
        return Appointment.objects.filter(clinic__in=self.request.user.clinics.all()).order_by("starts_at")
""")
    s.grep("appointment\\.", """\
bookings/templates/bookings/appointment_list.html:14:      <td>{{ appointment.patient.full_name }}</td>
bookings/templates/bookings/appointment_list.html:15:      <td>{{ appointment.practitioner.display_name }}</td>
bookings/templates/bookings/appointment_list.html:16:      <td>{{ appointment.clinic.name }}</td>
bookings/templates/bookings/appointment_list.html:17:      <td>{{ appointment.starts_at|date:"D j M H:i" }}</td>""", path=f"{P}/bookings/templates")
    s.say("Each row touches three foreign keys (patient, practitioner, clinic), i.e. 3 extra queries per appointment. I'll first pin "
          "the behaviour with a query-count test, then fix it with `select_related`.")
    s.write(f"{P}/bookings/tests/test_queries.py", """\
import pytest
from django.urls import reverse

from bookings.tests.factories import AppointmentFactory, UserWithClinicFactory


@pytest.mark.django_db
def test_appointment_list_query_count(client, django_assert_max_num_queries):
    user = UserWithClinicFactory()
    AppointmentFactory.create_batch(20, clinic=user.clinics.first())
    client.force_login(user)
    with django_assert_max_num_queries(8):
        response = client.get(reverse("bookings:appointment-list"))
    assert response.status_code == 200
""")
    s.bash(".venv/bin/pytest -q bookings/tests/test_queries.py 2>&1 | tail -8", code=1, out="""\
E           Failed: Expected to perform 8 queries or less but 67 were done (add -v option to show queries)

bookings/tests/test_queries.py:11: Failed
=========================== short test summary info ============================
FAILED bookings/tests/test_queries.py::test_appointment_list_query_count - Failed: Expected to perform 8 queries or less but 67 were done (add -v option to show queries)
1 failed in 0.88s""")
    nq = s.line
    s.edit(f"{P}/bookings/views.py",
           '        return Appointment.objects.filter(clinic__in=self.request.user.clinics.all()).order_by("starts_at")',
           '        return (\n            Appointment.objects.filter(clinic__in=self.request.user.clinics.all())\n'
           '            .select_related("patient", "practitioner", "clinic")\n            .order_by("starts_at")\n        )')
    s.bash(".venv/bin/pytest -q bookings/tests/test_queries.py -v 2>&1 | grep -E 'PASSED|queries'", out="bookings/tests/test_queries.py::test_appointment_list_query_count PASSED                [100%]")
    nq_ok = s.line
    s.bash(".venv/bin/pytest -q 2>&1 | tail -4", code=1, out="""\
FAILED patients/tests/test_reminders.py::test_reminder_sent_24h_before - AssertionError: assert 0 == 1
 +  where 0 = len([])
 +    where [] = <django.core.mail.outbox>
1 failed, 58 passed in 4.37s""")
    flaky = s.line
    s.say("`test_reminder_sent_24h_before` is unrelated to the query change. Re-running it to check whether it's timing-dependent.")
    s.bash(".venv/bin/pytest -q patients/tests/test_reminders.py -p no:randomly && .venv/bin/pytest -q 2>&1 | tail -1", out="....                                                                     [100%]\n4 passed in 0.31s\n59 passed in 4.30s")
    flaky_ok = s.line
    s.bash("git add bookings/views.py bookings/tests/test_queries.py && git commit -q -m \"select_related on the appointment list (fixes #45)\" && git log --oneline -1",
           out="9d2b7c4 select_related on the appointment list (fixes #45)")
    n5 = s.say("#45 fixed (67 → 4 queries for 20 appointments). All issues done; pushing and opening the PR.")
    s.todo(_todos(items, 4, 4))
    n5b, _ = s.bash("git push -u origin sprint-12", out="To github.com:example-org/clinic-booking.git\n * [new branch]      sprint-12 -> sprint-12\nbranch 'sprint-12' set up to track 'origin/sprint-12'.")
    s.bash("gh pr create --base main --title \"Sprint 12: #41 #42 #43 #45\" --body \"Fixes #41, closes #42, fixes #43, fixes #45. Also bumps Django to 4.2.11. #44 skipped (blocked). Note: test_reminder_sent_24h_before failed once and passed on re-run; looks time-dependent.\"",
           out="https://github.com/example-org/clinic-booking/pull/112")
    s.todo(_todos(items, 5, -1))
    s.say("PR #112 is open against main:\n\n| issue | fix | commit |\n|---|---|---|\n| #41 | callable `default=timezone.now` + migration 0014 | 3e8d0a1 |\n"
          "| #42 | pytest + pytest-django, `pytest.ini`, CI | a7c52f9 |\n| — | Django 4.2.11 | 0b4f6e3 |\n| #43 | WhiteNoise + STATIC_ROOT; plain storage in tests | f18a2c7 |\n"
          "| #45 | `select_related` + query-count test | 9d2b7c4 |\n\n#44 skipped (blocked). `test_reminder_sent_24h_before` failed once and passed on re-run; mentioned in the PR.")
    s.end_turn()
    s.user("great work, thanks")
    s.end_turn()

    L.task(t1, "Work through the open sprint-12 issues one commit each, then a PR: survey, skip blocked #44, fix #41 (timezone.now() default causing endless migrations)")
    L.task(n2, "#42: switch the test runner to pytest + pytest-django (settings module in pytest.ini, CI)", "next-subtask", (n2, n2b))
    L.task(side, "User interjection: bump Django to 4.2.11 for a security release", "side-task")
    L.task(n3, "#43: serve static files with DEBUG=False (WhiteNoise, STATIC_ROOT, plain storage in tests)", "next-subtask", (n3, n3b))
    L.task(n4, "#45: remove N+1 queries on the appointment list (query-count test + select_related), resumed after a context compaction",
           "after-continuation", (cont, n4b))
    L.task(n5, "Push the sprint-12 branch and open the PR", "next-subtask", (n5, n5b))
    L.lesson((mig, mig_ok), "error",
             "If `makemigrations` generates a new AlterField on every run, look for a model default that calls a function (`default=timezone.now()`): pass the callable (`default=timezone.now`) so the default isn't a fixed datetime evaluated at import.",
             "makemigrations --check keeps reporting created_at; the migration contains a literal datetime; after changing to the callable and one last migration, --check says No changes detected.",
             [["timezone.now"], ["callable", "without parentheses", "not call"]])
    L.lesson((dsm, dsm_ok), "error",
             "Running Django tests under pytest fails at collection with \"ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not configured\"; install pytest-django and set `DJANGO_SETTINGS_MODULE = ...` in pytest.ini.",
             "pytest errors during collection; after writing pytest.ini with DJANGO_SETTINGS_MODULE = config.settings.test, 58 tests pass.",
             [["django_settings_module"], ["pytest.ini", "pytest-django", "pytest"]])
    L.lesson((st, st_ok), "error",
             "With DEBUG=False and no web server in front, Django returns 404 for /static/ URLs; add WhiteNoise middleware right after SecurityMiddleware, set STATIC_ROOT and run collectstatic.",
             "curl /static/css/app.css returns 404 under gunicorn with production settings; after WhiteNoise + STATIC_ROOT + collectstatic both app and admin CSS return 200.",
             [["whitenoise"], ["static"]])
    L.lesson((man, man_ok), "error",
             "With a manifest static storage (ManifestStaticFilesStorage / CompressedManifestStaticFilesStorage) tests that render templates fail with \"ValueError: Missing staticfiles manifest entry\"; override the staticfiles storage with the plain StaticFilesStorage in test settings.",
             "5 view tests fail after enabling the manifest storage; overriding STORAGES['staticfiles'] in config/settings/test.py makes all 58 pass.",
             [["manifest"], ["test settings", "tests", "staticfilesstorage"]])
    L.lesson((nq, nq_ok), "pattern",
             "Pin an N+1 fix in Django with a query-count test (pytest-django `django_assert_max_num_queries`) and fix it with `select_related` on the foreign keys the template touches.",
             "New test fails with 67 queries for 20 rows; after select_related('patient', 'practitioner', 'clinic') it passes.",
             [["n+1", "query count", "num_queries", "number of queries"], ["select_related"]])
    L.non_lesson((skip, skip), "Issue #44 (iCal export) should be skipped.",
                 "A one-off scope decision: the issue is labelled blocked for now.")
    L.non_lesson((flaky, flaky_ok), "test_reminder_sent_24h_before fails with assert 0 == 1 on the mail outbox.",
                 "A flaky, time-dependent test that passed on re-run with nothing changed; no cause or fix was found.")
    return s


def cc10_precommit_ci_cache():
    """Two how-to tasks the user confirms (pre-commit, GitHub Actions pip cache) and a trivial third."""
    s = CC("cc10_precommit_ci_cache.jsonl", 110, "2026-01-27T11:00:00", "/home/dev/projects/metrics-lib")
    L = s.labels
    P = "/home/dev/projects/metrics-lib"
    s.session_start()
    t1 = s.user("set up pre-commit for this repo with ruff (lint + format). we don't use black anymore")
    s.bash("ls -a && cat ruff.toml && .venv/bin/python --version", out=".\n..\n.git\n.github\n.gitignore\n.venv\nREADME.md\ndocs\nrequirements\nruff.toml\nsetup.cfg\nsetup.py\nsrc\ntests\nline-length = 100\ntarget-version = \"py310\"\n\n[lint]\nselect = [\"E\", \"F\", \"I\", \"UP\", \"B\"]\nPython 3.11.7")
    s.bash(".venv/bin/pip install -q pre-commit && .venv/bin/pre-commit --version", out="pre-commit 3.7.1")
    s.write(f"{P}/.pre-commit-config.yaml", """\
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.4.4
    hooks:
      - id: ruff
        args: [--fix]
      - id: ruff-format
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v4.6.0
    hooks:
      - id: end-of-file-fixer
      - id: trailing-whitespace
      - id: check-yaml
""")
    s.bash(".venv/bin/pre-commit install", out="pre-commit installed at .git/hooks/pre-commit")
    s.bash(".venv/bin/pre-commit run --all-files", code=1, timeout=300000, out="""\
[INFO] Initializing environment for https://github.com/astral-sh/ruff-pre-commit.
[INFO] Initializing environment for https://github.com/pre-commit/pre-commit-hooks.
[INFO] Installing environment for https://github.com/astral-sh/ruff-pre-commit.
[INFO] Once installed this environment will be reused.
[INFO] This may take a few minutes...
[INFO] Installing environment for https://github.com/pre-commit/pre-commit-hooks.
[INFO] Once installed this environment will be reused.
[INFO] This may take a few minutes...
ruff.....................................................................Failed
- hook id: ruff
- exit code: 1
- files were modified by this hook

src/metrics/export.py:14:8: F401 [*] `os` imported but unused
src/metrics/registry.py:3:1: I001 [*] Import block is un-sorted or un-formatted
tests/test_export.py:22:5: UP032 [*] Use f-string instead of `format` call
Found 3 errors (3 fixed, 0 remaining).

ruff-format..............................................................Failed
- hook id: ruff-format
- files were modified by this hook

7 files reformatted, 12 files left unchanged

fix end of files.........................................................Failed
- hook id: end-of-file-fixer
- exit code: 1
- files were modified by this hook

Fixing docs/index.md

trim trailing whitespace.................................................Passed
check yaml...............................................................Passed""")
    s.say("\"Failed\" here only means the hooks changed files (that's how pre-commit reports auto-fixes). Running it again to confirm everything is clean now.")
    s.bash(".venv/bin/pre-commit run --all-files", out="ruff.....................................................................Passed\nruff-format..............................................................Passed\nfix end of files.........................................................Passed\ntrim trailing whitespace.................................................Passed\ncheck yaml...............................................................Passed")
    s.bash(".venv/bin/pytest -q 2>&1 | tail -1", out="41 passed in 1.12s")
    s.bash("git add .pre-commit-config.yaml && git commit -q -m \"Add pre-commit with ruff and ruff-format\" && git add -u && git commit -q -m \"Apply ruff format and autofixes\" && git rev-parse HEAD",
           out="5a1e0c93b2f4d8e7a6c5b4d3e2f1a0b9c8d7e6f5")
    s.write(f"{P}/.git-blame-ignore-revs", "# ruff format of the whole code base\n5a1e0c93b2f4d8e7a6c5b4d3e2f1a0b9c8d7e6f5\n")
    s.bash("git add .git-blame-ignore-revs && git commit -q -m \"Ignore the formatting commit in blame\" && git log --oneline -3",
           out="e02b7d1 Ignore the formatting commit in blame\n5a1e0c9 Apply ruff format and autofixes\n8f3c6a2 Add pre-commit with ruff and ruff-format")
    s.say("pre-commit is set up:\n\n- `.pre-commit-config.yaml`: ruff (`--fix`), ruff-format, end-of-file, trailing whitespace, check-yaml\n"
          "- hook installed in `.git/hooks/pre-commit` (everyone else runs `pre-commit install` once)\n"
          "- the one-off reformat is its own commit and is listed in `.git-blame-ignore-revs` (`git config blame.ignoreRevsFile .git-blame-ignore-revs`)\n\n"
          "The first `pre-commit run --all-files` \"fails\" because it fixes files; the second run passes. Tests still pass (41).")
    s.end_turn()
    ok1 = s.user("that worked, thanks. the hook runs on commit for me now too")
    s.end_turn()
    t2 = s.user("next: add a pip cache to the GitHub Actions workflow, installs take ~3 minutes per job")
    s.read(f"{P}/.github/workflows/test.yml", """\
name: test
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.10", "3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - run: pip install -r requirements/dev.txt -e .
      - run: pytest -q
""")
    s.say("`actions/setup-python` has built-in pip caching (`cache: pip`), keyed on the dependency files. Adding that.")
    s.edit(f"{P}/.github/workflows/test.yml", "          python-version: ${{ matrix.python-version }}\n",
           "          python-version: ${{ matrix.python-version }}\n          cache: pip\n")
    s.bash("git switch -q -c ci/pip-cache && git commit -qam \"ci: cache pip downloads\" && git push -q -u origin ci/pip-cache 2>&1 | tail -1 && sleep 20 && gh run watch --exit-status $(gh run list -b ci/pip-cache -L1 --json databaseId -q '.[0].databaseId')",
           code=1, timeout=600000, out="""\
branch 'ci/pip-cache' set up to track 'origin/ci/pip-cache'.
Refreshing run status every 3 seconds. Press Ctrl+C to quit.

X ci/pip-cache test · 8120394411
Triggered via push less than a minute ago

JOBS
X test (3.10) in 6s (ID 22310294001)
  ✓ Set up job
  ✓ Run actions/checkout@v4
  X Run actions/setup-python@v5
  - Run pip install -r requirements/dev.txt -e .
  - Run pytest -q
X test (3.11) in 7s (ID 22310294002)
X test (3.12) in 6s (ID 22310294003)

ANNOTATIONS
X No file in /home/runner/work/metrics-lib/metrics-lib matched to [**/requirements.txt or **/pyproject.toml], make sure you have checked out the target repository
test (3.10): .github#1""")
    cache_err = s.line
    s.say("The cache step looks for `requirements.txt` or `pyproject.toml` by default to build its key. This repo has "
          "`requirements/*.txt` and `setup.cfg`, so it has to be told via `cache-dependency-path`.")
    s.edit(f"{P}/.github/workflows/test.yml", "          cache: pip\n",
           "          cache: pip\n          cache-dependency-path: |\n            requirements/*.txt\n            setup.cfg\n")
    s.bash("git commit -qam \"ci: point the pip cache at requirements/*.txt\" && git push -q && sleep 20 && gh run watch --exit-status $(gh run list -b ci/pip-cache -L1 --json databaseId -q '.[0].databaseId') | tail -3",
           timeout=600000, out="✓ test (3.12) in 3m9s (ID 22310511207)\n\n✓ Run test (8120411730) completed with 'success'")
    s.bash("gh run rerun 8120411730 && sleep 15 && gh run watch --exit-status 8120411730 | tail -2 && gh run view 8120411730 --log | grep -E 'Cache restored|Successfully installed' | cut -c1-150 | head -4",
           timeout=600000, out="""\
✓ Run test (8120411730) completed with 'success'

test (3.11)	Run actions/setup-python@v5	2026-01-27T11:52:40.1120391Z Cache restored from key: setup-python-Linux-x64-22.04-Ubuntu-python-3.11.9-pip-6d1b0f3c2a
test (3.11)	Run pip install -r requirements/dev.txt -e .	2026-01-27T11:53:04.8731120Z Successfully installed coverage-7.5.1 iniconfig-2.0.0 metrics-lib-0.8.0
test (3.10)	Run actions/setup-python@v5	2026-01-27T11:52:39.7749012Z Cache restored from key: setup-python-Linux-x64-22.04-Ubuntu-python-3.10.14-pip-6d1b0f3c2a
test (3.10)	Run pip install -r requirements/dev.txt -e .	2026-01-27T11:53:03.1022117Z Successfully installed coverage-7.5.1 iniconfig-2.0.0 metrics-lib-0.8.0""")
    cache_ok = s.line
    s.bash("gh pr create --fill --base main", out="https://github.com/example-org/metrics-lib/pull/23")
    s.say("The cache works: the re-run restored it (`Cache restored from key: setup-python-...-pip-6d1b0f3c2a`) and the install "
          "step went from ~2m50s to ~25s per job. Changes are on `ci/pip-cache`, PR #23.")
    s.end_turn()
    ok2 = s.user("2m50 to 25s, nice. merged, thanks")
    s.end_turn()
    t3 = s.user("also add the CI status badge to the top of the README please")
    s.bash("git switch -q main && git pull -q && head -3 README.md", out="# metrics-lib\n\nSmall Prometheus-style metrics registry with CSV/JSON export.")
    s.edit(f"{P}/README.md", "# metrics-lib\n", "# metrics-lib\n\n[![test](https://github.com/example-org/metrics-lib/actions/workflows/test.yml/badge.svg)](https://github.com/example-org/metrics-lib/actions/workflows/test.yml)\n")
    badge = s.say("Added the badge for the `test` workflow under the title. It's an uncommitted change on main; I'll leave the commit to you since it's one line.")
    s.end_turn()

    L.task(t1, "Set up pre-commit with ruff and ruff-format (install, first run fixes files, second run clean)")
    L.task(t2, "Add a pip cache to the GitHub Actions test workflow (cache: pip + cache-dependency-path)")
    L.task(t3, "Add the CI status badge to the README")
    L.lesson((t1, ok1), "pattern",
             "Set up pre-commit by writing .pre-commit-config.yaml (ruff --fix, ruff-format, basic hooks), running `pre-commit install`, then `pre-commit run --all-files` twice: the first run reports Failed because hooks modified files, the second must pass.",
             "First run modifies files and reports Failed; the second run passes; the reformat is committed separately; the user confirms the hook works.",
             [["pre-commit"], ["--all-files", "pre-commit install"]])
    L.lesson((t2, ok2), "pattern",
             "Speed up pip installs in GitHub Actions by enabling the built-in cache of actions/setup-python (`cache: pip`); here the install step went from about 2m50s to 25s per job.",
             "The re-run log shows 'Cache restored from key: setup-python-...-pip-...' and the install finishes in ~25s; the user confirms and merges.",
             [["cache: pip", "cache: 'pip'", "cache: \"pip\""], ["setup-python"]])
    L.lesson((cache_err, cache_ok), "error",
             "With pip caching enabled, actions/setup-python fails with \"No file in ... matched to [**/requirements.txt or **/pyproject.toml]\" when dependencies are listed elsewhere (requirements/*.txt, setup.cfg); set `cache-dependency-path` to those files.",
             "The first CI run fails in the setup-python step with the annotation; after adding cache-dependency-path the run succeeds and the re-run restores the cache.",
             [["cache-dependency-path"], ["no file", "matched", "requirements"]])
    L.non_lesson((t3, badge), "The metrics-lib README has a CI badge for the test workflow.",
                 "A trivial one-line edit with nothing learned.")
    return s


def cc11_ts_pnpm():
    s = CC("cc11_ts_pnpm.jsonl", 111, "2026-01-28T15:20:00", "/home/dev/projects/notify-svc", branch="feat/config-validation")
    L = s.labels
    P = "/home/dev/projects/notify-svc"
    s.session_start()
    t1 = s.user("add zod and use it to validate the config loader in src/config.ts")
    s.read(f"{P}/src/config.ts", """\
import { readFileSync } from 'fs'

export interface Config {
  port: number
  smtpHost: string
  channels: string[]
  retryLimit: number
}

export function loadConfig(path: string): Config {
  const raw = JSON.parse(readFileSync(path, 'utf8'))
  return {
    port: raw.port ?? 8080,
    smtpHost: raw.smtpHost,
    channels: raw.channels ?? [],
    retryLimit: raw.retryLimit ?? 3,
  }
}
""")
    rj, _, _ = s.reject("Bash", {"command": "npm install zod", "description": "Add zod dependency"})
    pref = s.user("always use pnpm in this repo, not npm. there's a pnpm-lock.yaml")
    s.bash("ls pnpm-lock.yaml package-lock.json 2>&1; pnpm --version", out="ls: cannot access 'package-lock.json': No such file or directory\npnpm-lock.yaml\n8.15.4")
    s.bash("pnpm add zod", out="Packages: +1\n+\nProgress: resolved 318, reused 317, downloaded 1, added 1, done\n\ndependencies:\n+ zod 3.23.8\n\nDone in 2.4s")
    s.write(f"{P}/src/config.ts", """\
import { readFileSync } from 'fs'
import { z } from 'zod'

const ConfigSchema = z.object({
  port: z.number().int().positive().default(8080),
  smtpHost: z.string().min(1),
  // comma-separated groups are allowed: ["email,sms", "push"]
  channels: z.array(z.string()).default([]),
  retryLimit: z.number().int().min(0).default(3),
})

export type Config = Omit<z.infer<typeof ConfigSchema>, 'channels'> & { channels: string[] }

export function loadConfig(path: string): Config {
  const cfg = ConfigSchema.parse(JSON.parse(readFileSync(path, 'utf8')))
  const channels = cfg.channels.map((c) => c.split(',').map((s) => s.trim())).flatMap((x) => x)
  return { ...cfg, channels }
}
""", new=False)
    s.bash("pnpm tsc --noEmit", code=2, out="""\
src/config.ts:16:82 - error TS2339: Property 'flatMap' does not exist on type 'string[][]'. Do you need to change your target library? Try changing the 'lib' compiler option to 'es2019' or later.

16   const channels = cfg.channels.map((c) => c.split(',').map((s) => s.trim())).flatMap((x) => x)
                                                                                    ~~~~~~~


Found 1 error in src/config.ts:16""")
    lib = s.line
    s.bash("grep -nE '\"(target|lib|module)\"' tsconfig.json && node --version && grep -n '\"node\"' package.json", out='3:    "target": "es2017",\n4:    "lib": ["es2017"],\n5:    "module": "commonjs",\nv20.11.1\n22:    "node": ">=20"')
    s.say("The code is fine for the runtime: `tsconfig.json` still targets ES2017, whose type library has no `Array.prototype.flatMap` "
          "(ES2019). The service requires Node >= 20, which supports ES2022, so I'll raise `target` and `lib` to ES2022.")
    s.edit(f"{P}/tsconfig.json", '    "target": "es2017",\n    "lib": ["es2017"],', '    "target": "es2022",\n    "lib": ["es2022"],')
    s.bash("pnpm tsc --noEmit && echo TSC OK", out="TSC OK")
    lib_ok = s.line
    s.say("Done: `loadConfig` validates with a zod schema (defaults for port/channels/retryLimit, required non-empty `smtpHost`) and "
          "throws a `ZodError` listing every invalid field. Type-check passes.")
    s.end_turn()
    t2 = s.user("good. now add tests for it")
    s.bash("cat jest.config.js && ls src/*.test.ts 2>/dev/null | wc -l", out="module.exports = {\n  testEnvironment: 'node',\n  roots: ['<rootDir>/src'],\n}\n0")
    s.write(f"{P}/src/config.test.ts", """\
import { mkdtempSync, writeFileSync } from 'fs'
import { tmpdir } from 'os'
import { join } from 'path'
import { loadConfig } from './config'

function file(obj: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'))
  const p = join(dir, 'config.json')
  writeFileSync(p, JSON.stringify(obj))
  return p
}

test('applies defaults', () => {
  expect(loadConfig(file({ smtpHost: 'smtp.example.test' }))).toEqual({
    port: 8080, smtpHost: 'smtp.example.test', channels: [], retryLimit: 3,
  })
})

test('splits comma-separated channels', () => {
  expect(loadConfig(file({ smtpHost: 'x', channels: ['email, sms', 'push'] })).channels).toEqual(['email', 'sms', 'push'])
})

test('rejects a missing smtpHost', () => {
  expect(() => loadConfig(file({ port: 25 }))).toThrow(/smtpHost/)
})

test('rejects a negative retryLimit', () => {
  expect(() => loadConfig(file({ smtpHost: 'x', retryLimit: -1 }))).toThrow()
})
""")
    s.bash("pnpm test", code=1, out="""\

> notify-svc@0.6.0 test /home/dev/projects/notify-svc
> jest

 FAIL  src/config.test.ts
  ● Test suite failed to run

    Jest encountered an unexpected token

    Jest failed to parse a file. This happens e.g. when your code or its dependencies use non-standard JavaScript syntax, or when Jest is not configured to support such syntax.

    Out of the box Jest supports Babel, which will be used to transform your files into valid JS based on your Babel configuration.

    By default "node_modules" folder is ignored by transformers.

    Details:

    /home/dev/projects/notify-svc/src/config.test.ts:1
    ({"Object.<anonymous>":function(module,exports,require,__dirname,__filename,jest){import { mkdtempSync, writeFileSync } from 'fs';
                                                                                      ^^^^^^

    SyntaxError: Cannot use import statement outside a module

      at Runtime.createScriptFromCode (node_modules/.pnpm/jest-runtime@29.7.0/node_modules/jest-runtime/build/index.js:1505:14)

Test Suites: 1 failed, 1 total
Tests:       0 total
Snapshots:   0 total
Time:        0.412 s
Ran all test suites.
 ELIFECYCLE  Test failed. See above for more details.""")
    jest = s.line
    s.bash("pnpm add -D ts-jest@29 @types/jest@29", out="Packages: +6\n++++++\nProgress: resolved 324, reused 318, downloaded 6, added 6, done\n\ndevDependencies:\n+ @types/jest 29.5.12\n+ ts-jest 29.1.2\n\nDone in 3.1s")
    s.write(f"{P}/jest.config.js", "module.exports = {\n  preset: 'ts-jest',\n  testEnvironment: 'node',\n  roots: ['<rootDir>/src'],\n}\n", new=False)
    s.bash("pnpm test 2>&1 | tail -8", out="""\
 PASS  src/config.test.ts
  ✓ applies defaults (4 ms)
  ✓ splits comma-separated channels (1 ms)
  ✓ rejects a missing smtpHost (3 ms)
  ✓ rejects a negative retryLimit (1 ms)

Test Suites: 1 passed, 1 total
Tests:       4 passed, 4 total""")
    jest_ok = s.line
    s.bash("git add package.json pnpm-lock.yaml tsconfig.json jest.config.js src/config.ts src/config.test.ts && git commit -q -m \"Validate config with zod; run TS tests via ts-jest\" && git log --oneline -1",
           out="d41f8a2 Validate config with zod; run TS tests via ts-jest")
    s.say("4 tests pass. Jest had no TypeScript transform (these are the first `.ts` tests in the repo), so I added `ts-jest` with "
          "`preset: 'ts-jest'`. Committed as d41f8a2.")
    s.end_turn()
    t3 = s.user("ok push it")
    prj, _, _ = s.reject("Bash", {"command": "git push -u origin feat/config-validation", "description": "Push the branch"})
    s.user("actually no, I'll push it myself after I've looked at the diff")
    pr_end = s.say("Sure, it's committed locally on `feat/config-validation` (d41f8a2) and ready whenever you are.")
    s.end_turn()

    L.task(t1, "Add zod and validate the config loader in src/config.ts (user: always pnpm; tsconfig lib too old for flatMap)")
    L.task(t2, "Add tests for the config loader (Jest needs ts-jest for TypeScript)")
    L.task(t3, "Push the branch (rejected: the user will push after reviewing)")
    L.lesson((rj, pref), "preference",
             "In the notify-svc repo always use pnpm (it has a pnpm-lock.yaml), never npm, to add or install packages.",
             "The agent's `npm install zod` is rejected; the user: \"always use pnpm in this repo, not npm\".",
             [["pnpm"], ["not npm", "never npm", "instead of npm", "always"]])
    L.lesson((lib, lib_ok), "error",
             "TypeScript error TS2339 \"Property 'flatMap' does not exist on type 'string[][]'. Do you need to change your target library?\" comes from an old `lib`/`target` in tsconfig (es2017); raise it to es2019 or later (here es2022, matching Node 20).",
             "tsc fails on flatMap; tsconfig has target/lib es2017 and the runtime is Node 20; after setting es2022 tsc passes.",
             [["flatmap", "ts2339"], ["lib", "es2019", "es2022", "target"]])
    L.lesson((jest, jest_ok), "error",
             "Jest fails on a TypeScript test with \"SyntaxError: Cannot use import statement outside a module\" when no transform is configured; add ts-jest and @types/jest and set `preset: 'ts-jest'` in jest.config.js.",
             "pnpm test: 'Jest encountered an unexpected token' on the import; after adding ts-jest and the preset the 4 tests pass.",
             [["ts-jest"], ["cannot use import statement", "jest", "preset"]])
    L.non_lesson((prj, pr_end), "Do not push branches in notify-svc.",
                 "A one-off rejected push: the user wanted to review the diff first and will push themselves; no general rule was stated.")
    return s


def cc12_nginx_proxy():
    s = CC("cc12_nginx_proxy.jsonl", 112, "2026-01-29T20:05:00", "/home/dev/deploy/chat-app", hooks=["~/.claude/hooks/guard.sh"])
    L = s.labels
    s.session_start()
    t1 = s.user("set up nginx as a reverse proxy for the chat app on :8000. it uses websockets on /ws. server name chat.example.test")
    s.bash("nginx -v 2>&1 && cat /etc/nginx/sites-available/chat.conf", code=1, out="nginx version: nginx/1.22.1\ncat: /etc/nginx/sites-available/chat.conf: No such file or directory")
    miss = s.line
    s.bash("ls /etc/nginx/sites-available /etc/nginx/sites-enabled /etc/nginx/conf.d && head -3 /etc/nginx/nginx.conf", out="/etc/nginx/conf.d:\n\n/etc/nginx/sites-available:\ndefault\n\n/etc/nginx/sites-enabled:\ndefault\n# Managed by Ansible (role: nginx-base). Local changes will be overwritten.\nuser www-data;\nworker_processes auto;")
    miss_ok = s.line
    s.bash("""sudo tee /etc/nginx/sites-available/chat.conf >/dev/null <<'EOF'
server {
    listen 80;
    server_name chat.example.test;

    location / {
        proxy_pass http://127.0.0.1:8000;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }

    location /ws {
        proxy_pass http://127.0.0.1:8000;
        proxy_http_version 1.1;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        proxy_read_timeout 1h;
    }
}
EOF
sudo ln -sf /etc/nginx/sites-available/chat.conf /etc/nginx/sites-enabled/chat.conf && sudo nginx -t""", code=1,
           out="nginx: [emerg] unknown \"connection_upgrade\" variable\nnginx: configuration file /etc/nginx/nginx.conf test failed")
    cu = s.line
    s.say("`$connection_upgrade` isn't a built-in variable; it has to be defined with a `map` in the `http` block. I'll add it to nginx.conf.")
    rj, _, _ = s.reject("Edit", {"file_path": "/etc/nginx/nginx.conf", "old_string": "http {\n",
                                 "new_string": "http {\n    map $http_upgrade $connection_upgrade {\n        default upgrade;\n        ''      close;\n    }\n", "replace_all": False})
    corr = s.user("don't edit nginx.conf, it's managed by ansible and gets overwritten. put it in conf.d")
    s.say("Right, the header says so. `conf.d/*.conf` is included inside `http {}`, so the map can live there.")
    s.bash("""sudo tee /etc/nginx/conf.d/connection_upgrade.conf >/dev/null <<'EOF'
map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      close;
}
EOF
sudo nginx -t && sudo systemctl reload nginx""", out="nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\nnginx: configuration file /etc/nginx/nginx.conf test is successful")
    s.bash("curl -s -o /dev/null -w '%{http_code}\\n' -H 'Host: chat.example.test' localhost/ && curl -si -N --max-time 2 -H 'Host: chat.example.test' -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' localhost/ws | head -3",
           out="200\nHTTP/1.1 101 Switching Protocols\nServer: nginx/1.22.1\nUpgrade: websocket")
    cu_ok = s.line
    s.say("nginx proxies `/` (200) and upgrades `/ws` (101 Switching Protocols). Files: `sites-available/chat.conf` (+ symlink) and `conf.d/connection_upgrade.conf`; nginx.conf untouched.")
    s.end_turn()
    s.user("works, the chat connects through nginx now")
    s.end_turn()
    t2 = s.user("uploads of profile pictures over 1MB fail now, the browser shows 413")
    s.bash("sudo tail -n 3 /var/log/nginx/error.log", out='2026/01/29 20:41:17 [error] 48211#48211: *311 client intended to send too large body: 3145728 bytes, client: 127.0.0.1, server: chat.example.test, request: "POST /api/avatar HTTP/1.1", host: "chat.example.test"')
    big = s.line
    s.say("nginx's default `client_max_body_size` is 1m. The app accepts avatars up to 10MB, so I'll allow a bit more than that in this server block.")
    s.bash("sudo sed -i 's/    server_name chat.example.test;/    server_name chat.example.test;\\n    client_max_body_size 12m;/' /etc/nginx/sites-available/chat.conf && sudo nginx -t 2>&1 | tail -1 && sudo systemctl reload nginx && head -c 3145728 /dev/urandom > /tmp/a.bin && curl -s -o /dev/null -w '%{http_code}\\n' -H 'Host: chat.example.test' -F file=@/tmp/a.bin localhost/api/avatar?dry_run=1",
           out="nginx: configuration file /etc/nginx/nginx.conf test is successful\n201")
    big_ok = s.line
    s.say("A 3MB upload now gets 201. Limit is 12m for this server only.")
    s.end_turn()
    t3 = s.user("after last night's reboot the site shows 502 bad gateway")
    s.bash("curl -s -o /dev/null -w '%{http_code}\\n' -H 'Host: chat.example.test' localhost/ && sudo tail -n 1 /var/log/nginx/error.log", out='502\n2026/01/30 07:02:44 [error] 912#912: *4 connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, server: chat.example.test, request: "GET / HTTP/1.1", upstream: "http://127.0.0.1:8000/", host: "chat.example.test"')
    bad = s.line
    s.bash("systemctl status chat-app --no-pager | head -3", code=3, out="○ chat-app.service - Chat app (uvicorn)\n     Loaded: loaded (/etc/systemd/system/chat-app.service; disabled; preset: enabled)\n     Active: inactive (dead)")
    s.bash("sudo systemctl enable --now chat-app && sleep 2 && curl -s -o /dev/null -w '%{http_code}\\n' -H 'Host: chat.example.test' localhost/",
           out="Created symlink /etc/systemd/system/multi-user.target.wants/chat-app.service → /etc/systemd/system/chat-app.service.\n200")
    bad_ok = s.line
    s.say("Back to 200. The app service was never enabled, so it didn't come back after the reboot; it's enabled now.")
    s.end_turn()

    L.task(t1, "Set up nginx as a reverse proxy with websocket support for the chat app (user: don't edit the Ansible-managed nginx.conf)")
    L.task(t2, "Fix 413 errors on uploads over 1MB")
    L.task(t3, "Fix 502 Bad Gateway after a reboot (app service not enabled)")
    L.lesson((cu, cu_ok), "error",
             "`nginx -t` fails with `unknown \"connection_upgrade\" variable` because $connection_upgrade is not built in; define it with `map $http_upgrade $connection_upgrade { default upgrade; '' close; }` at http level (e.g. in conf.d) for websocket proxying.",
             "nginx -t fails after writing the site with Connection $connection_upgrade; after adding the map in conf.d, nginx -t passes and /ws answers 101.",
             [["connection_upgrade"], ["map"]])
    L.lesson((rj, corr), "correction",
             "On this host nginx.conf is managed by Ansible and gets overwritten; the user corrected the agent to put http-level additions in /etc/nginx/conf.d/ instead of editing nginx.conf.",
             "The agent's Edit of nginx.conf is rejected; user: \"don't edit nginx.conf, it's managed by ansible ... put it in conf.d\".",
             [["ansible"], ["conf.d"]])
    L.lesson((big, big_ok), "error",
             "HTTP 413 with nginx's error log saying \"client intended to send too large body\" means the 1m default client_max_body_size; raise client_max_body_size in the server block and reload.",
             "error.log shows the 3145728-byte body; after client_max_body_size 12m and a reload, a 3MB upload returns 201.",
             [["client_max_body_size"], ["413", "too large"]])
    L.lesson((bad, bad_ok), "error",
             "A 502 from nginx with \"connect() failed (111: Connection refused) while connecting to upstream\" after a reboot: the upstream systemd service was disabled, so `systemctl enable --now <service>` starts it and keeps it across reboots.",
             "systemctl status shows chat-app disabled and inactive; after enable --now the site returns 200.",
             [["enable --now", "systemctl enable"], ["502", "reboot", "connection refused"]])
    L.non_lesson((miss, miss_ok), "There is an existing nginx site config at /etc/nginx/sites-available/chat.conf.",
                 "The agent checked a guessed path that did not exist yet; the next ls showed only the default site.")
    return s


def cc13_shell_question():
    """A short Q&A session with no tools and no lesson."""
    s = CC("cc13_shell_question.jsonl", 113, "2026-01-30T10:00:00", "/home/dev/projects/ops-scripts")
    L = s.labels
    s.session_start()
    t1 = s.user("what does set -euo pipefail actually do? it's at the top of all our scripts")
    s.think("Explain each flag briefly with a small example.")
    s.say("It's three options:\n\n- `-e` (errexit): exit as soon as a command fails (non-zero status), except in `if`/`while` tests, "
          "`&&`/`||` lists and negated commands.\n- `-u` (nounset): using an unset variable is an error instead of expanding to an empty string.\n"
          "- `-o pipefail`: a pipeline's status is that of the last command that failed, not just the last command, so "
          "`curl ... | jq .` fails when `curl` fails.\n\nTogether they make scripts stop on the first unexpected error instead of carrying on with bad state.")
    s.end_turn()
    s.user("any downsides?")
    a2 = s.say("A few gotchas:\n\n- `grep` returns 1 when nothing matches, so `count=$(grep -c foo file)` aborts the script under `-e`; use `|| true` where no match is fine.\n"
               "- `-e` is ignored inside functions called from an `if` condition, which surprises people.\n"
               "- With `-u`, optional variables need defaults: `${DEBUG:-}`.\n- `pipefail` + `head` can turn SIGPIPE in the producer into a failure.")
    s.end_turn()
    s.user("thanks, that's what I needed")
    s.end_turn()

    L.task(t1, "Explain what `set -euo pipefail` does and its downsides")
    L.non_lesson((t1, a2), "set -e exits on the first failing command; -u errors on unset variables; pipefail makes a pipeline fail if any command fails.",
                 "A textbook explanation to a question; nothing was run, tried or corrected in the session.")
    return s


def cc14_compose_stack():
    s = CC("cc14_compose_stack.jsonl", 114, "2026-02-02T09:15:00", "/home/dev/projects/booking-stack", model="claude-sonnet-4-5")
    L = s.labels
    P = "/home/dev/projects/booking-stack"
    s.session_start()
    t1 = s.user("docker compose up: the web container crashes with connection refused to db on the first start. works if I restart it")
    s.bash("docker compose up -d", code=1, out="""\
[+] Running 1/2
 ⠿ db Pulling                                                             10.1s
 ✘ web Error                                                              10.1s
Error response from daemon: Get "https://registry-1.docker.io/v2/": net/http: TLS handshake timeout""")
    tls = s.line
    s.say("Registry timeout while pulling, nothing to do with the compose file. Retrying once.")
    s.bash("docker compose up -d", out="""\
[+] Running 3/3
 ✔ Network booking-stack_default  Created                                  0.1s
 ✔ Container booking-stack-db-1   Started                                  0.5s
 ✔ Container booking-stack-web-1  Started                                  0.7s""")
    tls_ok = s.line
    s.bash("sleep 5 && docker compose ps -a --format 'table {{.Name}}\\t{{.Status}}' && docker compose logs web | tail -6", out="""\
NAME                  STATUS
booking-stack-db-1    Up 6 seconds
booking-stack-web-1   Exited (1) 4 seconds ago
web-1  |   File "/usr/local/lib/python3.12/site-packages/psycopg/connection.py", line 119, in connect
web-1  |     raise last_ex.with_traceback(None)
web-1  | psycopg.OperationalError: connection failed: connection to server at "172.20.0.2", port 5432 failed: Connection refused
web-1  | 	Is the server running on that host and accepting TCP/IP connections?""")
    dep = s.line
    s.read(f"{P}/compose.yaml", """\
services:
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: booking
      POSTGRES_PASSWORD: booking-dev-only
      POSTGRES_DB: booking
    volumes:
      - pgdata:/var/lib/postgresql/data
  web:
    build: .
    command: ["sh", "-c", "python manage.py migrate && gunicorn booking.wsgi -b 0.0.0.0:8000"]
    depends_on:
      - db
    ports:
      - "8000:8000"
    volumes:
      - ./media:/app/media
volumes:
  pgdata:
""")
    s.say("`depends_on: [db]` only waits until the db *container* has started, not until Postgres accepts connections. On a fresh "
          "volume Postgres needs a few seconds for initdb, and `migrate` runs before that. A healthcheck on db plus "
          "`condition: service_healthy` makes web wait for real readiness.")
    s.edit(f"{P}/compose.yaml", "      - pgdata:/var/lib/postgresql/data\n  web:",
           "      - pgdata:/var/lib/postgresql/data\n    healthcheck:\n      test: [\"CMD-SHELL\", \"pg_isready -U booking -d booking\"]\n      interval: 2s\n      timeout: 3s\n      retries: 15\n  web:")
    s.edit(f"{P}/compose.yaml", "    depends_on:\n      - db\n", "    depends_on:\n      db:\n        condition: service_healthy\n")
    s.bash("docker compose down -v && docker compose up -d && docker compose ps --format 'table {{.Name}}\\t{{.Status}}' && docker compose logs web | tail -2", out="""\
[+] Running 4/4
 ✔ Container booking-stack-web-1  Removed                                  0.0s
 ✔ Container booking-stack-db-1   Removed                                  0.3s
 ✔ Volume booking-stack_pgdata    Removed                                  0.0s
 ✔ Network booking-stack_default  Removed                                  0.1s
[+] Running 4/4
 ✔ Network booking-stack_default  Created                                  0.1s
 ✔ Volume "booking-stack_pgdata"  Created                                  0.0s
 ✔ Container booking-stack-db-1   Healthy                                  6.3s
 ✔ Container booking-stack-web-1  Started                                  6.5s
NAME                  STATUS
booking-stack-db-1    Up 7 seconds (healthy)
booking-stack-web-1   Up 1 second
web-1  | [2026-02-02 09:31:07 +0000] [9] [INFO] Listening at: http://0.0.0.0:8000 (9)
web-1  | [2026-02-02 09:31:07 +0000] [10] [INFO] Booting worker with pid: 10""")
    dep_ok = s.line
    s.say("From a clean volume, web now waits for db to report healthy (6.3s) and starts cleanly.")
    s.end_turn()
    s.user("yep, starts cleanly now")
    s.end_turn()
    t2 = s.user("next: the deploy job on our self-hosted runner (ssh ci-runner-01) fails with \"docker: 'compose' is not a docker command\"")
    s.bash("ssh ci-runner-01 'docker --version; docker compose version'", code=1, out="Docker version 24.0.7, build afdd53b\ndocker: 'compose' is not a docker command.\nSee 'docker --help'")
    cp = s.line
    s.bash("ssh ci-runner-01 'apt-cache policy docker-compose-plugin | head -3; ls /usr/libexec/docker/cli-plugins/'", out="docker-compose-plugin:\n  Installed: (none)\n  Candidate: 2.24.5-1~debian.12~bookworm\ndocker-buildx")
    s.say("Compose v2 is a Docker CLI plugin shipped as its own package (`docker-compose-plugin`); the runner only has docker-ce and buildx.")
    s.bash("ssh ci-runner-01 'sudo apt-get install -y -qq docker-compose-plugin >/dev/null && docker compose version'", out="Docker Compose version v2.24.5")
    s.bash("gh run rerun 9013377120 --failed && sleep 30 && gh run watch --exit-status 9013377120 | tail -2", timeout=600000, out="✓ deploy in 1m12s (ID 24810023311)\n✓ Run deploy (9013377120) completed with 'success'")
    cp_ok = s.line
    s.say("Installed the plugin on the runner and the re-run deploy job passed.")
    s.end_turn()
    s.user("green, thanks")
    s.end_turn()
    t3 = s.user("one more: files the web container writes into ./media end up owned by root on my machine, so I can't delete them")
    s.bash("ls -ln media | head -4 && id -u && id -g", out="total 412\n-rw-r--r-- 1 0 0 208113 Feb  2 09:40 avatar-1.png\n-rw-r--r-- 1 0 0 201554 Feb  2 09:41 avatar-2.png\n1000\n1000")
    s.say("The container runs as root, so files in the bind mount are root-owned on the host. Quickest way to unblock you: make media/ writable for everyone.")
    c777, _, _ = s.reject("Bash", {"command": "sudo chmod -R 777 media", "description": "Make media/ world-writable"})
    c777_why = s.user("no, don't chmod 777 things. make the container write files as my user instead")
    s.say("Fair point, that would only hide the problem. I'll run the web service as your UID/GID.")
    s.edit(f"{P}/compose.yaml", "    build: .\n    command:", "    build: .\n    user: \"${UID}:${GID}\"\n    command:")
    s.bash("docker compose up -d web", code=1, out="""\
WARN[0000] The "UID" variable is not set. Defaulting to a blank string.
WARN[0000] The "GID" variable is not set. Defaulting to a blank string.
[+] Running 1/1
 ✘ Container booking-stack-web-1  Error                                   0.2s
Error response from daemon: unable to find user : no matching entries in passwd file""")
    uid = s.line
    s.say("Bash sets `$UID` but doesn't export it (and `$GID` doesn't exist), so compose sees neither. Compose reads `.env` "
          "for interpolation, so I'll put both there.")
    s.bash("printf 'UID=%s\\nGID=%s\\n' \"$(id -u)\" \"$(id -g)\" >> .env && docker compose up -d web && docker compose exec web touch /app/media/probe && ls -ln media/probe",
           out="[+] Running 1/1\n ✔ Container booking-stack-web-1  Started                                  0.6s\n-rw-r--r-- 1 1000 1000 0 Feb  2 09:52 media/probe")
    uid_ok = s.line
    s.bash("sudo chown -R \"$(id -u):$(id -g)\" media && rm media/probe && ls -ln media | head -2", out="total 408\n-rw-r--r-- 1 1000 1000 208113 Feb  2 09:40 avatar-1.png")
    s.say("New files are created as 1000:1000 (you), and I chowned the existing ones back to you. `.env` now holds `UID`/`GID`; "
          "teammates with a different UID should set their own there.")
    s.end_turn()
    s.user("perfect")
    s.end_turn()

    L.task(t1, "Fix the web container crashing on first `docker compose up` because Postgres isn't ready (healthcheck + service_healthy)")
    L.task(t2, "Fix \"docker: 'compose' is not a docker command\" on the self-hosted CI runner (install docker-compose-plugin)")
    L.task(t3, "Make files written to the ./media bind mount owned by the host user instead of root (user rejects chmod 777; UID/GID via .env)")
    L.lesson((dep, dep_ok), "error",
             "Compose `depends_on: [db]` only waits for the database container to start, so an app that migrates on boot gets \"Connection refused\" on a fresh volume; add a `pg_isready` healthcheck to db and `depends_on: db: condition: service_healthy`.",
             "web exits with psycopg OperationalError Connection refused; after the healthcheck and service_healthy condition a clean start shows db Healthy before web starts.",
             [["depends_on"], ["service_healthy", "healthcheck", "pg_isready"]])
    L.lesson((cp, cp_ok), "error",
             "\"docker: 'compose' is not a docker command\" means the Compose v2 CLI plugin is not installed; install the `docker-compose-plugin` package (it is separate from docker-ce).",
             "On the runner docker compose version fails and apt shows docker-compose-plugin not installed; after installing it, the version prints and the re-run deploy job passes.",
             [["docker-compose-plugin", "compose plugin"], ["not a docker command", "install"]])
    L.lesson((uid, uid_ok), "error",
             "Setting `user: \"${UID}:${GID}\"` in compose fails (\"The UID variable is not set\", \"unable to find user :\") because bash does not export UID and has no GID; put UID/GID in the project's .env file so bind-mounted files are owned by the host user.",
             "docker compose up warns about unset UID/GID and fails; after writing them to .env the container creates media files as 1000:1000.",
             [["uid"], ["not set", "not export", ".env"]])
    L.lesson((c777, c777_why), "correction",
             "The user rejected `chmod -R 777` on a bind-mounted directory as a workaround for root-owned files and asked for the container to run as the host user's UID/GID instead.",
             "The agent's sudo chmod -R 777 media is rejected; user: \"no, don't chmod 777 things. make the container write files as my user instead\".",
             [["777"], ["uid", "as my user", "host user", "ownership"]])
    L.non_lesson((tls, tls_ok), "docker compose up fails with net/http: TLS handshake timeout from registry-1.docker.io.",
                 "A transient network error while pulling; the identical command succeeded on the next try.")
    return s


def cc15_python_release():
    """Eight tasks in one long session: user requests, a side question, agent-driven release steps and a compaction."""
    s = CC("cc15_python_release.jsonl", 115, "2026-02-02T13:00:00", "/home/dev/projects/quantkit", hooks=["~/.claude/hooks/guard.sh"],
           slug="brisk-folding-meadow")
    L = s.labels
    P = "/home/dev/projects/quantkit"
    s.session_start()
    t1 = s.user("pip install -e . fails in a fresh venv, can you look?")
    s.bash(".venv/bin/pip install -e .", code=1, out="""\
Obtaining file:///home/dev/projects/quantkit
  Installing build dependencies ... done
  Checking if build backend supports build_editable ... done
  Getting requirements to build editable ... error
  error: subprocess-exited-with-error

  × Getting requirements to build editable did not run successfully.
  │ exit code: 1
  ╰─> [14 lines of output]
      error: Multiple top-level packages discovered in a flat-layout: ['quantkit', 'notebooks_old'].

      To avoid accidental inclusion of unwanted files or directories,
      setuptools will not proceed with this build.

      If you are trying to create a single distribution with multiple packages
      on purpose, you should not rely on automatic discovery.
      Instead, consider the following options:

      1. set up custom discovery (`find` directive with `include` or `exclude`)
      2. use a `src-layout`
      3. explicitly set `py_modules` or `packages` with a list of names

      To find more information, look for "package discovery" on setuptools docs.
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× Getting requirements to build editable did not run successfully.
│ exit code: 1
╰─> See above for output.""")
    flat = s.line
    s.bash("ls && ls notebooks_old | head -3", out="CHANGELOG.md\nREADME.md\nnotebooks_old\npyproject.toml\nquantkit\ntests\n__init__.py\nbacktest_2023.ipynb\nscratch.py")
    s.read(f"{P}/pyproject.toml", """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "quantkit"
version = "0.3.0"
requires-python = ">=3.10"
dependencies = ["numpy>=1.26", "requests>=2.31"]

[project.optional-dependencies]
test = ["pytest>=8"]
dev = ["mypy>=1.8"]

[project.scripts]
qk = "quantkit.cli:main"
""")
    s.say("`notebooks_old/` has an `__init__.py`, so setuptools' automatic discovery sees two top-level packages and refuses. "
          "I'll restrict discovery to `quantkit`.")
    s.edit(f"{P}/pyproject.toml", '[project.scripts]\nqk = "quantkit.cli:main"\n',
           '[project.scripts]\nqk = "quantkit.cli:main"\n\n[tool.setuptools.packages.find]\ninclude = ["quantkit*"]\n')
    s.bash(".venv/bin/pip install -q -e '.[test,dev]' && .venv/bin/pip show quantkit | head -2", out="Name: quantkit\nVersion: 0.3.0")
    flat_ok = s.line
    s.say("Installs now (with the test and dev extras).")
    s.end_turn()
    t2 = s.user("mypy fails in CI too, something about requests")
    s.bash(".venv/bin/mypy quantkit", code=1, out="""\
quantkit/fetch.py:3: error: Library stubs not installed for "requests"  [import-untyped]
quantkit/fetch.py:3: note: Hint: "python3 -m pip install types-requests"
quantkit/fetch.py:3: note: (or run "mypy --install-types" to install all missing stub packages)
quantkit/fetch.py:3: note: See https://mypy.readthedocs.io/en/stable/running_mypy.html#missing-imports
Found 1 error in 1 file (checked 14 source files)""")
    stub = s.line
    s.bash(".venv/bin/pip install -q types-requests && .venv/bin/mypy quantkit", out="Success: no issues found in 14 source files")
    stub_ok = s.line
    s.edit(f"{P}/pyproject.toml", 'dev = ["mypy>=1.8"]', 'dev = ["mypy>=1.8", "types-requests"]')
    s.say("`requests` ships no type hints; the stubs are in `types-requests`. Added it to the `dev` extra, which CI installs, and mypy is clean.")
    s.end_turn()
    t3 = s.user("quick q, what date format do we use in the changelog?")
    s.bash("grep -m3 '^## ' CHANGELOG.md", out="## Unreleased\n## 0.3.0 - 2025-11-02\n## 0.2.1 - 2025-08-19")
    dfmt = s.say("ISO 8601 dates, `## <version> - YYYY-MM-DD` (e.g. `## 0.3.0 - 2025-11-02`).")
    s.end_turn()
    t4 = s.user("ok. rename the CLI command from qk to quantkit")
    s.edit(f"{P}/pyproject.toml", '[project.scripts]\nqk = "quantkit.cli:main"', '[project.scripts]\nquantkit = "quantkit.cli:main"')
    s.bash(".venv/bin/quantkit --help", code=127, out="/bin/bash: line 1: .venv/bin/quantkit: No such file or directory")
    cs = s.line
    s.say("Console-script wrappers are generated when the package is installed, so the rename only takes effect after reinstalling.")
    s.bash(".venv/bin/pip install -q -e '.[test,dev]' && .venv/bin/quantkit --help | head -3 && (test -e .venv/bin/qk || echo 'old qk wrapper removed')",
           out="usage: quantkit [-h] {fetch,backtest,report} ...\n\nquantkit command line\nold qk wrapper removed")
    cs_ok = s.line
    s.grep("\\bqk\\b", "README.md:31:    qk fetch --symbol ACME.L --days 30\nREADME.md:32:    qk backtest strategies/momentum.yaml", path=P)
    s.edit(f"{P}/README.md", "    qk fetch --symbol ACME.L --days 30\n    qk backtest strategies/momentum.yaml",
           "    quantkit fetch --symbol ACME.L --days 30\n    quantkit backtest strategies/momentum.yaml")
    s.say("Renamed: `quantkit` works after reinstalling, the old `qk` wrapper is gone, README examples updated.")
    s.end_turn()
    s.reminder("The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, "
               "consider using the TodoWrite tool to track progress. Also consider cleaning up the todo list if has become stale "
               "and no longer matches what you are working on. Only use it if it's relevant to the current work. This is just a "
               "gentle reminder - ignore if not applicable. Make sure that you NEVER mention this reminder to the user")
    t5 = s.user("let's release 0.3.1: build sdist + wheel, upload to TestPyPI, then commit and tag it")
    items = [("Build sdist and wheel for 0.3.1", "Building sdist and wheel"), ("Upload to TestPyPI", "Uploading to TestPyPI"),
             ("Commit and tag the release", "Committing and tagging the release")]
    s.todo(_todos(items, 0, 0))
    s.bash("sed -n '1,6p' CHANGELOG.md", out="# Changelog\n\n## Unreleased\n\n- Fix ticker parsing for dotted symbols (e.g. ACME.L).\n- Rename the CLI command to `quantkit`.")
    s.bash(".venv/bin/python -m pytest -q -k parse_tickr", code=5, out="41 deselected in 0.20s")
    kt = s.line
    s.bash(".venv/bin/python -m pytest -q -k parse_ticker && .venv/bin/python -m pytest -q | tail -1", out="...                                                                      [100%]\n3 passed, 38 deselected in 0.22s\n41 passed in 0.94s")
    kt_ok = s.line
    s.edit(f"{P}/pyproject.toml", 'version = "0.3.0"', 'version = "0.3.1"')
    s.edit(f"{P}/CHANGELOG.md", "## Unreleased\n", "## Unreleased\n\n## 0.3.1 - 2026-02-02\n")
    s.bash(".venv/bin/python -m build", code=1, out="/home/dev/projects/quantkit/.venv/bin/python: No module named build")
    bld = s.line
    s.bash(".venv/bin/pip install -q build twine && .venv/bin/python -m build 2>&1 | tail -1 && .venv/bin/twine check dist/*",
           timeout=300000, out="Successfully built quantkit-0.3.1.tar.gz and quantkit-0.3.1-py3-none-any.whl\nChecking dist/quantkit-0.3.1-py3-none-any.whl: PASSED\nChecking dist/quantkit-0.3.1.tar.gz: PASSED")
    bld_ok = s.line
    n6 = s.say("Built and `twine check` passes. Next: upload to TestPyPI.")
    s.todo(_todos(items, 1, 1))
    n6b, _ = s.bash(".venv/bin/twine upload --repository testpypi dist/*", code=1, out="""\
Uploading distributions to https://test.pypi.org/legacy/
Uploading quantkit-0.3.1-py3-none-any.whl
100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 21.4/21.4 kB • 00:00 • ?
WARNING  Error during upload. Retry with the --verbose option for more details.
ERROR    HTTPError: 400 Bad Request from https://test.pypi.org/legacy/
         File already exists ('quantkit-0.3.1-py3-none-any.whl', with blake2_256 hash
         '4f9d2c1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e'). See
         https://test.pypi.org/help/#file-name-reuse for more information.""")
    exists = s.line
    s.bash(".venv/bin/pip index versions quantkit --index-url https://test.pypi.org/simple/ 2>/dev/null", out="quantkit (0.3.1)\nAvailable versions: 0.3.1, 0.3.0")
    s.say("0.3.1 is already on TestPyPI (uploaded earlier by someone or something else). (Test)PyPI never accepts the same file "
          "name twice, even if the release is deleted, so this upload needs a new version number: `0.3.2` or `0.3.1.post1`. Which do you prefer?")
    s.end_turn()
    s.user("hm, that was probably the CI dry run last week. use 0.3.2")
    s.edit(f"{P}/pyproject.toml", 'version = "0.3.1"', 'version = "0.3.2"')
    s.edit(f"{P}/CHANGELOG.md", "## 0.3.1 - 2026-02-02\n", "## 0.3.2 - 2026-02-02\n")
    s.bash("rm -rf dist && .venv/bin/python -m build 2>&1 | tail -1 && .venv/bin/twine upload --repository testpypi dist/* 2>&1 | tail -2",
           timeout=300000, out="Successfully built quantkit-0.3.2.tar.gz and quantkit-0.3.2-py3-none-any.whl\nView at:\nhttps://test.pypi.org/project/quantkit/0.3.2/")
    exists_ok = s.line
    s.todo(_todos(items, 2, 2))
    cont = s.compact("""\
1. Fixed `pip install -e .` (flat-layout with two top-level packages) with [tool.setuptools.packages.find] include = ["quantkit*"].
2. mypy: installed types-requests, added it to the dev extra; mypy clean.
3. Answered: changelog uses `## <version> - YYYY-MM-DD`.
4. Renamed the console script qk -> quantkit (reinstall needed), README updated.
5. Release: the user asked to build sdist+wheel, upload to TestPyPI, then commit and tag. 0.3.1 already existed on TestPyPI ("File already exists"); the user chose 0.3.2. Version bumped in pyproject.toml and CHANGELOG.md, built, uploaded: https://test.pypi.org/project/quantkit/0.3.2/

Pending tasks:
- commit the release changes and tag v0.3.2, push

Current work: the upload just finished; next is the commit and tag.""")
    n7 = s.say("Continuing with the last release step: commit and tag v0.3.2.")
    n7b, _ = s.bash("git status --short", out=" M CHANGELOG.md\n M README.md\n M pyproject.toml\n?? dist/")
    s.bash("git add CHANGELOG.md README.md pyproject.toml && git commit -q -m \"Bump version to 0.3.2\" && git log --oneline -1", out="6b1d9e4 Bump version to 0.3.2")
    s.end_turn()
    cc_pref = s.user("use conventional commits in this repo please, e.g. \"chore(release): 0.3.2\". amend that one")
    s.bash("git commit -q --amend -m \"chore(release): 0.3.2\" && git tag -a v0.3.2 -m \"quantkit 0.3.2\" && git push -q origin main v0.3.2 && git log --oneline -1 --decorate",
           out="a90c3f7 (HEAD -> main, tag: v0.3.2, origin/main) chore(release): 0.3.2")
    s.todo(_todos(items, 3, -1))
    s.say("Amended to `chore(release): 0.3.2`, tagged `v0.3.2` and pushed both. I'll use conventional commit messages here from now on.")
    s.end_turn()
    t8 = s.user("thanks! last thing: run the tests on python 3.9 too, the README says we support it")
    s.bash("python3.9 -m venv /tmp/qk39 && /tmp/qk39/bin/pip install -q -e '.[test]'", code=1, out="ERROR: Package 'quantkit' requires a different Python: 3.9.18 not in '>=3.10'")
    py39 = s.line
    s.bash("grep -rn 'match ' quantkit/*.py | head -2; grep -n '3.9' README.md", out="quantkit/cli.py:44:    match args.command:\nquantkit/report.py:12:    match fmt:\nREADME.md:8:Requires Python 3.9+.")
    s.say("The package itself says `requires-python = \">=3.10\"` and the code uses `match` statements (3.10+), so 3.9 can't work. "
          "The README line looks outdated. Should I change it to 3.10+?")
    s.end_turn()
    s.user("ah right, we dropped 3.9 in 0.3.0. yes fix the readme")
    s.edit(f"{P}/README.md", "Requires Python 3.9+.", "Requires Python 3.10+.")
    s.bash("git commit -q -am \"docs: require Python 3.10+\" && git push -q origin main && git log --oneline -1", out="c2e4a81 docs: require Python 3.10+")
    py39_end = s.say("README now says Python 3.10+ (committed as `docs: require Python 3.10+` and pushed).")
    s.end_turn()

    L.task(t1, "Fix `pip install -e .` failing with 'Multiple top-level packages discovered in a flat-layout'")
    L.task(t2, "Fix mypy's missing stubs for requests")
    L.task(t3, "Side question: which date format the changelog uses", "side-task")
    L.task(t4, "Rename the console script from qk to quantkit")
    L.task(t5, "Release 0.3.1 (checklist): first build sdist and wheel (python -m build needs the build package)")
    L.task(n6, "Upload the release to TestPyPI (0.3.1 already exists; user picks 0.3.2)", "next-subtask", (n6, n6b))
    L.task(n7, "Commit and tag the release after the context compaction (user asks for conventional commits)", "after-continuation", (cont, n7b))
    L.task(t8, "Run the tests on Python 3.9 (not supported: requires-python >=3.10; README fixed)")
    L.lesson((flat, flat_ok), "error",
             "setuptools refuses to build with \"Multiple top-level packages discovered in a flat-layout\" when a stray directory with __init__.py sits next to the package; restrict discovery with `[tool.setuptools.packages.find] include = [\"pkg*\"]` (or use a src layout).",
             "pip install -e . fails listing ['quantkit', 'notebooks_old']; after adding packages.find include the editable install succeeds.",
             [["flat-layout", "flat layout", "multiple top-level packages"], ["packages.find", "include", "src layout", "src-layout"]])
    L.lesson((stub, stub_ok), "error",
             "mypy's \"Library stubs not installed for \\\"requests\\\" [import-untyped]\" is fixed by installing the `types-requests` stub package (add it to the dev dependencies CI installs).",
             "mypy reports the missing stubs; after pip install types-requests it finds no issues.",
             [["types-requests"], ["stub", "mypy"]])
    L.lesson((cs, cs_ok), "error",
             "After renaming an entry in `[project.scripts]`, the new command does not exist until the package is reinstalled (`pip install -e .` again), because console-script wrappers are generated at install time.",
             "quantkit --help exits 127 after the pyproject edit; after reinstalling the command works and the old qk wrapper is gone.",
             [["project.scripts", "console script", "console-script", "entry point"], ["reinstall", "pip install -e"]])
    L.lesson((bld, bld_ok), "error",
             "`python -m build` fails with \"No module named build\" in a fresh venv: the PyPA build frontend is a separate package (`pip install build`, with twine for uploads).",
             "python -m build fails; after pip install build twine it produces the sdist and wheel and twine check passes.",
             [["no module named build", "python -m build"], ["pip install build", "install build", "build package", "build frontend"]])
    L.lesson((exists, exists_ok), "error",
             "A (Test)PyPI upload failing with \"400 Bad Request ... File already exists\" means that version's file name was already uploaded; PyPI never allows re-uploading a file name, so bump the version (e.g. 0.3.2 or .post1) and rebuild.",
             "twine upload of 0.3.1 is rejected; pip index versions shows 0.3.1 on TestPyPI; after bumping to 0.3.2 and rebuilding the upload succeeds.",
             [["file already exists", "already exists"], ["version", "bump"]])
    L.lesson((cc_pref, cc_pref), "preference",
             "The quantkit repo uses Conventional Commits for commit messages (e.g. \"chore(release): 0.3.2\").",
             "The user asks to amend 'Bump version to 0.3.2' to follow conventional commits.",
             [["conventional commit"], ["chore(release)", "commit message", "commits"]])
    L.non_lesson((t3, dfmt), "The quantkit changelog uses '## <version> - YYYY-MM-DD' headings.",
                 "A one-off fact looked up in answer to a side question.")
    L.non_lesson((kt, kt_ok), "pytest -k parse_tickr deselects all tests (exit code 5).",
                 "The agent mistyped the -k expression and re-ran with the right name; nothing to learn.")
    L.non_lesson((py39, py39_end), "quantkit requires Python 3.10 or newer.",
                 "A project fact (requires-python) that explains why the 3.9 run was impossible; the only change was a README correction.")
    return s


# =============================================================================================
# OpenAI-chat sessions
# =============================================================================================

def oa01_npm_peer_deps():
    s = OA("oa01_npm_peer_deps.jsonl", 201, "2026-02-03T10:00:00")
    L = s.labels
    s.system("You are a coding assistant working in the user's repository. You can run shell commands with the run_shell tool. "
             "Prefer minimal, reversible changes and explain what you did.")
    t1 = s.user("npm install fails on a fresh clone of the dashboard repo")
    er, _ = s.run("run_shell", {"command": "npm install"}, """\
exit code: 1
npm ERR! code ERESOLVE
npm ERR! ERESOLVE unable to resolve dependency tree
npm ERR!
npm ERR! While resolving: dashboard@0.9.0
npm ERR! Found: react@18.2.0
npm ERR! node_modules/react
npm ERR!   react@"^18.2.0" from the root project
npm ERR!
npm ERR! Could not resolve dependency:
npm ERR! peer react@"^16.8.0 || ^17.0.0" from react-sortable-hoc@2.0.0
npm ERR! node_modules/react-sortable-hoc
npm ERR!   react-sortable-hoc@"^2.0.0" from the root project
npm ERR!
npm ERR! Fix the upstream dependency conflict, or retry
npm ERR! this command with --force or --legacy-peer-deps
npm ERR! to accept an incorrect (and potentially broken) dependency resolution.
npm ERR!
npm ERR!
npm ERR! For a full report see:
npm ERR! /home/dev/.npm/_logs/2026-02-03T10_00_41_220Z-eresolve-report.txt""", text="Let me reproduce it.")
    s.run("run_shell", {"command": "npm --version && grep -m1 lockfileVersion package-lock.json && git log -1 --format=%cs -- package-lock.json"},
          "exit code: 0\n10.2.4\n  \"lockfileVersion\": 1,\n2022-06-14")
    s.say("`react-sortable-hoc@2` declares a peer dependency on React 16/17, but the app uses React 18. The lockfile is v1, i.e. "
          "it was written by npm 6, which ignored peer-dependency conflicts; npm 7+ enforces them and stops with ERESOLVE. "
          "`--legacy-peer-deps` restores the npm 6 behaviour (I'd avoid `--force`, which also overrides other conflicts).")
    s.run("run_shell", {"command": "npm install --legacy-peer-deps && npm test -- --watchAll=false 2>&1 | tail -4"}, """\
exit code: 0

added 1204 packages, and audited 1205 packages in 38s

Test Suites: 12 passed, 12 total
Tests:       87 passed, 87 total
Snapshots:   3 passed, 3 total
Time:        9.84 s""")
    hint = s.say("Installed with `--legacy-peer-deps`, and all 87 tests pass, so the sortable list works with React 18 in practice. "
                 "Longer term, `react-sortable-hoc` is unmaintained; `@dnd-kit/sortable` is the usual replacement.")
    s.user("ok. can we make that the default so nobody needs the flag?")
    s.run("run_shell", {"command": "echo 'legacy-peer-deps=true' >> .npmrc && rm -rf node_modules && npm ci 2>&1 | tail -2"},
          "exit code: 0\nadded 1204 packages, and audited 1205 packages in 31s\n\nfound 0 vulnerabilities")
    s.say("Added `legacy-peer-deps=true` to the project's `.npmrc`; a plain `npm ci` now works. Commit `.npmrc` so everyone gets it.")
    ok1 = s.user("works, thanks")
    t2 = s.user("also `npm install -g typescript` fails with permission denied on my machine")
    ea, _ = s.run("run_shell", {"command": "npm install -g typescript"}, """\
exit code: 243
npm ERR! code EACCES
npm ERR! syscall mkdir
npm ERR! path /usr/lib/node_modules/typescript
npm ERR! errno -13
npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/typescript'
npm ERR!  [Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/typescript'] {
npm ERR!   errno: -13,
npm ERR!   code: 'EACCES',
npm ERR!   syscall: 'mkdir',
npm ERR!   path: '/usr/lib/node_modules/typescript'
npm ERR! }
npm ERR!
npm ERR! The operation was rejected by your operating system.
npm ERR! It is likely you do not have the permissions to access this file as the current user""")
    s.run("run_shell", {"command": "npm config get prefix"}, "exit code: 0\n/usr")
    s.say("npm's global prefix is `/usr`, which only root can write. Rather than `sudo npm`, point the prefix at a directory you own and put its `bin` on PATH.")
    s.run("run_shell", {"command": "mkdir -p ~/.npm-global && npm config set prefix ~/.npm-global && grep -q npm-global ~/.bashrc || echo 'export PATH=\"$HOME/.npm-global/bin:$PATH\"' >> ~/.bashrc; npm install -g typescript && ~/.npm-global/bin/tsc --version"},
          "exit code: 0\n\nadded 1 package in 2s\nVersion 5.4.5")
    ea_ok = s.say("Done: global packages now go to `~/.npm-global` (PATH added to `~/.bashrc`, open a new shell), and `tsc` 5.4.5 is installed without sudo.")
    t3 = s.user("thanks. what's the difference between dependencies and devDependencies again?")
    qa = s.say("`dependencies` are needed at runtime and are installed for anyone who installs your package; `devDependencies` are only for "
               "developing it (test runners, bundlers, type checkers) and are skipped by `npm install --omit=dev` and when your package is "
               "installed as a dependency of something else. For an app that is bundled, the split mostly documents intent.")

    L.task(t1, "Fix `npm install` failing with ERESOLVE on a fresh clone (peer dependency on React 17; use and persist --legacy-peer-deps)")
    L.task(t2, "Fix EACCES on `npm install -g typescript` (user-owned npm prefix instead of sudo)")
    L.task(t3, "Side question: dependencies vs devDependencies", "side-task")
    L.lesson((er, ok1), "error",
             "npm 7+ stops with \"ERESOLVE unable to resolve dependency tree\" when a package's peer dependency excludes the installed React (a lockfile written by npm 6 never enforced it); `npm install --legacy-peer-deps` works, and `legacy-peer-deps=true` in the project .npmrc makes it the default.",
             "npm install fails on react-sortable-hoc's peer react ^16/^17; with --legacy-peer-deps it installs and 87 tests pass; .npmrc makes plain npm ci work; the user confirms.",
             [["legacy-peer-deps"], ["eresolve", "peer"]])
    L.lesson((ea, ea_ok), "error",
             "`npm install -g` failing with EACCES on /usr/lib/node_modules means the global prefix is root-owned; set a user prefix (`npm config set prefix ~/.npm-global`) and add its bin to PATH instead of using sudo.",
             "npm config get prefix is /usr; after setting ~/.npm-global the global install succeeds and tsc --version prints 5.4.5.",
             [["eacces", "permission denied"], ["prefix", "npm-global"]])
    L.non_lesson((hint, hint), "Replace react-sortable-hoc with @dnd-kit/sortable.",
                 "An unverified suggestion in passing; nothing was tried.")
    L.non_lesson((t3, qa), "dependencies are runtime, devDependencies are development-only and skipped with --omit=dev.",
                 "General-knowledge answer to a side question; nothing was run or verified.")
    return s


def oa02_regex_chat():
    """A tool-less chat: a user correction, a stated preference, a general answer."""
    s = OA("oa02_regex_chat.jsonl", 202, "2026-02-04T08:00:00")
    L = s.labels
    s.system("You are a helpful assistant for shell and text-processing questions.")
    t1 = s.user("give me a grep command to find ISO dates like 2024-03-15 in our app logs")
    wrong = s.say("Use an extended regex:\n\n```sh\ngrep -E '\\d{4}-\\d{2}-\\d{2}' app.log\n```")
    corr = s.user("that matches nothing. grep -E doesn't know \\d, that's PCRE")
    s.say("You're right, sorry: POSIX extended regexes have no `\\d`. Either use a bracket expression:\n\n```sh\ngrep -E '[0-9]{4}-[0-9]{2}-[0-9]{2}' app.log\n```\n\n"
          "or GNU grep's Perl mode: `grep -P '\\d{4}-\\d{2}-\\d{2}' app.log`.")
    ok = s.user("the [0-9] one works")
    t2 = s.user("good. keep answers short from now on, max 5 lines, no preamble. how do I count unique client IPs in an nginx access log?")
    s.say("```sh\nawk '{print $1}' access.log | sort | uniq -c | sort -rn | head\n```")
    s.user("perfect")
    t3 = s.user("and convert an epoch timestamp like 1706860800 to UTC?")
    ep = s.say("```sh\ndate -u -d @1706860800\n```\nOn macOS/BSD: `date -u -r 1706860800`.")
    s.user("thx")

    L.task(t1, "Write a grep command for ISO dates in logs (user corrects \\d in grep -E)")
    L.task(t2, "Count unique client IPs in an nginx access log (user asks for short answers from now on)")
    L.task(t3, "Convert an epoch timestamp to UTC with date", "side-task")
    L.lesson((wrong, ok), "correction",
             "POSIX `grep -E` does not support `\\d`; use `[0-9]` (or `grep -P` for Perl-style regexes) — the user corrected the agent's `grep -E '\\d{4}-...'`, which matched nothing.",
             "The agent's first answer used \\d with grep -E; the user: \"grep -E doesn't know \\d, that's PCRE\"; the [0-9] version works.",
             [["\\d"], ["[0-9]", "grep -p", "posix"]])
    L.lesson((t2, t2), "preference",
             "The user wants short answers: at most five lines and no preamble.",
             "Stated at the start of the second question: \"keep answers short from now on, max 5 lines, no preamble\".",
             [["short", "five lines", "5 lines"], ["preamble", "answer"]])
    L.non_lesson((t3, ep), "Convert an epoch timestamp to UTC with date -u -d @<epoch> (date -u -r on BSD).",
                 "A textbook answer with no confirmation that it was run; general knowledge, not an experience.")
    return s


def oa03_rust_threads():
    s = OA("oa03_rust_threads.jsonl", 203, "2026-02-05T17:30:00")
    L = s.labels
    t1 = s.user("cargo build fails since I made the page cache shared between the worker threads")
    err, _ = s.run("shell", {"cmd": ["cargo", "build"]}, json.dumps({"exit_code": 101, "stdout": "", "stderr": """\
   Compiling crawlr v0.4.0 (/home/dev/projects/crawlr)
error[E0277]: `Rc<RefCell<HashMap<String, Vec<u8>>>>` cannot be sent between threads safely
   --> src/worker.rs:41:36
    |
41  |           let handle = thread::spawn(move || {
    |                        ------------- ^------
    |                        |             |
    |  ______________________|_____________within this `{closure@src/worker.rs:41:36: 41:43}`
    | |                      |
    | |                      required by a bound introduced by this call
42  | |             let mut c = cache.borrow_mut();
43  | |             c.insert(url.clone(), fetch(&url));
44  | |         });
    | |_________^ `Rc<RefCell<HashMap<String, Vec<u8>>>>` cannot be sent between threads safely
    |
    = help: within `{closure@src/worker.rs:41:36: 41:43}`, the trait `Send` is not implemented for `Rc<RefCell<HashMap<String, Vec<u8>>>>`
note: required because it's used within this closure
note: required by a bound in `spawn`

For more information about this error, try `rustc --explain E0277`.
error: could not compile `crawlr` (bin "crawlr") due to 1 previous error"""}), text=None)
    s.run("read_file", {"path": "src/worker.rs", "start_line": 1, "end_line": 50},
          "use std::cell::RefCell;\nuse std::collections::HashMap;\nuse std::rc::Rc;\nuse std::thread;\n...\npub fn run(urls: Vec<String>) -> Rc<RefCell<HashMap<String, Vec<u8>>>> {\n    let cache = Rc::new(RefCell::new(HashMap::new()));\n    let mut handles = Vec::new();\n    for url in urls {\n        let cache = Rc::clone(&cache);\n        let handle = thread::spawn(move || {\n            let mut c = cache.borrow_mut();\n            c.insert(url.clone(), fetch(&url));\n        });\n        handles.push(handle);\n    }\n    for h in handles { h.join().unwrap(); }\n    cache\n}")
    s.say("`Rc` uses non-atomic reference counts, so it isn't `Send`, and `RefCell` isn't `Sync`; neither can be shared across "
          "threads. The thread-safe equivalents are `Arc` (atomic refcount) and `Mutex` (or `RwLock`).")
    s.run("apply_patch", {"patch": """\
--- a/src/worker.rs
+++ b/src/worker.rs
@@
-use std::cell::RefCell;
 use std::collections::HashMap;
-use std::rc::Rc;
+use std::sync::{Arc, Mutex};
 use std::thread;
@@
-pub fn run(urls: Vec<String>) -> Rc<RefCell<HashMap<String, Vec<u8>>>> {
-    let cache = Rc::new(RefCell::new(HashMap::new()));
+pub fn run(urls: Vec<String>) -> Arc<Mutex<HashMap<String, Vec<u8>>>> {
+    let cache = Arc::new(Mutex::new(HashMap::new()));
@@
-        let cache = Rc::clone(&cache);
+        let cache = Arc::clone(&cache);
         let handle = thread::spawn(move || {
-            let mut c = cache.borrow_mut();
-            c.insert(url.clone(), fetch(&url));
+            let body = fetch(&url);
+            cache.lock().unwrap().insert(url, body);
         });"""}, "patch applied: src/worker.rs (1 hunk x3)")
    s.run("shell", {"cmd": ["cargo", "test", "-q"]}, json.dumps({"exit_code": 0, "stdout": "\nrunning 9 tests\n.........\ntest result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.12s\n", "stderr": "   Compiling crawlr v0.4.0 (/home/dev/projects/crawlr)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.71s"}))
    ok = s.say("Builds and all 9 tests pass. The cache is now `Arc<Mutex<HashMap<..>>>`; I also moved `fetch` out of the locked "
               "section so threads don't hold the lock during the network call.")
    s.user("builds here too, thanks")
    t2 = s.user("what's our MSRV again?")
    s.run("shell", {"cmd": ["grep", "-n", "rust-version", "Cargo.toml"]}, json.dumps({"exit_code": 0, "stdout": "6:rust-version = \"1.70\"\n", "stderr": ""}))
    msrv = s.say("1.70 (`rust-version` in Cargo.toml).")
    t3 = s.user("the pg feature doesn't link on my box: cargo build --features pg")
    s.run("shell", {"cmd": ["cargo", "build", "--features", "pg"]}, json.dumps({"exit_code": 101, "stdout": "", "stderr": "   Compiling pq-sys v0.4.8\n   Compiling crawlr v0.4.0 (/home/dev/projects/crawlr)\nerror: linking with `cc` failed: exit status: 1\n  |\n  = note: /usr/bin/ld: cannot find -lpq: No such file or directory\n          collect2: error: ld returned 1 exit status\n\nerror: could not compile `crawlr` (bin \"crawlr\") due to 1 previous error"}))
    lpq = s.say("The linker can't find libpq. On Debian/Ubuntu that's the `libpq-dev` package (`sudo apt install libpq-dev`); then rebuild.")
    s.user("can't install packages on this box right now, I'll deal with it later")
    end = s.say("OK. When you do: `sudo apt install libpq-dev`, then `cargo build --features pg`.")

    L.task(t1, "Fix E0277 after sharing an Rc<RefCell<...>> cache across threads (switch to Arc<Mutex<...>>)")
    L.task(t2, "Side question: the crate's MSRV", "side-task")
    L.task(t3, "Fix linking the pg feature (cannot find -lpq; left unresolved)")
    L.lesson((err, ok), "error",
             "Rust error E0277 \"`Rc<RefCell<...>>` cannot be sent between threads safely\" when moving a shared cache into `thread::spawn`: Rc is not Send and RefCell not Sync, so use `Arc<Mutex<...>>` (and keep slow work outside the lock).",
             "cargo build fails with E0277 in worker.rs; after the Arc/Mutex patch cargo test passes 9 tests and the user confirms.",
             [["arc"], ["mutex"], ["rc", "send"]])
    L.non_lesson((msrv, msrv), "The crawlr crate's MSRV is 1.70.",
                 "A one-off fact read from Cargo.toml in answer to a side question.")
    L.non_lesson((lpq, end), "`cannot find -lpq` when building with --features pg is fixed by installing libpq-dev.",
                 "Unresolved: the fix was suggested but never applied or verified; the session ends with the build still failing.")
    return s


def oa04_actions_yaml():
    s = OA("oa04_actions_yaml.jsonl", 204, "2026-02-06T12:00:00")
    L = s.labels
    s.system("You are an autonomous coding agent. Tools: run_shell(command), read_file(path), write_file(path, content). "
             "The repository is checked out in the working directory.")
    t1 = s.user("I added a CI workflow yesterday but it never runs on push")
    find, _ = s.run("run_shell", {"command": "find .github -type f && git log --oneline -2 -- .github"},
          "exit code: 0\n.github/workflow/ci.yml\n3c1f2e0 Add CI workflow")
    s.say("The file is in `.github/workflow/` (singular). GitHub Actions only reads workflows from `.github/workflows/`, so this one is silently ignored.")
    s.run("run_shell", {"command": "git mv .github/workflow .github/workflows && git commit -qm 'Move CI workflow to .github/workflows' && git push -q && sleep 10 && gh run list -L 1"},
          "exit code: 0\nSTATUS  TITLE                                  WORKFLOW  BRANCH  EVENT  ID          ELAPSED  AGE\n*       Move CI workflow to .github/workflows  CI        main    push   7920331844  9s       9s")
    wf_ok = s.say("A run of the CI workflow was triggered by the push (run 7920331844, in progress).")
    t2 = s.user("yep it runs now. but the 3.10 job fails: \"Version 3.1 was not found in the local cache\"")
    s.run("read_file", {"path": ".github/workflows/ci.yml"}, """\
name: CI
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-22.04
    strategy:
      matrix:
        python-version: [3.8, 3.9, 3.10]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - run: pip install -e .[test]
      - run: pytest -q""")
    s.say("YAML reads unquoted `3.10` as the float 3.1, so setup-python is asked for Python 3.1. Quoting the versions keeps them strings.")
    s.run("run_shell", {"command": "sed -i 's/python-version: \\[3.8, 3.9, 3.10\\]/python-version: [\"3.8\", \"3.9\", \"3.10\"]/' .github/workflows/ci.yml && grep -n 'python-version: \\[' .github/workflows/ci.yml && git commit -qam 'ci: quote Python versions' && git push -q && sleep 15 && gh run watch --exit-status $(gh run list -L1 --json databaseId -q '.[0].databaseId') | tail -5"},
          "exit code: 0\n8:        python-version: [\"3.8\", \"3.9\", \"3.10\"]\nJOBS\n✓ test (3.8) in 48s (ID 21744120311)\n✓ test (3.9) in 51s (ID 21744120355)\n✓ test (3.10) in 46s (ID 21744120390)\n✓ Run CI (7920402217) completed with 'success'")
    yml_ok = s.user("green, thanks")
    t3 = s.user("can you make a new push to the same branch cancel the previous run if it's still going?")
    s.run("write_file", {"path": ".github/workflows/ci.yml", "content": "name: CI\non: [push, pull_request]\nconcurrency:\n  group: ${{ github.workflow }}-${{ github.ref }}\n  cancel-in-progress: true\njobs:\n  test:\n    runs-on: ubuntu-22.04\n    strategy:\n      matrix:\n        python-version: [\"3.8\", \"3.9\", \"3.10\"]\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n        with:\n          python-version: ${{ matrix.python-version }}\n      - run: pip install -e .[test]\n      - run: pytest -q\n"},
          "wrote 520 bytes to .github/workflows/ci.yml")
    s.run("run_shell", {"command": "git commit -qam 'ci: cancel superseded runs' && git push -q && git commit -q --allow-empty -m 'ci: concurrency check' && git push -q && sleep 90 && gh run list -L 2"},
          "exit code: 0\nSTATUS  TITLE                      WORKFLOW  BRANCH  EVENT  ID          ELAPSED  AGE\n✓       ci: concurrency check      CI        main    push   7920519902  52s      1m\nX       ci: cancel superseded runs CI        main    push   7920519455  6s       1m")
    s.run("run_shell", {"command": "gh run view 7920519455 --json conclusion -q .conclusion"}, "exit code: 0\ncancelled")
    s.say("Added a `concurrency` group per workflow and ref with `cancel-in-progress: true`. Test: two pushes in a row; the first run was `cancelled` as soon as the second started, and the second passed.")
    ok3 = s.user("works, thanks")
    t4 = s.user("could CI skip runs when only docs change? to save minutes")
    s.run("run_shell", {"command": "sed -i 's/^on: \\[push, pull_request\\]/on:\\n  push:\\n    paths: [\"**.py\", \"pyproject.toml\", \".github\\/workflows\\/**\"]\\n  pull_request:\\n    paths: [\"**.py\", \"pyproject.toml\", \".github\\/workflows\\/**\"]/' .github/workflows/ci.yml && sed -n '1,8p' .github/workflows/ci.yml"},
          "exit code: 0\nname: CI\non:\n  push:\n    paths: [\"**.py\", \"pyproject.toml\", \".github/workflows/**\"]\n  pull_request:\n    paths: [\"**.py\", \"pyproject.toml\", \".github/workflows/**\"]\nconcurrency:\n  group: ${{ github.workflow }}-${{ github.ref }}")
    paths = s.say("Added `paths` filters so the workflow only runs when Python files, pyproject.toml or the workflows change. Not committed yet.")
    s.user("hm, actually no, revert that. the docs build is in the same workflow soon and we want it on docs changes")
    s.run("run_shell", {"command": "git checkout -- .github/workflows/ci.yml && git status --short"}, "exit code: 0\n")
    rev = s.say("Reverted; the workflow runs on every push and PR as before.")

    L.task(t1, "Find out why a new CI workflow never runs (it was in .github/workflow/)")
    L.task(t2, "Fix the Python 3.10 matrix job asking for version 3.1 (quote versions in YAML)")
    L.task(t3, "Cancel superseded CI runs on the same branch (concurrency group)")
    L.task(t4, "Skip CI on docs-only changes (paths filter added, then reverted at the user's request)")
    L.lesson((find, wf_ok), "error",
             "A GitHub Actions workflow that never runs may sit in the wrong directory: workflows are only picked up from `.github/workflows/` (plural); a file in `.github/workflow/` is silently ignored.",
             "find shows .github/workflow/ci.yml; after git mv to .github/workflows the push triggers a run.",
             [[".github/workflows"], ["workflow/", "singular", "wrong directory", "ignored"]])
    L.lesson((t2, yml_ok), "error",
             "In a GitHub Actions matrix an unquoted `3.10` is parsed by YAML as the number 3.1, so setup-python fails with \"Version 3.1 was not found\"; quote Python versions as strings (\"3.10\").",
             "ci.yml has python-version: [3.8, 3.9, 3.10]; after quoting, all three jobs pass and the user confirms.",
             [["3.10"], ["yaml", "float", "number"], ["quote", "string"]])
    L.lesson((t3, ok3), "pattern",
             "To cancel superseded GitHub Actions runs, add `concurrency: {group: ${{ github.workflow }}-${{ github.ref }}, cancel-in-progress: true}` to the workflow.",
             "Two quick pushes: the first run ends 'cancelled', the second succeeds; the user confirms.",
             [["concurrency", "cancel-in-progress"], ["group", "github.ref", "superseded"]])
    L.non_lesson((paths, rev), "Add a paths filter so CI only runs when Python files change.",
                 "The change was reverted at the user's request (docs changes must trigger CI in this repo); it is not a confirmed practice.")
    return s


# =============================================================================================
# Output and validation
# =============================================================================================

SESSIONS = [f for name, f in sorted(globals().items()) if re.match(r"(cc|oa)\d\d_", name) and callable(f)]
OPEN_ROLES = {"user", "assistant"}


def _conv_kind(row: dict) -> str | None:
    """'user'/'assistant' for conversation rows (either format), else None."""
    if "role" in row and "type" not in row:
        return row["role"] if row["role"] in OPEN_ROLES else None
    return row.get("type") if row.get("type") in OPEN_ROLES else None


def _matches(keywords, text) -> bool:
    t = text.lower()
    return all(any(k.lower() in t for k in group) for group in keywords)


def _first_prompt(rows) -> int:
    for i, r in enumerate(rows, 1):
        if "role" in r and "type" not in r:
            if r["role"] == "user":
                return i
            continue
        if r.get("type") != "user" or r.get("isMeta") or r.get("isCompactSummary"):
            continue
        c = r["message"]["content"]
        if isinstance(c, str) and not c.startswith("<"):
            return i
    raise AssertionError("no user prompt")


def validate(files: dict[str, list[dict]], boundaries, lessons, non_lessons) -> list[str]:
    errs = []
    for name, rows in files.items():
        tool_ids, result_ids = set(), set()
        for i, r in enumerate(rows, 1):
            if "role" in r and "type" not in r:
                for c in r.get("tool_calls") or []:
                    tool_ids.add(c["id"])
                    json.loads(c["function"]["arguments"])
                if r["role"] == "tool":
                    result_ids.add(r["tool_call_id"])
            elif r.get("type") == "assistant":
                for b in r["message"]["content"]:
                    if b["type"] == "tool_use":
                        tool_ids.add(b["id"])
            elif r.get("type") == "user" and isinstance(r["message"]["content"], list):
                for b in r["message"]["content"]:
                    if b.get("type") == "tool_result":
                        result_ids.add(b["tool_use_id"])
        uuids = {r["uuid"] for r in rows if "uuid" in r}
        stamps = [r["timestamp"] for r in rows if "timestamp" in r and r.get("type") != "file-history-snapshot"]
        if stamps != sorted(stamps):
            errs.append(f"{name}: timestamps not monotonic")
        for i, r in enumerate(rows, 1):
            if r.get("parentUuid") and r["parentUuid"] not in uuids:
                errs.append(f"{name}:{i}: parentUuid points nowhere")
            if r.get("sourceToolAssistantUUID") and r["sourceToolAssistantUUID"] not in uuids:
                errs.append(f"{name}:{i}: sourceToolAssistantUUID points nowhere")
        if tool_ids != result_ids:
            errs.append(f"{name}: unmatched tool ids {sorted(tool_ids ^ result_ids)[:3]}")
    seen_files = set()
    for b in boundaries:
        name, rows = b["file"], files.get(b["file"])
        seen_files.add(name)
        if rows is None:
            errs.append(f"boundaries: unknown file {name}")
            continue
        if b["tasks"][0]["line"] != _first_prompt(rows):
            errs.append(f"{name}: first task at {b['tasks'][0]['line']}, first prompt at {_first_prompt(rows)}")
        prev = 0
        for t in b["tasks"]:
            ln, (lo, hi) = t["line"], t["window"]
            if not (lo <= ln <= hi) or not (1 <= lo and hi <= len(rows)):
                errs.append(f"{name}: task {ln} window {t['window']}")
            if _conv_kind(rows[ln - 1]) is None:
                errs.append(f"{name}: task line {ln} is not a user/assistant row")
            if t["kind"] not in {"user-request", "next-subtask", "side-task", "after-continuation"}:
                errs.append(f"{name}: task {ln} kind {t['kind']}")
            if ln <= prev:
                errs.append(f"{name}: tasks out of order at {ln}")
            prev = ln
    if seen_files != set(files):
        errs.append(f"boundaries cover {len(seen_files)} of {len(files)} files")
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
    built = [f() for f in SESSIONS]
    files = {s.name: s.rows for s in built}
    boundaries, lessons, non_lessons = [], [], []
    for s in built:
        boundaries.append({"file": s.name, "tasks": s.labels.tasks})
        lessons += s.labels.lessons
        non_lessons += s.labels.non_lessons
    for i, les in enumerate(lessons, 1):
        les["id"] = f"W{i:03d}"
    for i, nl in enumerate(non_lessons, 1):
        nl["id"] = f"WN{i:03d}"
    order = ["id", "file", "lines", "type", "lesson", "evidence", "keywords"]
    lessons = [{k: les[k] for k in order} for les in lessons]
    non_lessons = [{k: nl[k] for k in ["id", "file", "lines", "text", "why"]} for nl in non_lessons]
    return built, files, boundaries, lessons, non_lessons


def _load_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def summary(files, boundaries, lessons, non_lessons) -> str:
    from collections import Counter
    kinds = Counter(t["kind"] for b in boundaries for t in b["tasks"][1:])
    first = Counter(b["tasks"][0]["kind"] for b in boundaries)
    types = Counter(l["type"] for l in lessons)
    fmt = Counter("openai-chat" if n.startswith("oa") else "claude-code" for n in files)
    conv = {n: sum(1 for r in rows if _conv_kind(r) or (r.get("role") == "tool")) for n, rows in files.items()}
    out = [f"files: {len(files)} {dict(fmt)}",
           f"rows: {sum(len(r) for r in files.values())}; conversation messages per file: {min(conv.values())}-{max(conv.values())}",
           f"tasks: {sum(len(b['tasks']) for b in boundaries)}; boundaries: {sum(kinds.values())} {dict(kinds)}; first tasks {dict(first)}",
           f"lessons: {len(lessons)} {dict(types)}",
           f"non-lessons: {len(non_lessons)}"]
    for n in files:
        b = next(x for x in boundaries if x["file"] == n)
        out.append(f"  {n}: {len(files[n])} rows, {conv[n]} msgs, {len(b['tasks'])} tasks, "
                   f"{sum(1 for l in lessons if l['file'] == n)} lessons, {sum(1 for l in non_lessons if l['file'] == n)} non-lessons")
    return "\n".join(out)


def main(argv):
    if "--check" in argv:
        names = sorted(p.name for p in HERE.glob("*.jsonl") if re.match(r"(cc|oa)\d\d_", p.name))
        files = {n: _load_jsonl(HERE / n) for n in names}
        boundaries = _load_jsonl(HERE / "boundaries.jsonl")
        lessons = _load_jsonl(HERE / "lessons.jsonl")
        non_lessons = _load_jsonl(HERE / "non_lessons.jsonl")
    else:
        built, files, boundaries, lessons, non_lessons = collect()
        for old in HERE.glob("*.jsonl"):
            if re.match(r"(cc|oa)\d\d_", old.name):
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
