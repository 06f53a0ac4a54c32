"""Which format a session file is in, decided from its bytes alone (the pipeline re-parses stored
bytes without their name), and the parse that follows. Nothing here raises on bad input: what
cannot be read is counted by reason, and a file in no known format gets no messages and a reason
that names what was found instead.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ingestion.formats import aider, chat, codex, gemini, openhands, swe_agent
from ingestion.formats.base import Collector, ParsedSession

FORMAT_NAMES = {
    "claude-code": "Claude Code", "anthropic": "Anthropic messages", "openai-chat": "OpenAI chat",
    "plain": "plain {role, content}", "codex": "Codex CLI", "swe-agent": "SWE-agent", "openhands": "OpenHands",
    "aider": "Aider", "gemini-cli": "Gemini CLI",
}
EXPECTED = ("expected a session from Claude Code, OpenAI chat, Anthropic messages, plain {role, content} "
            "rows, Codex CLI, SWE-agent, OpenHands, Aider or Gemini CLI")
# When rows of several formats are met (a mixed or odd file), the one with most rows wins; on a
# tie, the more specific format.
_PRIORITY = {"chat": 0, "gemini-cli": 1, "openhands": 2, "codex": 3}
_MISSING = object()
_SNIFF_MARKERS = (b'"role"', b'"sessionId"', b'"trajectory"', b'"observation"', b'"action"', b'"parts"',
                  b'"payload"', b'"messages"', b'"kind"')


def _row_format(row: Any) -> str:
    # The specific formats are asked first; chat's {role, content} is the loosest shape, asked last.
    if codex.claims(row):
        return "codex"
    if openhands.claims(row):
        return "openhands"
    if gemini.claims(row):
        return "gemini-cli"
    return "chat" if chat.variant(row) else ""


def _keys(value: dict[Any, Any]) -> str:
    keys = sorted(str(k) for k in value)
    return ", ".join(keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "") if keys else "no keys"


def _done(out: Collector, fmt: str, lines: int) -> ParsedSession:
    session = out.session(fmt, lines)
    if not session.messages:
        malformed = sum(session.malformed.values())
        session.reason = (f"no conversation messages found in this {FORMAT_NAMES[fmt]} session "
                          f"({session.skipped} entries skipped, {malformed} malformed)")
    return session


def _unknown(found: str, lines: int, malformed: Counter | None = None) -> ParsedSession:
    return ParsedSession([], lines, malformed or Counter(), 0, "", f"unrecognised format: {found}; {EXPECTED}")


def _rows(data: bytes) -> tuple[list[tuple[int, Any]], Counter]:
    """JSON lines, each counted as malformed by reason when it cannot be read."""
    rows: list[tuple[int, Any]] = []
    malformed: Counter = Counter()
    for number, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            malformed["bad encoding"] += 1
            continue
        if "\x00" in text:
            malformed["binary data"] += 1
            continue
        try:
            # RecursionError too: a line nested too deeply to decode (hostile input) is bad JSON like any other.
            rows.append((number, json.loads(text)))
        except (ValueError, RecursionError):
            malformed["bad JSON"] += 1
    return rows, malformed


def _describe(rows: list[tuple[int, Any]], malformed: Counter, data: bytes, name: str) -> str:
    if rows:
        first = next((row for _, row in rows if isinstance(row, dict)), None)
        count = f"{len(rows)} JSON line{'s' if len(rows) != 1 else ''}"
        if first is None:
            return f"{count}, not an object" if len(rows) == 1 else f"{count}, none of them an object"
        return f"{count} whose first object has keys {_keys(first)}"
    text = _decode(data)
    if text is None:
        return "binary or non-UTF-8 data"
    if name.lower().endswith(".md"):
        return "Markdown without Aider's chat markers ('# aider chat started at', '#### ' user lines)"
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"text that is not JSON (first line: {first_line[:80]!r})"


def _from_rows(rows: list[tuple[int, Any]], malformed: Counter, lines: int, data: bytes,
               name: str) -> ParsedSession:
    counts = Counter(f for f in (_row_format(row) for _, row in rows) if f)
    if not counts:
        return _unknown(_describe(rows, malformed, data, name), lines, malformed)
    fmt = max(counts, key=lambda f: (counts[f], _PRIORITY[f]))
    if fmt == "chat":
        out, fmt = chat.parse(rows)
    else:
        out = {"codex": codex.parse, "openhands": openhands.parse, "gemini-cli": gemini.parse}[fmt](rows)
    out.malformed.update(malformed)
    return _done(out, fmt, lines)


def _from_document(doc: Any, lines: int, name: str) -> ParsedSession:
    if swe_agent.claims(doc):
        return _done(swe_agent.parse(doc), "swe-agent", lines)
    kind = gemini.document_kind(doc)
    if kind:
        return _done(gemini.parse_document(doc, kind), "gemini-cli", lines)
    events = openhands.events_of(doc)
    if events is not None:
        return _done(openhands.parse(list(enumerate(events, 1))), "openhands", lines)
    if isinstance(doc, list):  # a whole-file array of rows
        return _from_rows(list(enumerate(doc, 1)), Counter(), lines, b"", name)
    if _row_format(doc):  # a one-row file
        return _from_rows([(1, doc)], Counter(), lines, b"", name)
    return _unknown(f"a JSON object with keys {_keys(doc)}", lines)


def _decode(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def _one_document(body: bytes) -> Any:
    """The file as one JSON document, or _MISSING for JSON lines (a first line that is a whole
    JSON value with more after it: not worth decoding the whole file to find out) and broken JSON."""
    first, _, rest = body.lstrip().partition(b"\n")
    if rest.strip():
        try:
            json.loads(first)
            return _MISSING
        except (ValueError, RecursionError):
            pass
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # broken JSON, or not UTF-8: read line by line
        return _MISSING


def parse_session(data: bytes, name: str = "") -> ParsedSession:
    """Parse a session file in any supported format, detected from its content; ``name`` (the
    file's name, when known) only sharpens the reason given for a file that is in none."""
    lines = len(data.splitlines())
    if not data.strip():
        return ParsedSession([], lines, Counter(), 0, "", "empty file")
    # A UTF-8 byte-order mark would hide the opening bracket from the test below.
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    if body.lstrip()[:1] in (b"[", b"{"):
        doc = _one_document(body)
        if doc is not _MISSING:
            return _from_document(doc, lines, name)
    else:
        text = _decode(body)
        if text is not None and aider.claims(text):
            return _done(aider.parse(text), "aider", lines)
    rows, malformed = _rows(body)
    return _from_rows(rows, malformed, lines, body, name)


def looks_like_session(head: bytes) -> bool:
    """Whether the first bytes of a ``.json`` file found in a directory walk look like a session
    (a JSON document naming a key the supported formats use); the full parse decides later."""
    body = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    return body.lstrip()[:1] in (b"[", b"{") and any(marker in body for marker in _SNIFF_MARKERS)
