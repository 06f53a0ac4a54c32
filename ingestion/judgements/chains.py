"""Error → investigation → fix chains in a transcript, found without an LLM.

A chain starts at a failing tool call (``is_error``, a non-zero exit, a stack trace) and ends at a
later call of the *same command* (same program and sub-command, e.g. ``git push``, ``npm run
build``, ``pytest``) that no longer fails with that error. What the agent did in between is the
fix: files it changed, commands that changed something (installs, upgrades, migrations), and the
final command when it differs from the failing one; what it said in between is the explanation.
Checks seen in between (``node --version``) are the context. Calls the user rejected, file-tool
mechanics (an edit whose old text was not found) and re-runs that pass with nothing changed
(a flaky step) teach nothing reusable and are left out.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
from dataclasses import dataclass, field

from ingestion.judgements.commands import (
    VERSION_RE,
    command_change,
    command_key,
    command_parts,
    is_look,
    is_verify,
    runs_again,
    short_command,
    strip_shell,
)
from ingestion.judgements.cues import ERROR_RE, EXPLAIN_RE, REJECTED_RE, is_error, named_things
from ingestion.parsing import Message
from memories.text import first_sentence, normalise_space, truncate_tokens

SHELL_TOOLS = {"bash", "shell", "exec_command", "local_shell_call", "run_shell_command", "execute_command",
               "run", "cmdrunaction", "terminal", "powershell", "container.exec"}
EDIT_TOOLS = {"edit", "write", "multiedit", "notebookedit", "apply_patch", "str_replace_editor", "create_file",
              "write_file", "replace", "edit_file", "str_replace_based_edit_tool"}
# Programs whose first non-option argument names what is being done (``git push``, ``npm run build``).
_VERSION_OUT = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\b")
_SPECIFIC_ERROR = re.compile(r"\b(?:fatal|cannot|can't|could not|couldn't|unable to|not found|denied|invalid|refused"
                             r"|not formatted|undefined|missing|unknown|unsupported|not supported|timed out"
                             r"|is not an? [\w-]+ command|not recognized)\b", re.I)
# "Total errors: 2", "3 failed, 41 passed": a count says that something failed, not what.
_SUMMARY_LINE = re.compile(r"^\W*(?:total\s+)?(?:errors?|failures?|warnings?|issues?)\s*:\s*\d+"
                           r"|^\W*\d+\s+(?:errors?|failures?|failed|issues?|warnings?)\b[\s\w,]*$", re.I)
# A compiler's or linter's diagnostic: ``path/to/file.ext:LINE[:COL]: message``.
_DIAGNOSTIC = re.compile(r"^[\w./-]+\.\w{1,5}:\d+(?::\d+)?:\s*\S.{8,}")
_CAUSED_BY = re.compile(r"^\s*Caused by:?\s*$", re.I | re.M)
_GENERIC_ERROR = re.compile(r"\b(?:error|errors|fail(?:ed|s|ure)?)\b", re.I)
_MARKUP = re.compile(r"</?[a-z][\w-]*[^>]*>.*</?[a-z][\w-]*|\\\"", re.I)  # HTML or escaped JSON dumps
_NOISE_LINE = re.compile(r"^\s*(?:\[tool result(?: ERROR)?\]\s*)?(?:exit (?:code|status):? \d+\s*)?$", re.I)
_MECHANICS = re.compile(r"<tool_use_error>|string to replace not found|has not been read yet|file does not exist"
                        r"|no changes to make|old_string|is not a valid|unknown tool", re.I)
_PLANNING = re.compile(r"^(?:let me|let.s|now (?:let|I|also)|also,? |i'll|i will|next,|first,|ok(?:ay)?,|i have two options)", re.I)
_CAUSAL = re.compile(r"\b(?:because|since|means|requires?|needs?|doesn'?t support|does not support|not supported"
                     r"|missing|instead|the (?:issue|problem|cause|error|fix|reason)|root cause|turns out|caused by"
                     r"|returns|expects?|has to|have to|must be|was (?:not|never)|wasn'?t)\b|,\s+so\s|原因|因为|需要", re.I)


@dataclass
class Step:
    """One tool call and (when seen) its result."""

    call: int  # index of the message holding the call
    name: str
    target: str  # the command for shell tools, the file for file tools
    result: int | None = None
    failed: bool = False
    output: str = ""

    @property
    def is_shell(self) -> bool:
        # Formats name their shell tools many ways: an unlisted tool whose target reads as a command line
        # (words with spaces, not a path) counts as a shell.
        return self.name.lower() in SHELL_TOOLS or (bool(self.target) and self.name.lower() not in EDIT_TOOLS
                                                   and " " in self.target and not self.target.startswith("/"))

    @property
    def is_edit(self) -> bool:
        return self.name.lower() in EDIT_TOOLS


@dataclass
class Chain:
    failed: Step
    passed: Step
    error: str
    fixes: list[str] = field(default_factory=list)
    explanation: str = ""
    checks: list[str] = field(default_factory=list)

    @property
    def command(self) -> str:
        return short_command(self.failed.target, 70)


def _calls_of(message: Message) -> list[dict]:
    calls = getattr(message, "calls", None)
    if calls:
        return [c for c in calls if isinstance(c, dict)]
    # Segments stored before tool calls were kept as fields: read them back from the text.
    found = []
    for match in re.finditer(r"\[tool call ([^\]]+)\] (\{.*?\})(?=\n\[tool call |\Z)", message.text, re.S):
        name, raw = match.group(1), match.group(2)
        try:
            data = json.loads(raw)
        except ValueError:
            data = {}
        target = ""
        if isinstance(data, dict):
            target = str(data.get("command") or data.get("cmd") or data.get("file_path") or data.get("path") or "")
        found.append({"id": "", "name": name, "target": target})
    return found


def steps_of(messages: list[Message]) -> list[Step]:
    """Tool calls paired with their results: by id where the format keeps one, else in order."""
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    waiting: list[Step] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            for call in _calls_of(message):
                step = Step(index, str(call.get("name") or "tool"), str(call.get("target") or ""))
                steps.append(step)
                waiting.append(step)
                if call.get("id"):
                    by_id[str(call["id"])] = step
        elif message.is_tool_result:
            ids = [i for i in getattr(message, "call_ids", None) or [] if i in by_id]
            # Without a known call id the result answers the oldest call still waiting (the docstring's "in order").
            answered = [by_id[i] for i in ids] or ([waiting[0]] if waiting else [])
            for step in answered:
                if step.result is None:
                    step.result, step.failed, step.output = index, is_error(message), message.text
                if step in waiting:
                    waiting.remove(step)
    return steps


def _specificity(line: str) -> int:
    """How much an error line names: an error code or class, a module or file, some words beyond
    a tool's prefix (``npm ERR!`` on its own says nothing)."""
    body = re.sub(r"^\s*(?:npm ERR!|error:|ERROR:?|E\s|#\d+ ERROR:?)\s*", "", line)
    body = re.sub(r"^(?:[Ee]xit (?:code|status) \d+|errno \d+|code \w+)$", "", body.strip())
    score = min(len(body.split()), 12)
    if re.search(r"\b[A-Z][A-Z0-9_]{4,}\b|\b\w+(?:Error|Exception)\b", line):
        score += 6
    if re.search(r"[\w./-]+\.\w{1,5}\b|`[^`]+`|'[^']+'|\"[^\"]+\"", line):
        score += 3
    return score - (8 if len(body.split()) < 3 else 0)


