"""Gemini CLI logs, saved chats and recorded sessions (under ``~/.gemini/tmp/<project hash>/``).

Shapes, from google-gemini/gemini-cli:

- ``logs.json`` (``packages/core/src/core/logger.ts``, ``LogEntry``): a JSON array of
  ``{sessionId, messageId, timestamp, type: "user", message}`` — the user's prompts only.
- ``checkpoint-<tag>.json`` (same file, ``Checkpoint``; ``/chat save``): ``{"history": [Content]}``,
  or a bare array of ``Content`` in older versions; ``Content`` is the Gemini API's
  ``{role: "user"|"model", parts: [{text, thought?} | {functionCall: {id?, name, args}} |
  {functionResponse: {id?, name, response: {output}|{error}}}]}``. Calls without an id are paired
  with the next response of the same name: ``gemini-<row>-<part>``.
- ``chats/session-*.json`` / ``.jsonl`` (``packages/core/src/services/chatRecordingService.ts`` and
  ``chatRecordingTypes.ts``): ``ConversationRecord`` ``{sessionId, projectHash, startTime,
  lastUpdated, messages: [MessageRecord]}``; the JSONL form writes that metadata first, then one
  ``MessageRecord`` per line (a re-written message repeats its ``id``), ``{"$set": …}`` metadata
  updates and ``{"$rewindTo": id}`` to drop a message and everything after it. A ``MessageRecord``
  is ``{id, timestamp, type: user|gemini|info|error|warning, content, thoughts?, toolCalls?:
  [{id, name, args, result, status, resultDisplay?}]}``.

The shell tool (``run_shell_command``, ``packages/core/src/tools/shell.ts``) reports ``Exit Code:
N`` in its output when the command fails.
"""

from __future__ import annotations

from typing import Any

from ingestion.formats.base import (
    Collector,
    Message,
    build,
    call_text,
    looks_failed,
    make_call,
    obj,
    result_text,
    spoken_first,
    stringify,
    text_of,
    thinking_text,
)

_RECORD_TYPES = {"user", "gemini", "info", "error", "warning"}
# The CLI opens every chat with its own context turn and the model's acknowledgement.
_CONTEXT = "This is the Gemini CLI. We are setting up the context for our chat."
_ACK = "Got it. Thanks for the context!"


def document_kind(doc: Any) -> str:
    """"logs", "contents", "session" or "" for a whole-file JSON document."""
    if isinstance(doc, dict):
        if isinstance(doc.get("messages"), list) and ("sessionId" in doc or "projectHash" in doc):
            return "session"
        doc = doc.get("history") if isinstance(doc.get("history"), list) else None
        return "contents" if doc is not None and any(_is_content(c) for c in doc[:50]) else ""
    if isinstance(doc, list):
        head = [e for e in doc[:50] if isinstance(e, dict)]
        if any({"sessionId", "messageId", "message"} <= e.keys() for e in head):
            return "logs"
        if any(_is_content(e) for e in head):
            return "contents"
    return ""


