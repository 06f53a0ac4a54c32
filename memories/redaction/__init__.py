"""Redaction: the one function every text passes before it is stored, embedded, logged or
sent to an LLM (docs/flow.md#redaction).

``redact(text)`` replaces each finding by its ``<TAG>`` (``<EMAIL_ADDRESS>``, ``<PERSON>``,
``<LLM_API_KEY>``, ...). Findings come from these sources: pattern rules for secrets and
identifiers (``patterns.py``), password hashes and crypt strings (``hashes.py``), private-key
bodies cut from their ``BEGIN`` line (``keys.py``), secrets named in a sentence after a cue word
(``prose.py``), the ``detect-secrets`` library's vendor and keyword detectors (``detectors.py``),
the vendor token shapes of Kingfisher's maintained rule catalogue (``vendors.py``), high-entropy
values where secrets are put and random-beyond-doubt tokens anywhere (``entropy.py``), a learned
secret-likeness score for any value, read with the cue words around it (``likeness``), phone,
card and IBAN numbers (``numbers.py``), Chinese identifiers (``chinese.py``), and Presidio (spaCy
NER for names, with ``names.py``'s guards and cues; e-mail, phone, card, IBAN, IP and SSN
recognizers). Recall comes first: when a detector is in doubt, the text is redacted —
a false flag costs a word, a leak costs a credential. Text that is more than ~20 % CJK
takes the Chinese path: the pattern recognizers without the English NER model. Where findings
overlap the one with the highest score wins, then the longer one. Redacting redacted text
changes nothing: existing ``<TAG>`` markers are never touched.

Which texts are redacted, and with which detectors, is ``policy.py``'s table of occasions.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from memories.redaction import (
    chinese,
    detectors,
    entropy,
    hashes,
    keys,
    likeness,
    names,
    naming,
    numbers,
    patterns,
    presidio_engine,
    prose,
    vendors,
)
from memories.redaction.likeness.shapes import base64_text
from memories.redaction.patterns import MARKER_RE, Finding

CJK_THRESHOLD = 0.2
_TAG_FOR_ENTITY = {"IBAN_CODE": "IBAN_CODE"}


@dataclass
class Redacted:
    text: str
    counts: Counter = field(default_factory=Counter)


def _pattern_findings(text: str) -> list[Finding]:
    found: list[Finding] = []
    for rule in patterns.RULES:
        found.extend(rule.find(text))
    for rule in chinese.RULES:
        found.extend(rule.find(text))
    for rule in hashes.RULES:
        found.extend(rule.find(text))
    found.extend(keys.find(text))
    found.extend(prose.find(text))
    found.extend(detectors.find(text))
    found.extend(vendors.find(text))
    found.extend(entropy.find(text))
    found.extend(likeness.find(text, holds_secret=lambda decoded: bool(_pattern_findings(decoded))))
    found.extend(numbers.phones(text))
    found.extend(numbers.cards(text))
    found.extend(numbers.ibans(text))
    return found


def _people(text: str, findings: list[Finding]) -> list[Finding]:
    """Presidio's findings with implausible PERSON spans dropped and more names added."""
    others = [f for f in findings if f.tag != "PERSON"]
    persons = [f for f in findings if f.tag == "PERSON" and names.plausible(text[f.start : f.end])
               and not names.technical(text, f.start, f.end)]
    persons += names.cue_names(text)
    persons += names.expand(text, persons)
    return others + names.merge_adjacent(persons, text)


# The password and host of a URL's user information read as an e-mail address ("pass@db.example.net");
# the credential rules redact the password, the host stays readable.
_USERINFO_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]*$")


# What personal-data detectors find: a card or a phone number is not judged by its characters' variety.
_PERSONAL = frozenset({"PERSON", "USER", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS", "US_SSN",
                       "CN_ID_CARD", "CN_MOBILE", "LOCATION", "DATE_TIME", "NRP", "URL"})

# Detectors that guess from randomness or a cue word; the sentence's own name for the value overrules them.
_GUESSES = frozenset({"entropy", "likeness", "prose", "detect-secrets"})


