"""The text the screen's rules read: each field folded so that disguises do not hide a word
(compatibility forms, invisible characters between letters, look-alike letters from other
scripts), with a map back to the stored text so a finding can point at what a curator sees."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# Letters of other scripts drawn like Latin ones: "ignоre" with a Cyrillic o reads as "ignore".
_CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "ɡ": "g", "һ": "h", "ⅼ": "l", "ո": "n", "ս": "u", "ԝ": "w", "А": "A", "В": "B", "Е": "E",
    "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "Ѕ": "S", "І": "I",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "ι": "i", "κ": "k", "Ο": "O", "Α": "A", "Ε": "E",
    "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ρ": "P", "Τ": "T", "Χ": "X", "Υ": "Y", "Ζ": "Z",
})


def invisible(char: str) -> bool:
    """A character that draws nothing: format controls (zero-width, bidi, tags, soft hyphen)."""
    return unicodedata.category(char) == "Cf"


@dataclass(frozen=True)
class Folded:
    """``text`` folded for matching, and for each of its characters the index in ``original``."""

    original: str
    text: str
    origin: Sequence[int]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The stored text's span under the folded ``[start, end)``."""
        if not self.origin:
            return 0, 0
        first = self.origin[min(start, len(self.origin) - 1)]
        last = self.origin[min(max(end - 1, start), len(self.origin) - 1)] + 1
        return first, last


# White space an ASCII text folds: a run, or any space but " " and a line break.
_ASCII_SPACES = re.compile(r"[ \t\r\f\v]{2,}|[\t\r\f\v\x1c-\x1f]")


def fold(text: str) -> Folded:
    """NFKC per character (full-width letters, ligatures), invisible characters dropped,
    look-alike letters mapped to Latin, runs of white space as one space. Case is kept: rules
    match case-insensitively unless case is the point (``SYSTEM:``)."""
    if text.isascii() and not _ASCII_SPACES.search(text):  # most memories: nothing to fold
        return Folded(text, text, range(len(text)))
    out: list[str] = []
    origin: list[int] = []
    space = False
    for index, char in enumerate(text):
        if invisible(char):
            continue
        folded = unicodedata.normalize("NFKC", char).translate(_CONFUSABLES)
        for piece in folded:
            if piece.isspace() and piece != "\n":
                if space:
                    continue
                piece, space = " ", True
            else:
                space = False
            out.append(piece)
            origin.append(index)
    return Folded(text, "".join(out), tuple(origin))


# A full stop ends a sentence before a space or the end, not inside "http.sslVerify" or "v1.2".
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)\s*|[;\n。！？；]\s*")


def sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or line) holding ``[start, end)``."""
    left = 0
    for boundary in _SENTENCE_END.finditer(text):  # not bounded at ``start``: "$" would match there
        if boundary.end() > start:
            break
        left = boundary.end()
    found = _SENTENCE_END.search(text, end)
    return left, (found.start() if found else len(text))
