"""What a memory hides from a person's eyes: invisible Unicode and encoded payloads.

- Unicode tag characters (U+E0000–U+E007F) spell ASCII that renders as nothing: always held, and
  the text they spell is screened too.
- Bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) reorder what is shown:
  held.
- Zero-width characters (U+200B–U+200D, U+2060, U+FEFF …) split words so that a filter misses
  them; one joiner inside an emoji sequence is how emoji are written, so a finding needs a run
  of two, or three anywhere in a field outside emoji.
- Encoded payloads: base64 (and hex) runs that decode to readable text are decoded and screened
  like the rest (``screen`` passes them back to the rules); a decoded instruction is held.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator

from memories.screening.rules import HOLD, Finding

_TAGS = re.compile("[\U000e0000-\U000e007f]+")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u061c\u200e\u200f]")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe]")
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad\u034f\u115f\u1160\u3164\uffa0"
_ZERO_RUN = re.compile(f"[{_ZERO_WIDTH}]{{2,}}")
_ZERO_ONE = re.compile(f"[{_ZERO_WIDTH}]")


def _emoji_joiner(text: str, index: int) -> bool:
    """A zero-width joiner or non-joiner between two symbols (emoji sequences, Indic scripts)."""
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    symbolic = {"So", "Sk", "Mn", "Mc", "Lo"}
    return text[index] in "\u200c\u200d" and bool(before and after) and (
        unicodedata.category(before) in symbolic or unicodedata.category(after) in symbolic
        or "\U0001f000" <= before <= "\U0001faff" or "\U0001f000" <= after <= "\U0001faff")


def tag_text(text: str) -> str:
    """What Unicode tag characters in ``text`` spell."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def hidden_findings(field: str, text: str) -> Iterator[Finding]:
    for match in _TAGS.finditer(text):
        spelled = tag_text(match.group(0))
        label = "hides text in invisible Unicode tag characters" + (f": “{spelled[:80]}”" if spelled.strip() else "")
        yield Finding("hidden_unicode", label, field, match.start(), match.end(), match.group(0), HOLD)
    # Right-to-left text (Arabic, Hebrew) uses marks and isolates to lay out mixed runs; elsewhere a
    # bidirectional control only reorders what a person sees. Overrides are held either way.
    rtl = bool(_RTL.search(text))
    for match in _BIDI.finditer(text):
        if rtl and match.group(0) not in "\u202d\u202e":
            continue
        yield Finding("hidden_unicode", "reorders what is displayed with a bidirectional control character",
                      field, match.start(), match.end(), match.group(0), HOLD)
    runs = list(_ZERO_RUN.finditer(text))
    for match in runs:
        yield Finding("hidden_unicode", "hides characters in a run of zero-width characters",
                      field, match.start(), match.end(), match.group(0), HOLD)
    if not runs:
        singles = [m for m in _ZERO_ONE.finditer(text) if not _emoji_joiner(text, m.start())]
        if len(singles) >= 3:
            yield Finding("hidden_unicode", f"splits words with {len(singles)} zero-width characters",
                          field, singles[0].start(), singles[-1].end(), text[singles[0].start():singles[-1].end()], HOLD)


_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX = re.compile(r"(?:\\x[0-9a-fA-F]{2}){8,}|(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){16,}(?![0-9a-fA-F])")


def _readable(data: bytes) -> str | None:
    """``data`` as text when it reads as text: UTF-8, mostly letters and spaces, with words."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 12:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in text) / len(text)
    letters = sum(ch.isalpha() or ch.isspace() for ch in text) / len(text)
    if printable < 0.97 or letters < 0.6 or not re.search(r"[A-Za-z]{3,}[\s/|-]+[A-Za-z~./$-]{2,}|[\u4e00-\u9fff]{2,}", text):
        return None
    return text


_ROT13 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                       "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")
_ROT13_CUE = re.compile(r"\brot-?13\b", re.IGNORECASE)


def hidden_texts(text: str) -> list[str]:
    """Everything ``text`` hides that reads as text once decoded: what Unicode tag characters
    spell, base64 and hex runs, and the whole text rot13-decoded when it says it is rot13. Read
    from the text as sent (redaction replaces an encoded run by a placeholder)."""
    out = [decoded for _, _, decoded in decoded_payloads(text)]
    spelled = tag_text(text)
    if spelled.strip():
        out.append(spelled)
    if _ROT13_CUE.search(text):
        out.append(text.translate(_ROT13))
    return out


def decoded_payloads(text: str) -> Iterator[tuple[int, int, str]]:
    """Spans of ``text`` that decode (base64, hex) to readable text, with that text."""
    for match in _BASE64.finditer(text):
        token = match.group(0)
        if not re.search(r"[A-Z]", token) or not re.search(r"[a-z]", token):
            continue  # a word, a hash in one case: not base64 of text
        padded = token + "=" * (-len(token.rstrip("=")) % 4)
        try:
            data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            continue
        decoded = _readable(data)
        if decoded:
            yield match.start(), match.end(), decoded
            for _, _, inner in decoded_payloads(decoded):  # encoded twice
                yield match.start(), match.end(), inner
    for match in _HEX.finditer(text):
        digits = match.group(0).replace("\\x", "")
        try:
            decoded = _readable(bytes.fromhex(digits))
        except ValueError:
            continue
        if decoded:
            yield match.start(), match.end(), decoded
