"""Judgement: do two memories say the same thing, so that one can stand for both?

Two signals besides the similarity of their embeddings: ``details_conflicts`` (offline: the
texts differ in a value, a negation, an opposite word, one swapped term or the order of two
terms) and ``same_subject`` (the LLM's verdict on a merge candidate; without an LLM there is no
verdict and a curator decides: a wrong merge hides a memory, a missed one only leaves a
near-duplicate in a result list).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from typing import Any

from memories.judgements.prompts import memory_prompt
from memories.providers.llm import InvalidReply, LLMError, get_llm

logger = logging.getLogger("ultron.memories")


def same_subject(
    new: tuple[str, str, str], existing: tuple[str, str, str], *, conflicts: list[str] | None = None
) -> bool | None:
    """Do two memories in the merge-candidate band share one core subject? ``conflicts`` are
    the details found to differ (``details_conflicts``), shown to the model. ``None`` when no
    LLM is configured or it fails: the pair then waits for a curator."""
    llm = get_llm()
    if not llm.available:
        return None

    def validate(data: Any) -> bool:
        if not isinstance(data, dict) or not isinstance(data.get("same_subject"), bool):
            raise InvalidReply("same_subject is not a boolean")
        return bool(data["same_subject"])

    system = (
        "Two pieces of agent experience are given. Answer whether they describe the same core "
        "subject (the same problem, fix, rule or fact), so that one merged memory could "
        "replace both without losing a fact. Two texts that differ in a number, version, name, "
        "negation or direction usually state different facts. Reply with JSON only: "
        '{"same_subject": true} or {"same_subject": false}'
    )
    user = f"A:\n{memory_prompt(*new)}\n\nB:\n{memory_prompt(*existing)}"
    if conflicts:
        user += "\n\nDetails that differ between A and B: " + "; ".join(conflicts)
    try:
        return llm.ask_json(system=system, user=user, validate=validate, max_tokens=20, purpose="same_subject")
    except LLMError as exc:
        logger.warning("same-subject check failed, left to a curator: %s", exc)
        return None


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


# Code is read as code, not as claims (a conflict is two texts asserting different things): a
# code span or a quoted message (`get/2`, "could not connect to server"), a call's arguments
# (``String.duplicate(s, 4)``), a function's arity (``get/2``), a path or file position
# (``lib/app.ex:42``), and an identifier with digits in it (``utf8mb4``, ``h2``; a number with its
# unit, ``18th`` or ``5s``, stays a value) state no value and
# no negation of the other memory.
_CODE_RE = re.compile(
    r"`[^`\n]*`|\"[^\"\n]{2,}\"|\b[\w.]+\([^()\n]*\)|\b[\w.]+/\d+\b|(?:[\w.-]*/)+[\w.-]+(?::\d+)*"
    r"|\b[\w.-]+\.\w+:\d+(?::\d+)?|\b[A-Za-z_]\w*?\d\w*\b")
# What an error message says in its own words ("could not connect", "no such file", "not found",
# "unable to", "cannot find"): the text reports the error, it does not deny the other memory.
_ERROR_IDIOM_RE = re.compile(
    r"(?i)\b(?:could\s+not|couldn't|cannot|can't|can\s+not|unable\s+to|no\s+such|not\s+found|does\s+not\s+exist"
    r"|doesn't\s+exist|did\s+not\s+match|no\s+module\s+named|not\s+allowed|not\s+permitted)\b")


def _prose(text: str) -> str:
    """``text`` with its code and its error messages' idioms blanked: what it claims in prose."""
    return _ERROR_IDIOM_RE.sub(" ", _CODE_RE.sub(" ", text))


def _values(text: str, words: set[str]) -> set[str]:
    values = {number.replace(",", "") for number in _NUMBER_RE.findall(_prose(text))}
    values.update(_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS)
    values.update(_CALENDAR[w] for w in words if w in _CALENDAR)
    return values


