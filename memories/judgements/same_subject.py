"""Judgement: do two memories say the same thing, so that one can stand for both?

Two signals besides the similarity of their embeddings: ``details_conflict`` (offline: the
texts differ in a value, a negation or an opposite word) and ``same_subject`` (the LLM's
verdict for the uncertain band; without an LLM the answer is "no": a wrong merge hides a
memory, a missed one only leaves a near-duplicate in a result list).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from memories.judgements.prompts import memory_prompt
from memories.providers.llm import InvalidReply, LLMError, get_llm

logger = logging.getLogger("ultron.memories")


def same_subject(new: tuple[str, str, str], existing: tuple[str, str, str]) -> bool:
    """Do two memories in the soft-similarity band share one core subject? Without an LLM, or
    when it fails, the answer is no: a wrong merge destroys knowledge, a missed one does not."""
    llm = get_llm()
    if not llm.available:
        return False

    def validate(data: Any) -> bool:
        if not isinstance(data, dict) or not isinstance(data.get("same_subject"), bool):
            raise InvalidReply("same_subject is not a boolean")
        return bool(data["same_subject"])

    system = (
        "Two pieces of agent experience are given. Answer whether they describe the same core "
        "subject (the same problem, fix, rule or fact), so that one merged memory could "
        'replace both. Reply with JSON only: {"same_subject": true} or {"same_subject": false}'
    )
    user = f"A:\n{memory_prompt(*new)}\n\nB:\n{memory_prompt(*existing)}"
    try:
        return llm.ask_json(system=system, user=user, validate=validate, max_tokens=20, purpose="same_subject")
    except LLMError as exc:
        logger.warning("same-subject check failed, treating as distinct: %s", exc)
        return False


# --- conflicting details: the second signal of the duplicate check --------------------------
# Two texts can sit very close in embedding space and still say different things: "stocks close
# higher on Friday" / "stocks close lower on Wednesday", "pin numpy to 1.26" / "pin numpy to
# 2.0", "X is enabled" / "X is not enabled". On the STS Benchmark pairs these make up most of the
# distinct pairs above the 0.85 threshold (bench/dedup.py). Such a pair is never merged on
# similarity alone; it is left to the LLM's judgement like the soft band.
_NUMBER_RE = re.compile(r"\d+(?:[.,:_]\d+)*")
_WORDS_RE = re.compile(r"[a-z]+(?:'[a-z]+)?|[\u3400-\u9fff]+")
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
# Days and months are values too ("headlines on July 29" / "on Dec 14"); "may" is left out.
_CALENDAR = {
    word: word[:3]
    for word in """monday tuesday wednesday thursday friday saturday sunday january february march
    april june july august september october november december""".split()
} | {abbr: abbr for abbr in "mon tue wed thu fri sat sun jan feb mar apr jun jul aug sep oct nov dec".split()}
_NEGATIONS = frozenset("""not no never none nothing nobody cannot without neither nor""".split())
_NEGATION_RE = re.compile(r"n't\b|[不没未]")
_OPPOSITES = [
    ("higher", "lower"), ("up", "down"), ("rise", "fall"), ("rises", "falls"), ("rose", "fell"),
    ("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"),
    ("gain", "loss"), ("gains", "losses"), ("more", "less"), ("before", "after"),
    ("enable", "disable"), ("enabled", "disabled"), ("true", "false"), ("open", "close"),
    ("opened", "closed"), ("win", "lose"), ("won", "lost"), ("add", "remove"), ("added", "removed"),
    ("start", "stop"), ("started", "stopped"), ("allow", "deny"), ("allowed", "denied"),
    ("always", "never"), ("success", "failure"), ("succeeded", "failed"), ("pass", "fail"),
    ("passed", "failed"), ("min", "max"), ("minimum", "maximum"), ("above", "below"), ("on", "off"),
    ("upgrade", "downgrade"), ("install", "uninstall"), ("include", "exclude"), ("sync", "async"),
    ("增加", "减少"), ("升高", "降低"), ("开启", "关闭"), ("启用", "禁用"), ("成功", "失败"), ("允许", "禁止"),
]


def _values(text: str, words: set[str]) -> set[str]:
    values = {number.replace(",", "") for number in _NUMBER_RE.findall(text)}
    values.update(_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS)
    values.update(_CALENDAR[w] for w in words if w in _CALENDAR)
    return values


def _words(text: str) -> set[str]:
    return set(_WORDS_RE.findall(text.lower()))


def details_conflict(first: str, second: str) -> str | None:
    """Why two near-identical texts may still disagree, or None: ``"values"`` when each has a
    number, version, weekday or month the other lacks; ``"negation"`` when only one of them is
    negated; ``"opposites"`` when they use opposite words (higher/lower, enable/disable …)."""
    words_a, words_b = _words(first), _words(second)
    values_a, values_b = _values(first, words_a), _values(second, words_b)
    if values_a - values_b and values_b - values_a:
        return "values"
    negated_a = bool(words_a & _NEGATIONS or _NEGATION_RE.search(first))
    negated_b = bool(words_b & _NEGATIONS or _NEGATION_RE.search(second))
    if negated_a != negated_b:
        return "negation"
    for x, y in _OPPOSITES:
        a_x, a_y = _present(x, first, words_a), _present(y, first, words_a)
        b_x, b_y = _present(x, second, words_b), _present(y, second, words_b)
        if (a_x and not a_y and b_y and not b_x) or (a_y and not a_x and b_x and not b_y):
            return "opposites"
    return None


def _present(word: str, text: str, words: set[str]) -> bool:
    # Chinese is not split into words by spaces: look for the substring.
    return word in words if word.isascii() else word in text
