"""The raw archive of a session file, redacted: JSON-aware, so that a secret inside an escaped
string is seen as the text it decodes to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memories.redaction.policy import Occasion, redact_for


def _json_strings(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _json_strings(item, found)
    elif isinstance(value, list):
        for item in value:
            _json_strings(item, found)


def _json_replace(value: Any, cleaned: Iterator[str]) -> Any:
    if isinstance(value, str):
        return next(cleaned)
    if isinstance(value, dict):
        return {key: _json_replace(item, cleaned) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_replace(item, cleaned) for item in value]
    return value


def _json_or_none(text: str) -> Any:
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        document = json.loads(text)
        _json_strings(document, [])  # nesting too deep to walk is read as text
        return document
    except (ValueError, RecursionError):
        return None


def archive_redact(data: bytes) -> str:
    """The redacted text the archive keeps. A session file is JSON (one document, or one per
    line), where a secret sits inside an escaped string (``\\"Gmail2023?\\"`` after a ``\\n``)
    that the detectors do not see as such: each string value is redacted as the text it
    decodes to, then every line of the re-encoded JSON (or of plain text) as it reads, which
    keeps the ``"password": "…"`` context the value alone lacks.

    The archive's policy (``policy.Occasion.ARCHIVE``) leaves person names out: a session file is
    megabytes of tool output, and names cost six times the rest (bench/ingest.py). What the
    pipeline keeps of a session, its segments and memories, is redacted with names too."""
    # Bytes that are not UTF-8 still reach the detectors, as replacement characters, and leave as them.
    text = data.decode("utf-8", errors="replace")
    # A one-line file is read line by line anyway: the whole-document parse is for JSON spread over lines.
    whole = _json_or_none(text) if "\n" in text.strip() else None
    if whole is not None:
        pieces, documents = [text], [whole]
    else:
        pieces = text.split("\n")
        documents = [_json_or_none(line) for line in pieces]
    strings: list[str] = []
    for document in documents:
        if document is not None:
            _json_strings(document, strings)
    # Sessions repeat themselves (a file read twice, the same command output): each distinct
    # string is redacted once.
    distinct = list(dict.fromkeys(strings))
    redacted = dict(zip(distinct, (r.text for r in redact_for(Occasion.ARCHIVE, distinct)), strict=True))
    cleaned = iter([redacted[string] for string in strings])
    rebuilt = [
        piece if document is None
        # A whole document is re-encoded over many lines (indent=1): on one line it would exceed the 2,000
        # characters past which the keyword detector skips a line (detectors.find).
        else json.dumps(_json_replace(document, cleaned), ensure_ascii=False, indent=1 if whole is not None else None)
        for piece, document in zip(pieces, documents, strict=True)
    ]
    lines = "\n".join(rebuilt).split("\n")
    distinct = list(dict.fromkeys(lines))
    redacted = dict(zip(distinct, (r.text for r in redact_for(Occasion.ARCHIVE, distinct)), strict=True))
    return "\n".join(redacted[line] for line in lines)