def error_line(output: str) -> str:
    """The line of a failing result that says what went wrong."""
    # Outputs kept as escaped JSON carry literal "\n": they are split into lines like real ones.
    lines = [line for line in output.replace("\\n", "\n").splitlines() if not _NOISE_LINE.match(line)]
    cleaned = [re.sub(r"^\s*\[tool result(?: ERROR)?\]\s*(?:Exit code \d+\s*)?", "", line).strip() for line in lines]
    cleaned = [re.sub(r"^E {2,}", "", line) for line in cleaned]  # pytest marks the failure's own lines "E   "
    cleaned = [line for line in cleaned if len(line) > 6 and not _MARKUP.search(line)]
    candidates = [line for line in cleaned if ERROR_RE.search(line) or _SPECIFIC_ERROR.search(line)
                  or _GENERIC_ERROR.search(line) or _DIAGNOSTIC.match(line)][:12]
    if candidates:
        # The line that names the problem wins (flow.md#offline-extraction): error codes and classes and
        # path:line: diagnostics first, counts ("3 failed") and headers ("Errors:") last.
        best = max(candidates, key=lambda line: _specificity(line) + (4 if ERROR_RE.search(line) else 0)
                   + (2 if _SPECIFIC_ERROR.search(line) else 0) + (2 if _DIAGNOSTIC.match(line) else 0)
                   - (12 if _SUMMARY_LINE.search(line) else 0) - (6 if line.endswith(":") else 0))  # a header
        return normalise_space(best + _cause(output))[:240]
    # The call failed (exit code, error flag) without an error word: its first line says why.
    return normalise_space(cleaned[0])[:240] if cleaned and len(cleaned[0].split()) >= 3 else ""


