"""Phone and payment-card numbers in the many shapes people write them.

Presidio's phone recognizer accepts only numbers valid in a few regions and its card
recognizer only some issuer ranges; people write "+46 (0)8 928 571 38", "(37) 788-063" or
"0490 39 07 81", and test data is full of numbers no carrier ever issued. A number shaped like
a phone number counts when its shape is unmistakable (international prefix, parenthesised area
code, extension, or three or more groups with nine or more digits), or when a telephone word
stands just before it. Dates, times, IP addresses, versions and decimals are never phones.
Card numbers: 12-19 digits in an issuer range, Luhn-valid.
"""

from __future__ import annotations

import re

from memories.redaction.patterns import Finding

_CANDIDATE = re.compile(
    r"(?<![\w+/.:@-])"
    r"(?P<number>(?:\+|00)?\(?\d[\d().\- \t]{5,24}\d)"
    r"(?P<ext>[ \t]?(?:x|ext\.?|extension)[ \t]?\d{1,6})?"
    r"(?![\w/@])(?!-\d)(?!\.\d)"
)
_CONTEXT = re.compile(
    r"(?i)(?:phone|mobile|cell|tel|telephone|fax|desk|office|home|work|call|calling|text|sms|whatsapp"
    r"|contact|reach|number|messages? to|answering at|registered|dial|电话|手机|联系|座机|号码)\W{0,12}$"
)
_CONTEXT_AFTER = re.compile(r"(?i)^\W{0,3}(?:office|mobile|cell|fax|home|work|desk|tel|phone)\b")
_DATE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_DECIMAL = re.compile(r"^\d+\.\d+$")


def has_context(text: str, start: int, end: int) -> bool:
    """Is there a telephone word just before (or a line label just after) text[start:end]?"""
    return bool(
        _CONTEXT.search(text[max(0, start - 40) : start]) or _CONTEXT_AFTER.match(text[end : end + 16])
    )


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def phones(text: str) -> list[Finding]:
    found = []
    for match in _CANDIDATE.finditer(text):
        number = match.group("number").rstrip(" \t(")
        digits = _digits(number)
        if not 7 <= len(digits) <= 15 or _DATE.search(number) or _IPV4.match(number) or _DECIMAL.match(number):
            continue
        if len(set(digits)) <= 2:
            continue  # 0000000, 1111111: a placeholder or an empty object id (git's index 0000000..), not a line
        if number.count("(") != number.count(")"):
            continue
        groups = [g for g in re.split(r"[\s().-]+", number) if g]
        strong = (
            number.startswith(("+", "00"))
            or "(" in number
            or bool(match.group("ext"))
            or (len(groups) >= 3 and len(digits) >= 9 and max(len(g) for g in groups) <= 5)
        )
        end = match.start("number") + len(number) if not match.group("ext") else match.end("ext")
        context = has_context(text, match.start(), end)
        if not (strong or (context and (len(groups) >= 2 or len(digits) >= 7))):
            continue
        found.append(Finding(match.start("number"), end, "PHONE_NUMBER", 0.75 if context else 0.6, "numbers"))
    return found


_CARD = re.compile(r"(?<![\w.-])(?P<card>\d(?:[ -]?\d){11,18})(?![\w-])(?!\.\d)")
_ISSUERS = re.compile(
    r"^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|35(?:2[89]|[3-8]\d)|6011|64[4-9]|65"
    r"|62|50|5[6-8]|6[0-9]|2131|1800)"
)


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def cards(text: str) -> list[Finding]:
    found = []
    for match in _CARD.finditer(text):
        digits = _digits(match.group("card"))
        if 12 <= len(digits) <= 19 and _ISSUERS.match(digits) and luhn_ok(digits) and len(set(digits)) > 2:
            found.append(Finding(match.start("card"), match.end("card"), "CREDIT_CARD", 0.85, "numbers"))
    return found


_IBAN = re.compile(r"(?<![A-Za-z0-9])(?P<iban>[A-Za-z]{2}\d{2}(?:[ ]?[A-Za-z0-9]){11,30})(?![A-Za-z0-9])")


def iban_ok(candidate: str) -> bool:
    """ISO 13616 mod-97 check."""
    compact = candidate.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    digits = "".join(str(int(c, 36)) for c in rearranged)
    return int(digits) % 97 == 1


def ibans(text: str) -> list[Finding]:
    """IBANs in any case, with or without the usual spaces, checksum-validated."""
    found = []
    for match in _IBAN.finditer(text):
        candidate = match.group("iban").rstrip()
        if iban_ok(candidate):
            found.append(Finding(match.start("iban"), match.start("iban") + len(candidate), "IBAN_CODE", 0.95, "numbers"))
    return found