def _words(text: str) -> set[str]:
    return set(_WORDS_RE.findall(text.lower()))


def details_conflicts(first: str, second: str) -> list[str]:
    """What differs between two near-identical texts, each as ``kind: detail``, or ``[]``:

    - ``values``: each has a number, version, weekday or month the other lacks;
    - ``negation``: one is negated and the other not (or less often: "may run … without asking" /
      "may not run … without asking");
    - ``opposites``: they use opposite words (higher/lower, enable/disable …);
    - ``order``: the same words with terms trading places ("A called B" / "B called A",
      "from MySQL to PostgreSQL" / "from PostgreSQL to MySQL"), not a clause moved to the front;
    - ``substitution``: the same sentence with one or two terms replaced ("the staging
      bucket" / "the production bucket", "pnpm" / "yarn").

    Rewording is not a conflict; one side adding a detail is not either."""
    found: list[str] = []
    words_a, words_b = _words(first), _words(second)
    values_a, values_b = _values(first, words_a), _values(second, words_b)
    # Each side must hold a value the other lacks: one side adding a number is a detail added, not a
    # conflict (docstring: "one side adding a detail is not either").
    versioned = _versioned(first, second)
    if values_a - values_b and values_b - values_a:
        found.append(f"values: {_show(values_a - values_b)} / {_show(values_b - values_a)}")
    elif versioned:
        found.append(f"values: {versioned[0]} / {versioned[1]}")
    # Counted, not matched word for word: a negation that denies no word of the other text still
    # flags the pair ("changes nullability" / "adds a NOT NULL column" are two lessons). Matching
    # the denied word cut false flags on real-session duplicates from 24 to 5 of 65 but let one
    # distinct pair merge automatically (bench/dedup.py): a false flag costs a curator one click
    # (a conflict row offers Merge), a wrong merge hides a memory.
    # Both as written and in prose: "could not find a version" / "no version satisfies" negate alike
    # as written; "could not connect" / "connection refused" alike in prose (the error's words).
    negations_a, negations_b = _negations(first), _negations(second)
    if negations_a != negations_b and _negations(first, as_written=True) != _negations(second, as_written=True):
        found.append("negation: " + ("the first" if negations_a > negations_b else "the second")
                     + " is negated (or negated more)")
    for x, y in _OPPOSITES:
        a_x, a_y = _present(x, first, words_a), _present(y, first, words_a)
        b_x, b_y = _present(x, second, words_b), _present(y, second, words_b)
        # A text holding both words of a pair ("before and after") takes no side: only one word against its
        # opposite conflicts.
        if (a_x and not a_y and b_y and not b_x) or (a_y and not a_x and b_x and not b_y):
            found.append(f"opposites: {x if a_x else y} / {y if a_x else x}")
            break
    tokens_a, tokens_b = _terms(first), _terms(second)
    moved = _reordered(tokens_a, tokens_b)
    if moved:
        found.append(f"order: {moved[0]} and {moved[1]} trade places")
    # A changed version ("1.26" / "2.0") would show again as a substituted term: ``values`` already names it.
    elif not any(kind.startswith("values") for kind in found):
        replaced = _replaced(tokens_a, tokens_b)
        if replaced:
            found.append(f"substitution: {replaced[0]} / {replaced[1]}")
    return found


def details_conflict(first: str, second: str) -> str | None:
    """The kind of the first conflict ``details_conflicts`` finds, or None."""
    found = details_conflicts(first, second)
    return found[0].split(":", 1)[0] if found else None


def _negations(text: str, *, as_written: bool = False) -> int:
    """How often ``text`` negates, in its prose (``as_written``: its code and error messages too)."""
    lowered = (text if as_written else _prose(text)).lower()
    return sum(1 for w in _WORDS_RE.findall(lowered) if w in _NEGATIONS) + len(_NEGATION_RE.findall(lowered))