def _cause(output: str) -> str:
    """The first line under ``Caused by:`` (Cargo, Java, Python's chained errors say the root
    cause there), as `` (caused by: …)``."""
    match = _CAUSED_BY.search(output.replace("\\n", "\n"))
    if not match:
        return ""
    below = [line.strip() for line in output.replace("\\n", "\n")[match.end():].splitlines() if line.strip()]
    return f" (caused by: {below[0]})" if below else ""


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z_][\w.:-]{3,}", text)}


def _explanation(messages: list[Message], start: int, end: int, error: str = "") -> str:
    """The agent's own account of the cause or fix between the failure and the pass: the
    sentence with the most causal cues, preferring what the agent said aloud, said early, and
    said about this error (words shared with the error line)."""
    error_words = _words(error)
    spoken = [m.text for m in messages[start:end] if m.role == "assistant" and not m.text.startswith("[tool call")]
    visible = [t for t in spoken if not t.startswith("[thinking]")]
    thinking = [t.removeprefix("[thinking]").strip() for t in spoken if t.startswith("[thinking]")]
    best, best_score = "", 0
    for group, weight in ((visible, 2), (thinking, 1)):
        for order, text in enumerate(group):
            for sentence in re.split(r"(?<=[.!?。])\s+|\n+", text):
                sentence = sentence.strip(" -*:")
                # Planning ("Let me check …") says what the agent will do next, not why the command failed.
                if len(sentence.split()) < 5 or _PLANNING.match(sentence) or sentence.startswith("[tool "):
                    continue
                cues = len(_CAUSAL.findall(sentence)) + len(EXPLAIN_RE.findall(sentence))
                shared = len(error_words & _words(sentence))
                score = cues * 10 + weight * 3 - min(order, 5) + (2 if "`" in sentence else 0) + 4 * min(shared, 3)
                # A sentence with no causal cue is no explanation, however early or close to the error it is.
                if cues and score > best_score:
                    best, best_score = sentence, score
    return truncate_tokens(normalise_space(best), 60) if best else ""


def _string_field(text: str, name: str) -> str:
    match = re.search(rf'"{name}":\s*"((?:[^"\\]|\\.)*)', text)
    if not match:
        return ""
    try:
        return json.loads(f'"{match.group(1)}"')
    except ValueError:
        return match.group(1).replace("\\n", "\n")


