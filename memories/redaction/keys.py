"""Private-key bodies whose ``BEGIN`` line is not in the same text (docs/flow.md#redaction).

A PEM block with its ``-----BEGIN … PRIVATE KEY-----`` line is taken whole by the pattern rules
(to its ``END`` line, or to the end of the text when that is missing). A key is also pasted from
the middle, quoted line by line in a reply (``> MIIE…``), or split across fields so that the
``BEGIN`` line sits in another one: then every base64 line just before an ``-----END … PRIVATE
KEY-----`` marker belongs to the key, however short (the last line of a body is often a few
characters and ``=``). Lines are split at real line breaks and at escaped ones (``\\n`` inside a
JSON string). Long base64 runs elsewhere are the entropy rules' business.
"""

from __future__ import annotations

import re

from memories.redaction.patterns import Finding

TAG = "PRIVATE_KEY"
SCORE = 1.0

_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_BREAK = re.compile(r"\n|\\n")
# A body line as it is quoted: "> ", indentation, a list item's quotes and comma around it.
_BODY_LINE = re.compile(r"^[\s>\"'`,\[(-]*(?P<body>[A-Za-z0-9+/]{2,}={0,2})[\s\"'`,\])]*$")


def find(text: str) -> list[Finding]:
    if "-----END" not in text:
        return []
    found: list[Finding] = []
    for end in _END.finditer(text):
        if _BEGIN.search(text, 0, end.start()):
            continue  # the whole block is the pattern rule's
        # The lines before the marker (the marker's own line up to the marker first), walked back
        # while they are base64.
        bounds, line_start = [], 0
        for brk in _BREAK.finditer(text, 0, end.start()):
            bounds.append((line_start, brk.start()))
            line_start = brk.end()
        bounds.append((line_start, end.start()))
        pieces: list[tuple[int, int]] = []
        for index, (line_start, line_end) in enumerate(reversed(bounds)):
            line = text[line_start:line_end]
            if index == 0 and not line.strip(" \t>\"'`,"):
                continue  # only quoting before the marker on its own line
            match = _BODY_LINE.match(line)
            if not match:
                break
            pieces.append((line_start + match.start("body"), line_start + match.end("body")))
        found.extend(Finding(start, stop, TAG, SCORE, "keys") for start, stop in pieces)
    return found
