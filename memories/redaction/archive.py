"""The raw archive of a session file, redacted: JSON-aware, so that a secret inside an escaped
string is seen as the text it decodes to."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memories.redaction import likeness
from memories.redaction.policy import Occasion, findings_for, redact_for


def _json_strings(value: Any, found: list[str]) -> None:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            found.append(key)
            _json_strings(item, found)
    elif isinstance(value, list):
        for item in value:
            _json_strings(item, found)


def _json_replace(value: Any, cleaned: dict[str, str]) -> Any:
    """``value`` with every string, keys included, replaced by its redacted text. Two keys that
    redact alike (``<REDACTED_TOKEN>``) both stay: the second is numbered."""
    if isinstance(value, str):
        return cleaned[value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name, n = cleaned[key], 1
            while name in out:
                n += 1
                name = f"{cleaned[key]} {n}"
            out[name] = _json_replace(item, cleaned)
        return out
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


# A value is read beside its key or its neighbours when it is this short, or when its key names a
# secret: a longer one (a file's text, a command's output) was read as the text it is.
_SHORT = 200
_NAMING = 60  # characters of a value that can name its neighbour (``{"name": "DB_PASSWORD", "value": …}``)


@dataclass
class _Group:
    """A JSON object or array whose values are read together, as the text they make."""

    container: dict[str, Any] | list[Any]
    slots: list[Any] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    text: str = ""


def _group_of(container: dict[str, Any] | list[Any]) -> _Group | None:
    """The object's entries as ``"key": "value", …`` or the array's strings as a command line
    (``mysql -p S3cret``), when a key or a short value names a secret or the array is a command
    with flags; else None (each value was read on its own already)."""
    if isinstance(container, dict):
        items = [(key, value) for key, value in container.items() if isinstance(value, str)]
        named = any(likeness.names_secret(key) or (len(value) <= _NAMING and likeness.names_secret(value))
                    for key, value in items)
        if not named:
            return None
        group, parts, position = _Group(container), [], 0
        for key, value in items:
            if len(value) > _SHORT and not likeness.names_secret(key):
                continue
            head = f'"{key}": "'
            group.slots.append(key)
            group.spans.append((position + len(head), position + len(head) + len(value)))
            parts.append(f'{head}{value}", ')
            position += len(parts[-1])
        group.text = "".join(parts)
        return group
    strings = [(i, value) for i, value in enumerate(container) if isinstance(value, str) and len(value) <= _SHORT]
    if len(strings) < 2 or not any(value.startswith("-") or likeness.names_secret(value) for _, value in strings):
        return None
    group, parts, position = _Group(container), [], 0
    for i, value in strings:
        group.slots.append(i)
        group.spans.append((position, position + len(value)))
        parts.append(value + " ")
        position += len(value) + 1
    group.text = "".join(parts)
    return group


def _groups(value: Any, found: list[_Group]) -> None:
    if isinstance(value, (dict, list)):
        group = _group_of(value)
        if group is not None:
            found.append(group)
        for item in value.values() if isinstance(value, dict) else value:
            _groups(item, found)


def _context_redact(documents: list[Any]) -> None:
    """The second reading of each document, in place: every object or array whose names give its
    values a context (``"password": "…"``, ``{"name": "API_TOKEN", "value": "…"}``, ``["mysql",
    "-p", "…"]``) read as the text it makes, and what is found there redacted in its values."""
    groups: list[_Group] = []
    for document in documents:
        _groups(document, groups)
    texts = [group.text for group in groups]
    for group, findings in zip(groups, findings_for(Occasion.ARCHIVE, texts), strict=True):
        for slot, (start, end) in zip(group.slots, group.spans, strict=True):
            inside = [f for f in findings if f.start < end and start < f.end]
            if not inside:
                continue
            value = group.container[slot]
            pieces, cursor = [], 0
            for finding in inside:
                low, high = max(finding.start, start) - start, min(finding.end, end) - start
                if low < cursor:
                    continue
                pieces += [value[cursor:low], f"<{finding.tag}>"]
                cursor = high
            group.container[slot] = "".join(pieces) + value[cursor:]


def archive_redact(data: bytes) -> str:
    """The redacted text the archive keeps. A session file is JSON (one document, or one per
    line), where a secret sits inside an escaped string (``\\"Gmail2023?\\"`` after a ``\\n``)
    that the detectors do not see as such: each string, keys included, is redacted as the text
    it decodes to. Then each object or array whose names give its values a context is read as
    the text it makes (``"password": "…"``; ``_context_redact``): the keys and short values,
    not the megabytes of tool output a line also holds, which were read already. Lines that are
    not JSON are redacted as they read.

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
    # Sessions repeat themselves (a file read twice, the same command output): each distinct string,
    # and each distinct line that is not JSON, is redacted once.
    strings: list[str] = []
    for piece, document in zip(pieces, documents, strict=True):
        if document is None:
            strings.append(piece)
        else:
            _json_strings(document, strings)
    distinct = list(dict.fromkeys(strings))
    cleaned = dict(zip(distinct, (r.text for r in redact_for(Occasion.ARCHIVE, distinct)), strict=True))
    documents = [None if document is None else _json_replace(document, cleaned) for document in documents]
    _context_redact([document for document in documents if document is not None])
    # A whole document is re-encoded over many lines (indent=1), as it was written.
    indent = 1 if whole is not None else None
    return "\n".join(cleaned[piece] if document is None else json.dumps(document, ensure_ascii=False, indent=indent)
                     for piece, document in zip(pieces, documents, strict=True))