_DIGIT_ID_RE = re.compile(r"\b(?=[\w.]*[A-Za-z])(?=[\w.]*\d)[A-Za-z][\w.]*\b")


def _versioned(first: str, second: str) -> tuple[str, str] | None:
    """One identifier in two versions (``utf8mb4`` / ``utf8mb3``, ``python3.11`` / ``python3.12``):
    the same letters with other digits, each on one side only."""
    ids_a = {m.group().lower().rstrip(".") for m in _DIGIT_ID_RE.finditer(first)}
    ids_b = {m.group().lower().rstrip(".") for m in _DIGIT_ID_RE.finditer(second)}
    for x in sorted(ids_a - ids_b):
        for y in sorted(ids_b - ids_a):
            if re.sub(r"[\d.]", "", x) == re.sub(r"[\d.]", "", y):
                return x, y
    return None


def _show(values: set[str]) -> str:
    return ", ".join(sorted(values)[:3])


# Terms for the order and substitution checks: words and identifiers (dots, dashes, slashes and
# underscores kept inside), possessive 's dropped so "Bob's" and "Bob" are one term.
_TERM_RE = re.compile(r"[a-z0-9]+(?:[._/\-][a-z0-9]+)*")
_FUNCTION_WORDS = frozenset("""a an the this that these those it its is are was were be been being to of in on at
by for with as and or but if then so do does did has have had will would can could should may might must
i you he she we they me him her us them my your our their""".split())


def _terms(text: str) -> list[str]:
    return _TERM_RE.findall(re.sub(r"'s\b", "", text.lower()))


def _reordered(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """The same terms in another order that is not just a clause moved to the front or back:
    "copy from staging to QA" / "copy from QA to staging", "the user fixed it by hand; the
    agent's patch was dropped" / "the agent fixed it; the user's patch was dropped". Only for
    near-identical texts (most terms shared); returns the first pair of terms that moved."""
    shared = set(a) & set(b)
    kept_a = [t for t in a if t in shared]
    kept_b = [t for t in b if t in shared]
    if len(kept_a) < 0.7 * len(a) or len(kept_b) < 0.7 * len(b):
        return None
    if kept_a == kept_b or sorted(kept_a) != sorted(kept_b):
        return None
    if any(kept_b == kept_a[k:] + kept_a[:k] for k in range(1, len(kept_a))):
        return None  # "last year X happened" / "X happened last year"
    return next((x, y) for x, y in zip(kept_a, kept_b, strict=True) if x != y)


def _replaced(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """The same sentence with one or two short spans replaced by other content words (not a
    change of inflection, of a function word, or of a number's formatting)."""
    if min(len(a), len(b)) < 3:
        return None
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    same = sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal")
    if not ops or len(ops) > 2 or same < 0.6 * max(len(a), len(b)):
        return None
    for tag, i1, i2, j1, j2 in ops:
        if tag != "replace" or i2 - i1 > 2 or j2 - j1 > 2:
            return None
    for _, i1, i2, j1, j2 in ops:
        old = [t for t in a[i1:i2] if t not in _FUNCTION_WORDS and not t.isdigit()]
        new = [t for t in b[j1:j2] if t not in _FUNCTION_WORDS and not t.isdigit()]
        if old and new and not _same_stem(old, new):
            return " ".join(a[i1:i2]), " ".join(b[j1:j2])
    return None


def _same_stem(old: list[str], new: list[str]) -> bool:
    """"fails" / "failed", "migration" / "migrations": a change of form, not of term."""
    if len(old) != len(new):
        return False
    for x, y in zip(old, new, strict=True):
        stem = len(os.path.commonprefix([x, y]))
        if x != y and (stem < 4 or len(x) - stem > 3 or len(y) - stem > 3):
            return False
    return True


def _present(word: str, text: str, words: set[str]) -> bool:
    # Chinese is not split into words by spaces: look for the substring.
    return word in words if word.isascii() else word in text
