"""Secrets found by the ``detect-secrets`` library's detectors, run in-process on each line.

Its vendor plugins (AWS, Azure, GitHub, GitLab, Slack, Stripe, Twilio, …) and its keyword
detector (``password = …``, ``"api_key": "…"`` in the assignment shapes of many languages and
config formats) run beside our own pattern rules; where both find a secret the overlap is
resolved like any other (our rules score higher and keep their specific tags). Only the
detectors' matching is used: nothing is verified against a vendor, nothing touches the
network, and none of the library's file-level filters apply.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from detect_secrets.filters import heuristic

from memories.redaction.patterns import Finding, is_reference

TAG = "REDACTED_CREDENTIAL"
SCORE = 0.85
# Ours: IP addresses (with our own rule on which ranges stay), private-key blocks (the library
# flags only the BEGIN line), the high-entropy strings (our rule, with its exclusions).
_NOT_USED = {"IPPublicDetector", "PrivateKeyDetector", "Base64HighEntropyString", "HexHighEntropyString",
             "KeywordDetector"}

_lock = threading.Lock()
_vendor_plugins: list[Any] | None = None
_keyword_regexes: list[tuple[re.Pattern[str], int]] | None = None


def _load() -> tuple[list[Any], list[tuple[re.Pattern[str], int]]]:
    global _vendor_plugins, _keyword_regexes
    if _vendor_plugins is None or _keyword_regexes is None:
        with _lock:
            if _vendor_plugins is None or _keyword_regexes is None:
                from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
                from detect_secrets.plugins import keyword

                classes = get_mapping_from_secret_type_to_class().values()
                # Sorted by name: the detectors run in the same order in every process.
                plugins = [cls() for cls in sorted(classes, key=lambda c: c.__name__)
                           if cls.__name__ not in _NOT_USED]
                # The keyword detector's assignment shapes for every file type it knows, once each.
                seen: dict[str, tuple[re.Pattern[str], int]] = {}
                for table in (*keyword.REGEX_BY_FILETYPE.values(), keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP):
                    for regex, group in table.items():
                        seen.setdefault(f"{regex.pattern}|{regex.flags}|{group}", (regex, group))
                _keyword_regexes = list(seen.values())
                _vendor_plugins = plugins
    return _vendor_plugins, _keyword_regexes


def _lines(text: str) -> Iterator[tuple[int, str]]:
    offset = 0
    for line in text.split("\n"):
        yield offset, line
        offset += len(line) + 1


def _occurrences(line: str, value: str) -> Iterator[int]:
    start = line.find(value)
    while start != -1:
        yield start
        start = line.find(value, start + len(value))


def _keyword_value_ok(value: str) -> bool:
    value = value.strip().strip("\"'`")
    # Code, not a value: "str | None = None) -> Connection", "get_password(name)".
    return len(value) >= 3 and not any(c.isspace() for c in value) and not is_reference(value)


_QUANTITY_NAME = re.compile(
    r"(?i)(?:pass(?:word|wd)?|pwd|secret|key)[_-]?\w*?(?:timeout|ttl|length|len|size|count|age|expir\w*|days|hours"
    r"|minutes|seconds|interval|min|max|limit|attempts|retries|rounds|iterations|version|index|history)\W*$"
)


def _a_quantity(key: str, value: str) -> bool:
    """``"password_reset_timeout": 259200``: a number under a name that measures something about
    a secret (its timeout, length, rounds) is no secret."""
    return value.strip("\"'").isdigit() and bool(_QUANTITY_NAME.search(key))


# Cheap tests that skip a line no detector can match: a vendor key is a run of 16+ token
# characters with a digit in it; the keyword detector needs one of its key words. The runs are
# found first and searched for a digit after: one pattern doing both retried every start inside
# a long run without digits (quadratic: 100,000 letters took 50 s).
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_+/=.-]{16,}")


def _has_token_run(line: str) -> bool:
    return any(any(c.isdigit() for c in run.group()) for run in _TOKEN_RUN.finditer(line))
_KEY_WORDS = ("key", "pass", "pwd", "secret", "contrase")


def find(text: str) -> list[Finding]:
    """Every secret the library's detectors see in ``text``, as findings."""
    plugins, keyword_regexes = _load()
    found: list[Finding] = []
    for offset, line in _lines(text):
        if len(line) < 8:
            continue
        for plugin in plugins if _has_token_run(line) else ():
            for value in set(plugin.analyze_string(line)):
                if not value or len(value) < 8:
                    continue
                found.extend(Finding(offset + start, offset + start + len(value), TAG, SCORE, "detect-secrets")
                             for start in _occurrences(line, value))
        lowered = line.lower()
        if len(line) > 2000 or not any(word in lowered for word in _KEY_WORDS) or heuristic.is_indirect_reference(line):
            continue  # the keyword shapes are for assignments, not for minified blobs or lookups
        for regex, group in keyword_regexes:
            for match in regex.finditer(line):
                value = match.group(group)
                if value and _keyword_value_ok(value) and not _a_quantity(line[match.start() : match.start(group)], value):
                    start, end = match.span(group)
                    found.append(Finding(offset + start, offset + end, TAG, SCORE, "detect-secrets"))
    return found