def _is_content(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") in ("user", "model") and isinstance(item.get("parts"), list)


def claims(row: Any) -> bool:
    """A line of a JSONL session recording."""
    if not isinstance(row, dict):
        return False
    if "$rewindTo" in row or "$set" in row or {"sessionId", "projectHash"} <= row.keys():
        return True
    return row.get("type") in _RECORD_TYPES and "id" in row and "content" in row and "role" not in row \
        and "message" not in row


def _response(value: Any) -> tuple[str, bool]:
    """A tool result (a string, a part, or a list of parts with functionResponse) → (text, failed)."""
    if isinstance(value, list):
        pieces = [_response(v) for v in value]
        return "\n".join(p[0] for p in pieces if p[0]), any(p[1] for p in pieces)
    if isinstance(value, dict) and isinstance(value.get("functionResponse"), dict):
        response = value["functionResponse"].get("response")
        if isinstance(response, dict):
            if response.get("error"):
                return stringify(response["error"]), True
            response = response.get("output", response)
        value = response
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        value = value["text"]
    text = "" if value is None else stringify(value)
    return text, looks_failed(text)


class _Contents:
    """Gemini API ``Content`` turns (saved chats, checkpoints)."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.pending: dict[str, list[str]] = {}

    def model(self, parts: list[Any], number: int) -> None:
        texts: list[str] = []
        calls: list[dict[str, str]] = []
        for index, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                texts.append(thinking_text(part["text"]) if part.get("thought") else part["text"])
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                name = stringify(call.get("name", "tool"))
                args = obj(call.get("args"))
                call_id = call.get("id") or f"gemini-{number}-{index}"
                self.pending.setdefault(name, []).append(call_id)
                calls.append(make_call(call_id, name, args))
                texts.append(call_text(name, stringify(args)))
        if not calls and "".join(texts).strip() == _ACK:
            self.out.skipped += 1
            return
        self.out.add(build("assistant", number, spoken_first(texts), tool_names=[c["name"] for c in calls], calls=calls))

    def user(self, parts: list[Any], number: int) -> None:
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        results: list[Message | None] = []
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                name = stringify(part["functionResponse"].get("name", "tool"))
                waiting = self.pending.get(name) or []
                call_id = part["functionResponse"].get("id") or (waiting[0] if waiting else "")
                if call_id in waiting:
                    waiting.remove(call_id)
                text, failed = _response(part)
                results.append(build("tool", number, [result_text(text or "(no output)", failed)],
                                     is_tool_result=True, is_error=failed, call_ids=[call_id] if call_id else []))
        if texts and texts[0].startswith(_CONTEXT):
            self.out.skipped += 1
        elif texts or not results:
            self.out.add(build("user", number, texts))
        for result in results:
            self.out.add(result)


def _record(record: dict[str, Any], number: int, out: Collector) -> None:
    kind = record.get("type")
    if kind == "user":
        out.add(build("user", number, [text_of(record.get("content"))]))
        return
    if kind != "gemini":
        out.skipped += 1  # info, warning and error notices of the CLI itself
        return
    parts = [thinking_text(f"{t.get('subject', '')}: {t.get('description', '')}".strip(": "))
             for t in record.get("thoughts") or [] if isinstance(t, dict)]
    parts.append(text_of(record.get("content")))
    calls = [c for c in record.get("toolCalls") or [] if isinstance(c, dict)]
    made: list[dict[str, str]] = []
    for call in calls:
        name = stringify(call.get("name", "tool"))
        args = obj(call.get("args"))
        made.append(make_call(call.get("id") or f"gemini-{number}-{len(made)}", name, args))
        parts.append(call_text(name, stringify(args)))
    out.add(build("assistant", number, parts, tool_names=[c["name"] for c in made], calls=made))
    for call, summary in zip(calls, made, strict=True):
        text, failed = _response(call.get("result"))
        if not text.strip() and isinstance(call.get("resultDisplay"), str):
            text = call["resultDisplay"]
        failed = failed or call.get("status") == "error"
        out.add(build("tool", number, [result_text(text or "(no output)", failed)], is_tool_result=True,
                      is_error=failed, call_ids=[summary["id"]]))


def parse_document(doc: Any, kind: str) -> Collector:
    out = Collector()
    if kind == "session":
        for number, record in enumerate(doc["messages"], 1):
            if isinstance(record, dict):
                _record(record, number, out)
            else:
                out.bad("not an object")
        return out
    if kind == "logs":
        for number, entry in enumerate(doc, 1):
            if not isinstance(entry, dict) or not isinstance(entry.get("message"), str):
                out.bad("not a log entry")
            elif entry.get("type") == "user":
                out.add(build("user", number, [entry["message"]]))
            else:
                out.skipped += 1
        return out
    contents = _Contents(out)
    for number, item in enumerate(doc["history"] if isinstance(doc, dict) else doc, 1):
        if not _is_content(item):
            out.bad("not a Content object")
        elif item["role"] == "model":
            contents.model(item["parts"], number)
        else:
            contents.user(item["parts"], number)
    return out


def parse(rows: list[tuple[int, Any]]) -> Collector:
    """The JSONL session recording: metadata, message records (the last write of an id wins),
    ``$set`` updates and ``$rewindTo`` marks."""
    out = Collector()
    records: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, row in rows:
        if not isinstance(row, dict):
            out.bad("not an object")
        elif isinstance(row.get("$rewindTo"), str):
            ids = list(records)
            cut = ids.index(row["$rewindTo"]) if row["$rewindTo"] in ids else 0
            for gone in ids[cut:]:
                del records[gone]
            out.skipped += 1
        elif isinstance(row.get("id"), str) and row.get("type") in _RECORD_TYPES:
            # A re-written message keeps the place of its first write; the content of its last write wins.
            first = records.get(row["id"], (number, row))[0]
            records[row["id"]] = (first, row)
        else:
            out.skipped += 1  # session metadata, $set updates
    for number, record in records.values():
        _record(record, number, out)
    return out