def _dropped(text: str, finding: Finding) -> bool:
    if finding.tag == "EMAIL_ADDRESS":
        return bool(_USERINFO_BEFORE.search(text[max(0, finding.start - 200) : finding.start]))
    if finding.tag == "PERSON":
        return False
    value = text[finding.start : finding.end]
    if naming.documented_example(value) or (finding.tag not in _PERSONAL and naming.stand_in(value)):
        return True
    if finding.source in _GUESSES and naming.named_public(text, finding.start, value):
        return True
    return encodes_plain_text(value)


def encodes_plain_text(value: str) -> bool:
    """Is ``value`` base64 of a sentence or of JSON quoted in a lesson ("echo aGVsbG8gZnJvbSBzdGFnaW5n
    | base64 -d"): data, unless what it encodes holds a secret itself?"""
    decoded = base64_text(value)
    return decoded is not None and not _pattern_findings(decoded)


def _widest_credentials(findings: list[Finding]) -> list[Finding]:
    """Drop a generic credential finding that lies inside a wider one: the first word of a
    passphrase found by a cue rule gives way to the whole phrase, whatever their scores."""
    generic = sorted((f for f in findings if f.tag == likeness.TAG), key=lambda f: (f.start, -f.end))
    inside: set[int] = set()
    reach_end = -1
    for finding in generic:
        if finding.end <= reach_end:
            inside.add(id(finding))
        reach_end = max(reach_end, finding.end)
    return [f for f in findings if id(f) not in inside] if inside else findings


def _resolve(text: str, findings: list[Finding]) -> list[Finding]:
    """Keep non-overlapping findings: highest score first, then the longest."""
    markers = [m.span() for m in MARKER_RE.finditer(text)]
    kept: list[Finding] = []
    findings = _widest_credentials([f for f in findings if not _dropped(text, f)])
    for finding in sorted(findings, key=lambda f: (-f.score, -(f.end - f.start), f.start)):
        if any(finding.start < e and s < finding.end for s, e in markers):
            continue  # never re-redact (part of) an existing marker
        if any(finding.start < k.end and k.start < finding.end for k in kept):
            continue
        kept.append(finding)
    return sorted(kept, key=lambda f: f.start)


def apply_findings(text: str, findings: list[Finding]) -> Redacted:
    """``text`` with each finding (sorted, without overlaps) replaced by its ``<TAG>``."""
    counts: Counter = Counter()
    out: list[str] = []
    cursor = 0
    for finding in findings:
        tag = _TAG_FOR_ENTITY.get(finding.tag, finding.tag)
        out.append(text[cursor : finding.start])
        out.append(f"<{tag}>")
        counts[tag] += 1
        cursor = finding.end
    out.append(text[cursor:])
    return Redacted("".join(out), counts)


def analyze_many(texts: list[str], *, names: bool = True) -> list[list[Finding]]:
    """The findings to redact in each text (overlaps resolved); English texts share one
    batched spaCy pass. ``names=False``: the pattern recognizers only (no spaCy person names),
    about six times faster, for bulk text such as the raw archive."""
    findings: list[list[Finding]] = [[] for _ in texts]
    english: list[int] = []
    for index, text in enumerate(texts):
        if not text or not text.strip():
            continue
        findings[index] = _pattern_findings(text)
        # The English NER model reads no Chinese: a mostly-CJK text gets Presidio's pattern recognizers only,
        # as do texts redacted without names (the archive) and all text with ULTRON_REDACT_NER off.
        if not names or chinese.cjk_share(text) > CJK_THRESHOLD or not settings.ULTRON_REDACT_NER:
            findings[index].extend(presidio_engine.analyze_patterns(text))
        else:
            english.append(index)
    if english:
        analysed = presidio_engine.analyze_many([texts[i] for i in english])
        for index, extra in zip(english, analysed, strict=True):
            findings[index].extend(_people(texts[index], extra))
    return [_resolve(text, found) if found else [] for text, found in zip(texts, findings, strict=True)]


def redact_many(texts: list[str], *, names: bool = True) -> list[Redacted]:
    """Redact several texts at once (faster than one by one); ``names`` as in ``analyze_many``."""
    return [apply_findings(text or "", found) for text, found in zip(texts, analyze_many(texts, names=names), strict=True)]


def redact(text: str) -> Redacted:
    """Replace every secret and personal datum in ``text`` by its ``<TAG>``."""
    return redact_many([text])[0]
