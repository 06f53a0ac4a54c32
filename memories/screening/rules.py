"""The screen's rules: what published attacks on agent memory and on coding agents' instructions
use, each written as a shape rather than a phrase list, in English and Chinese.

A rule reads one field, folded (``screening.text.fold``). Its finding is ``hold`` (the memory
waits for a curator) unless the words around it say the text warns against the thing rather than
asks for it ("never pipe unknown scripts to sh", "don't use verify=False"): then no finding, or a
``mark`` when the memory talks about an attack (served, with a note). Links, hidden characters and
encoded payloads have modules of their own (``links``, ``hidden``, ``encoded``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memories.screening.text import sentence_around

HOLD = "hold"
MARK = "mark"


@dataclass(frozen=True)
class Finding:
    rule: str
    label: str  # what a curator reads: "asks the reader to ignore its instructions"
    field: str
    start: int  # the span in the stored text of ``field``
    end: int
    text: str
    severity: str  # HOLD | MARK

    def reason(self) -> dict:
        return {"rule": self.rule, "label": self.label, "field": self.field, "start": self.start,
                "end": self.end, "text": self.text[:200], "severity": self.severity}


# A warning or a prohibition right before the match: "never", "don't", "avoid", "instead of" …
# ("don't forget to" is not one).
_PROHIBITION = re.compile(
    r"(?:\b(?:never|don'?t|do not|does not|doesn'?t|should ?n[o']t|must ?n[o']t|must not|shouldn't|cannot|can'?t|"
    r"avoid(?:ing)?|stop(?:ped)?|instead of|rather than|no longer|refuse[sd]?|not to|without)\b"
    r"|不要|别|禁止|避免|切勿|不能|不应|不得|严禁|千万不要|不可以|不该|而不是)"
    r"(?:(?!\b(?:forget|hesitate|bother)\b)(?:[^.;!?\n。！？；]|\.(?=\S))){0,60}$",
    re.IGNORECASE,
)
# The memory talks about an attack or a danger instead of asking for the thing.
_DISCUSSION = re.compile(
    r"\b(?:prompt[- ]injection|injected|malicious|attack(?:er|s)?|phishing|poison(?:ed|ing)?|suspicious|"
    r"dangerous|insecure|unsafe|security risk|bad idea|reported|scam|compromised|red flag)\b"
    r"|注入|恶意|攻击|钓鱼|危险|不安全|可疑|风险",
    re.IGNORECASE,
)


# …or a verdict right after it, in the same sentence: "X is wrong", "don't make X a habit".
_CONDEMNED = re.compile(
    r"^(?:[^.;!?\n。！？；]|\.(?=\S)){0,80}?(?:\b(?:(?:is|are|was|were)\s+(?:wrong|dangerous|insecure|unsafe|forbidden|banned|"
    r"not\s+(?:allowed|ok|okay|acceptable|safe))|a\s+(?:bad\s+)?habit|(?:is|are)\s+a\s+(?:bad\s+idea|security\s+risk)|"
    r"only\s+(?:in|for)\s+(?:local|tests?|the\s+local|a\s+local|development|dev|disposable)|block\s+it|reject\s+it|"
    r"(?:was|were)\s+(?:removed|reverted|replaced|left\s+in|found\s+in)|is\s+(?:for|only\s+for)\s+disposable)\b"
    r"|(?:是错的|不对|很危险|危险|不安全|不允许|禁止|只允许|只能在|打回|不要这么做|别这么做|绝对不行))",
    re.IGNORECASE,
)
# The match reports what someone else wrote: inside quotes, with words saying it was an attack or refused.
_REPORTED = re.compile(
    r"\b(?:prompt[- ]injection|injected|malicious|attack\w*|phishing|poison\w*|suspicious|refused|untrusted|"
    r"reported|told\s+the\s+(?:agent|model|bot)|tried\s+to|contained|hidden|planted|test\s+set|tests?\s+for|"
    r"jailbreak|eval(?:uation)?\s+set|regression|red[- ]?team\w*|role-?play|user\s+wrote|user\s+typed|"
    r"must\s+not\s+obey|without\s+obeying|not\s+(?:obey|follow)|don'?t\s+(?:obey|follow))\b"
    r"|注入|恶意|攻击|钓鱼|可疑|举报|拒绝|没有执行|不能照做|藏了|测试集|评测|回归|越狱|角色扮演|用户输入",
    re.IGNORECASE,
)
_QUOTES = (("'", "'"), ('"', '"'), ("“", "”"), ("‘", "’"), ("「", "」"), ("『", "』"), ("`", "`"))


def prohibited(folded: str, start: int, end: int | None = None) -> bool:
    """A prohibition governs the match: a cue in the same sentence, right before it, or a
    verdict right after it ("… is wrong", "… a habit")."""
    left, _ = sentence_around(folded, start, start)
    if _PROHIBITION.search(folded[left:start]):
        return True
    if end is None:
        return False
    if _CONDEMNED.search(folded[end:end + 120]):
        return True
    # "Someone suggested X. Don't: …": the next sentence says no.
    _, right = sentence_around(folded, start, end)
    return bool(_REFUSAL.match(folded[right:right + 40]))


_REFUSAL = re.compile(r"[.!?;。！？；\s]*(?:don'?t\b|do\s+not\b|never\b|no\b[.!,:]|bad\s+idea|不要|别这样|不行)", re.IGNORECASE)


def _quoted(folded: str, start: int, end: int) -> bool:
    line_start = folded.rfind("\n", 0, start) + 1
    before = folded[line_start:start]
    for opening, closing in _QUOTES:
        if opening == closing:
            if before.count(opening) % 2 == 1 and closing in folded[end:end + 400]:
                return True
        elif before.rfind(opening) > before.rfind(closing) and closing in folded[end:end + 400]:
            return True
    return False


def reported(folded: str, start: int, end: int) -> bool:
    """The match is quoted from something the memory reports as an attack (a lesson about one)."""
    return _quoted(folded, start, end) and bool(_REPORTED.search(folded))


def discussed(folded: str, start: int, end: int) -> bool:
    left, right = sentence_around(folded, start, end)
    return bool(_DISCUSSION.search(folded[left:right]))


@dataclass(frozen=True)
class Rule:
    name: str
    label: str
    pattern: re.Pattern
    # The words around can excuse the match: a prohibition drops it, a discussion makes it a mark.
    excusable: bool = True
    # Extra condition on the match (folded text, match, whether a host is allowed): False drops it.
    check: Callable[[str, re.Match, Callable[[str], bool]], bool] | None = None
    severity: str = HOLD


def _r(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern:
    return re.compile(pattern, flags | re.VERBOSE)