def _says(line: str) -> int:
    """How much an added line says: names and values count, structure (``{``, ``import (``,
    ``[section]``, ``module.exports = {``) does not."""
    words = re.findall(r"[A-Za-z_][\w.-]*|\d[\w.]*", line)
    score = min(len(words), 8)
    if re.search(r"[=:]\s*\S", line) and not re.search(r"[=:]\s*[{(\[]\s*$", line):
        score += 3
    if re.search(r"[{(\[]\s*$|^\W*\w+\W*$|^\[[^\]]*\]$", line):
        score -= 6
    return score


def edit_gist(call_text: str) -> str:
    """The line an edit added (new text not in the old) that says the most, short: what the fix
    actually was."""
    # Claude Code's Edit/Write (new_string, content), Anthropic's text editor tool (new_str, file_text).
    new = next(filter(None, (_string_field(call_text, name) for name in ("new_string", "new_str", "content",
                                                                           "file_text"))), "")
    old = _string_field(call_text, "old_string") or _string_field(call_text, "old_str")
    before = {line.strip() for line in old.splitlines()}
    added = [line.strip() for line in new.splitlines()]
    # A comment the edit added is not what the fix changed; the fix is in the code or setting lines.
    added = [line for line in added if len(line) >= 8 and line not in before
             and not line.startswith(("#", "//", "/*", "*", "--", "\"\"\""))]
    if not added:
        return ""
    best = max(added[:40], key=_says)  # ties keep the earliest line
    return best if len(best) <= 100 else best[:99] + "…"


def _fixes(messages: list[Message], steps: list[Step], failed: Step, passed: Step) -> tuple[list[str], list[str]]:
    fixes: list[str] = []
    checks: list[str] = []
    for step in steps:
        if not failed.call < step.call < passed.call or step.failed or not_done(step):
            continue  # a call the user rejected, or the file tool's own mechanics, changed nothing
        if step.is_edit and step.target:
            gist = edit_gist(messages[step.call].text)
            label = f"edited {posixpath.basename(step.target.rstrip('/'))}" + (f" (`{gist}`)" if gist else "")
            if label not in fixes:
                fixes.append(label)
        elif step.is_shell and step.target:
            # A version check (`node --version`) is what the agent saw, not what it changed: it goes to the
            # context (flow.md: "the versions checked in between"), never to the fix.
            if VERSION_RE.search(strip_shell(step.target)) and step.output:
                seen = _VERSION_OUT.search(step.output)
                if seen:
                    checks.append(f"{short_command(step.target, 40)} → {seen.group(0)}")
                continue
            key = command_key(step.target)
            # Only commands that changed something are a fix: looking, verifying and re-running the failing
            # command itself are not.
            if is_look(step.target) or is_verify(step.target) or key == command_key(failed.target):
                continue
            label = f"ran `{short_command(step.target)}`"
            if label not in fixes:
                fixes.append(label)
    # The passing run may carry the fix in its own line: the steps before the re-run (`go mod tidy &&
    # go build`) and the flags or arguments it changed.
    rerun = runs_again(passed.target, failed.target)
    if rerun is not None:
        part, before = rerun
        done_before = set(command_parts(failed.target))
        fixes.extend(f"ran `{short_command(p)}`" for p in before if p not in done_before)
        change = command_change(strip_shell(failed.target), part)
        if change:
            fixes.append(change)
    return fixes[:6], checks[:4]


def _same_failure(error: str, output: str) -> bool:
    """Whether a later run failed the same way: the same error line, or the message the error line
    ends with ("… write /var/lib/docker/…: no space left on device") in the later output, wherever
    the tool printed it this time."""
    if error_line(output) == error:
        return True
    tail = error.rsplit(": ", 1)[-1].strip()
    return len(tail.split()) >= 3 and tail.lower() in output.lower()


def not_done(step: Step) -> bool:
    return bool(REJECTED_RE.search(step.output[:300]) or _MECHANICS.search(step.output[:300]))


