"""Redaction of secrets before anything is stored, embedded, logged or sent to an LLM.

This is the single function every text entry point calls (SPEC §8). It currently applies
pattern rules for well-known secret formats and e-mail addresses; the Presidio analyzer
(names, phones, cards, Chinese identifiers...) plugs in behind the same function.
Replacements are ``<TAG>`` markers, and redacting redacted text changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# (tag, pattern). Order matters only for overlapping matches: earlier, longer rules win.
_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("PRIVATE_KEY", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        re.DOTALL)),
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("LLM_API_KEY", re.compile(r"\b(?:sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,})")),
    ("GITHUB_TOKEN", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("GITLAB_TOKEN", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("AWS_ACCESS_KEY", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("SLACK_TOKEN", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("STRIPE_KEY", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("GOOGLE_API_KEY", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("NPM_TOKEN", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("REDACTED_TOKEN", re.compile(r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}")),
    # user:password@ in URLs: only the credentials go.
    ("REDACTED_CREDENTIAL", re.compile(r"(?<=://)(?P<value>[^\s:/@]+:[^\s@/]+)(?=@)")),
    # password=..., api_key: "...", SECRET_TOKEN=... (env files, code, YAML): only the value goes.
    ("REDACTED_CREDENTIAL", re.compile(
        r"""(?ix)
        (?:^|(?<=[\s"'{,(;&?]))
        [a-z0-9_.-]*(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token
                      |token|private[_-]?key|client[_-]?secret)[a-z0-9_.-]*
        ["']?\s*[:=]\s*
        (?P<value>"[^"\n<>]{3,}"|'[^'\n<>]{3,}'|[^\s"',;}&<>]{4,})
        """)),
    ("EMAIL_ADDRESS", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
]


@dataclass
class Redacted:
    text: str
    counts: Counter = field(default_factory=Counter)


def redact(text: str) -> Redacted:
    """Replace every secret found in ``text`` by its ``<TAG>``; return text and counts."""
    counts: Counter = Counter()
    if not text:
        return Redacted(text or "", counts)
    spans: list[tuple[int, int, str]] = []
    for tag, pattern in _RULES:
        for match in pattern.finditer(text):
            group = "value" if "value" in pattern.groupindex else 0
            start, end = match.span(group)
            if start < end:
                spans.append((start, end, tag))
    if not spans:
        return Redacted(text, counts)
    # Longest span wins where findings overlap.
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            if span[1] - span[0] > kept[-1][1] - kept[-1][0]:
                kept[-1] = span
            continue
        kept.append(span)
    out: list[str] = []
    cursor = 0
    for start, end, tag in kept:
        out.append(text[cursor:start])
        out.append(f"<{tag}>")
        counts[tag] += 1
        cursor = end
    out.append(text[cursor:])
    return Redacted("".join(out), counts)
