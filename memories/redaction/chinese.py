"""Chinese identifiers: mobile numbers, landlines, resident ID numbers (docs/flow.md#redaction)."""

from __future__ import annotations

import re

from memories.redaction.patterns import Rule

_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def cjk_share(text: str) -> float:
    """Share of CJK characters (and CJK punctuation) among the non-space characters."""
    visible = sum(1 for c in text if not c.isspace())
    if not visible:
        return 0.0
    return len(_CJK_RE.findall(text)) / visible


_ID_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
_ID_CHECK = "10X98765432"


def id_checksum_ok(number: str) -> bool:
    """ISO 7064 MOD 11-2 check digit of an 18-digit resident ID number."""
    if len(number) != 18 or not number[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


# Digits that are part of a longer number, a decimal or a timestamp never start or end a match.
_NOT_BEFORE = r"(?<![\d.:/-])"
_NOT_AFTER = r"(?![\d])(?!\.\d)(?!:\d)"

RULES: list[Rule] = [
    # Mobile: 1[3-9] + 9 digits, optionally +86 / 0086, optionally written 3-4-4.
    Rule("PHONE_NUMBER", re.compile(
        _NOT_BEFORE + r"(?:(?:\+|00)86[\s-]?)?1[3-9]\d(?:\d{8}|[\s-]\d{4}[\s-]\d{4})" + _NOT_AFTER), score=0.9),
    # Landline: area code 0xx(x) + 7-8 digits (+ extension); or +86 area code without the 0.
    Rule("PHONE_NUMBER", re.compile(
        _NOT_BEFORE + r"(?:\(0\d{2,3}\)\s?|0\d{2,3}-)\d{7,8}(?:-\d{1,6})?" + _NOT_AFTER), score=0.85),
    Rule("PHONE_NUMBER", re.compile(
        r"(?:\+|00)86[\s-]?0?[1-9]\d{1,2}[\s-]\d{7,8}" + _NOT_AFTER), score=0.85),
    # A bare 7-8 digit number counts only after a telephone cue.
    Rule("PHONE_NUMBER", re.compile(
        r"(?i)(?:电话|座机|固话|tel|phone|联系方式)\s*[:：]?\s*(?P<value>\d{7,8})" + _NOT_AFTER),
        group="value", score=0.8),
    # Resident ID, 18 digits: region(6) + birth date(8) + sequence(3) + check digit.
    Rule("CN_RESIDENT_ID", re.compile(
        r"(?<![\dA-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dA-Za-z])"),
        score=0.95),
    # Hong Kong (A123456(7)), Macau (1234567(8)) and Taiwan (A123456789) identity cards.
    Rule("ID_NUMBER", re.compile(r"(?<![A-Za-z0-9])[A-Z]{1,2}\d{6}\([0-9A]\)"), score=0.8),
    Rule("ID_NUMBER", re.compile(r"(?<![A-Za-z0-9])[157]\d{6}\(\d\)"), score=0.8),
    Rule("ID_NUMBER", re.compile(r"(?<![A-Za-z0-9])[A-Z][12]\d{8}(?![A-Za-z0-9])"), score=0.6),
    # First generation, 15 digits: region(6) + YYMMDD + sequence(3).
    Rule("CN_RESIDENT_ID", re.compile(
        r"(?<![\dA-Za-z.])[1-9]\d{7}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}(?![\dA-Za-z])"), score=0.6),
]