def _typo(error: str, fixes: list[str]) -> bool:
    """The error or the failing command names a word the fix spells differently by a letter or
    two (``buider`` → ``builder``): a slip of the keyboard, not something another agent needs to know."""
    named = {w for w in re.findall(r"[A-Za-z_][\w-]{4,}", error)}
    written = {w for w in re.findall(r"[A-Za-z_][\w-]{4,}", " ".join(fixes))} - named
    pairs = ((a.lower(), b.lower()) for a in named for b in written if abs(len(a) - len(b)) <= 2)
    return any(a not in b and b not in a and difflib.SequenceMatcher(None, a, b).ratio() >= 0.85 for a, b in pairs)


def chains_find(messages: list[Message], notes: list[str] | None = None) -> list[Chain]:
    """Each failing command paired with the later run of the same command that got past its error.
    Why a failure gave no chain goes to ``notes``."""
    steps = [s for s in steps_of(messages) if s.result is not None]
    chains: list[Chain] = []
    used: set[int] = set()
    for position, step in enumerate(steps):
        # A chain needs a command that can be run again to show the fix worked; a failed run already seen
        # as a repeat of an earlier failure (``used``) is part of that earlier chain.
        if not step.failed or not step.is_shell or step.call in used:
            continue
        if REJECTED_RE.search(step.output) or not_done(step):
            continue
        key = command_key(step.target)
        error = error_line(step.output)
        # Without a command to compare later runs with, or an error line to name, there is no memory to
        # write: its content is the command and its error line.
        if not key or not error:
            continue
        said = f"`{short_command(step.target, 60)}` (message {step.call})"
        for later in steps[position + 1 :]:
            if not later.is_shell or runs_again(later.target, step.target) is None:
                continue
            if REJECTED_RE.search(later.output[:300]):
                continue  # the user stopped it: it never ran
            if later.failed and _same_failure(error, later.output):
                used.add(later.call)  # the same error again: keep looking for the run that got past it
                continue
            fixes, checks = _fixes(messages, steps, step, later)
            if not fixes:
                note(notes, f"{said} passed on a later run with nothing changed in between (a flaky step)")
                break
            if _typo(f"{error} {short_command(step.target, 200)}", fixes):
                note(notes, f"{said} was fixed by correcting a misspelling: nothing to reuse")
                break
            explanation = _explanation(messages, step.result or step.call, later.call, error)
            chains.append(Chain(step, later, error, fixes, explanation, checks))
            break
        else:
            if step.call not in used:
                note(notes, f"{said} failed ({truncate_tokens(error, 20)}) and was not run again successfully")
    return chains


def note(notes: list[str] | None, text: str) -> None:
    if notes is not None and text not in notes:
        notes.append(text)


def undoes(request: str, chains: list[Chain]) -> bool:
    """Whether an undo (the user's request, or a ``git checkout/restore/revert/reset/stash``) takes
    back the work of these chains: it names nothing in particular ("revert that", ``git stash``),
    or it names a thing one of their fixes changed. "Revert the default_server bit, it wasn't asked
    for" takes back an extra, not the fix."""
    # A flag (`git reset --hard`) says how to undo, not what: an undo naming only flags takes back all.
    named = {thing for thing in named_things(request) if not thing.startswith("-")}
    if not named or not chains:
        return True
    return any(named & named_things(f"{chain_content(chain)} {chain_resolution(chain)}") for chain in chains)


def chain_context(chain: Chain) -> str:
    parts = [f"running `{chain.command}`"]
    if chain.checks:
        parts.append("seen: " + "; ".join(chain.checks))
    return ", ".join(parts)


def chain_resolution(chain: Chain) -> str:
    steps = "; ".join(chain.fixes)
    if chain.explanation:
        return f"{chain.explanation.rstrip('.:')}. Fix: {steps}."
    return f"Fix: {steps}."


def chain_content(chain: Chain) -> str:
    return f"`{chain.command}` failed with: {first_sentence(chain.error, min_words=3)}"[:300]
