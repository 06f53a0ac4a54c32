"""Judgement: does a new memory replace an older one on the same subject? (docs/flow.md#supersession)

Knowledge changes: "we moved from poetry to uv", "the API is now v3", "stop squashing PRs". The
new memory then *supersedes* the old one, which keeps its text and history but is no longer
served as current. The hub decides alone only when the texts say which one is current:

- ``explicit``: the new text says it changed — "no longer", "instead of", "moved from … to",
  "replaced by", "deprecated", "is now", "不再", "改为" … — and the old text does not say so
  already (two texts that both say "use X instead of Y" are the same advice);
- ``version``: the same name carries a higher version in the new text ("numpy 1.26" →
  "numpy 2.1"), and no name a lower one;
- ``date``: the new text names a later date than any the old one names (or a later year after
  the same word: "calendar 2024" → "calendar 2025"), and they disagree on a detail
  (``details_conflicts``);
- ``later``: the new memory restates the old one's sentence with one value replaced ("the nightly
  ETL starts at 01:00 UTC" → "… at 03:30 UTC"; ``slot_change``) and was recorded at least
  ``SUPERSEDE_AFTER_DAYS`` after the old one was last confirmed. Facts about a setup change over
  time; of two reports weeks apart, the later one is the current one.

Two memories on one subject that disagree with nothing saying which is current (two agents, the
same week, opposite advice; or differing in more than one value, or in where the advice applies) are a ``conflict``: a curator decides, the hub does not guess. Pairs
that agree, or whose difference is a detail added, are ``none``: the duplicate check handles them.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memories.judgements.prompts import memory_prompt
from memories.judgements.same_subject import (
    _FUNCTION_WORDS,
    _negations,
    _same_stem,
    details_conflicts,
)
from memories.providers.llm import InvalidReply, LLMError, get_llm

logger = logging.getLogger("ultron.memories")

SUPERSEDES, CONFLICT, NONE = "supersedes", "conflict", "none"

# Words that say a fact changed. Matched on the new text; a cue the old text holds too says
# nothing about their order.
_CUES_EN = re.compile(
    r"\b(?:no longer|not any ?more|any ?more|instead of|in place of|rather than|replaced (?:by|with)|"
    r"replaces|has replaced|superseded|supersedes|switched (?:from|to|over)|switch(?:ed)? back|"
    r"moved (?:from|to|off|over|away)|migrated (?:from|to|off|away)|moving (?:from|to|off)|"
    r"upgraded (?:from|to)|bumped (?:from|to)|downgraded|rolled back|reverted|deprecated|"
    r"(?:was|were|has been|have been|got) (?:removed|dropped|retired|renamed|replaced|changed)|"
    r"renamed|is now|are now|now (?:uses?|runs?|lives?|requires?|needs?|points?|defaults?|goes|go|sits|comes?|"
    r"builds?|deploys?|ships?|publish(?:es)?|sends?|reads?|writes?|logs?|starts?|happens?)|"
    r"(?:is|are|went|goes|go) back (?:on|to)|(?:is|are) (?:retired|decommissioned|discontinued|gone)|"
    r"(?<!to )stop (?:using|running|doing|calling|setting|\w+ing)|don'?t (?:\w+ )?any ?more|"
    r"changed (?:from|to)|(?:as of|since|starting|from) (?:v?\d|version|release|today|now|\w+ \d{4}|\d{4}))",
    re.IGNORECASE,
)
_CUES_ZH = re.compile(r"现在|目前改|不再|改为|改成|改用|换成|换为|替换|替代|取代|升级到|升级为|升级至|迁移到|迁移至|"
                      r"迁到|弃用|废弃|已移除|已删除|已下线|停止使用|不要再|从.{1,20}?(?:改|换|迁|升级)")

# "now" closing a clause: "Spark jobs run on Kubernetes now: …".
_TRAILING_NOW = re.compile(r"\w\s+(?:is|are|runs?|lives?|uses?|goes|go|builds?|sits?|points?|happens?)\b[^.;:\n]{0,60}"
                           r"\bnow\s*(?:[:;,.)]|$)", re.IGNORECASE | re.MULTILINE)

# A name followed by its version: "numpy 1.26", "Node 20", "python3.12", "v2 API" is not one
# (the version comes first); "Postgres 16" and "psql 17" are two names.
_VERSIONED = re.compile(r"\b([a-z][a-z0-9_+\-]*?)[ @=:/-]?v?(\d+(?:\.\d+){0,3})(?:\.x)?\b", re.IGNORECASE)
_API_VERSION = re.compile(r"\b(v)(\d+)\b", re.IGNORECASE)
_DATE = re.compile(
    r"\b(20\d{2})-(0[1-9]|1[0-2])(?:-(\d{2}))?\b|"
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (?:\d{1,2},? )?(20\d{2})\b|"
    r"\b(20\d{2})年(\d{1,2})月",
    re.IGNORECASE,
)
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), start=1)}


# Words of an old text that already steers away from something.
_CONTRAST = re.compile(r"\b(?:avoid|never|instead|rather|prefer)\b|避免|不要|别用|而不是", re.IGNORECASE)


@dataclass(frozen=True)
class ChangeVerdict:
    """``kind``: supersedes | conflict | none; ``order``: what says the new one is current
    (explicit | version | date), or none; ``evidence``: for a person, what was seen."""

    kind: str
    order: str = "none"
    evidence: str = ""


def change_cue(text: str) -> str | None:
    """The first words in ``text`` that say something changed, or None."""
    found = _CUES_EN.search(text) or _CUES_ZH.search(text) or _TRAILING_NOW.search(text)
    return found.group(0).strip(" :;,.)") if found else None


# Words a number follows that make it a quantity or a setting, not a version ("port 6380",
# "after 10 minutes", "limit is 88"), besides the function words.
_NOT_PRODUCTS = _FUNCTION_WORDS | frozenset("""v version ver port ports timeout timeouts ttl limit limits size max min
retries retry workers worker threads thread replicas replica lines line chars characters seconds second minutes minute
hours hour days day weeks week months month mb gb kb ms s m h d x step steps level levels code exit status after
before every each per about around over under up down than top page pages row rows item items times attempt attempts
width height length count number""".split())


def _versions(text: str) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """Each product name with the version it carries: "numpy 1.26", "Jest 29", "actions/checkout@v4".
    A whole number is a version only after a name written with a capital (a product's name:
    "Node 20", "Postgres 16"; "service 3" is an instance, "port 5432" a setting) and below 100.
    Second: whole numbers after a lower-case name ("clap 2", "react-router-dom 5"), versions only
    where the other text gives the same name a dotted version ("clap 4.5")."""
    found: dict[str, tuple[int, ...]] = {}
    weak: dict[str, tuple[int, ...]] = {}
    for pattern in (_VERSIONED, _API_VERSION):
        for name, number in pattern.findall(text):
            key = name.lower().rstrip("-_")
            if pattern is _VERSIONED and key in _NOT_PRODUCTS:
                continue
            parts = tuple(int(part) for part in number.split("."))
            if len(parts) == 1 and pattern is _VERSIONED and (parts[0] >= 100 or name.islower()):
                if parts[0] < 100:
                    weak.setdefault(key, parts)
                continue
            found.setdefault(key, parts)
    return found, weak


def version_order(old: str, new: str) -> str | None:
    """"numpy 1.26 → 2.1" when a name the two texts share carries a higher version in the new
    one and none carries a lower; None otherwise."""
    (before, before_weak), (after, after_weak) = _versions(old), _versions(new)
    # A lower-case name's whole number counts when the other text dots the same name's version.
    before = {**{k: v for k, v in before_weak.items() if len(after.get(k, ())) > 1}, **before}
    after = {**{k: v for k, v in after_weak.items() if len(before.get(k, ())) > 1}, **after}
    raised, lowered = [], []
    for name in before.keys() & after.keys():
        if after[name] > before[name]:
            raised.append(f"{name} {'.'.join(map(str, before[name]))} → {'.'.join(map(str, after[name]))}")
        elif after[name] < before[name]:
            lowered.append(name)
    return raised[0] if raised and not lowered else None


def _dates(text: str) -> list[tuple[int, int, int]]:
    out = []
    for match in _DATE.finditer(text):
        iso_y, iso_m, iso_d, month, month_y, zh_y, zh_m = match.groups()
        if iso_y:
            out.append((int(iso_y), int(iso_m), int(iso_d or 1)))
        elif month_y:
            out.append((int(month_y), _MONTHS[month.lower()[:3]], 1))
        else:
            out.append((int(zh_y), int(zh_m), 1))
    return out


# A year standing alone after a word ("Team calendar 2024", "the 2025 budget" is not one): a date
# only when the other text has the same word before another year.
_YEAR_AFTER = re.compile(r"\b([a-z]+) ((?:19|20)\d{2})\b(?![-/.:]\d)", re.IGNORECASE)


# Words a year may follow besides a name ("since 2024"); other function and quantity words may not.
_NOT_BEFORE_A_YEAR = _NOT_PRODUCTS - frozenset({"in", "since", "of", "for", "from", "until"})


def _years(text: str) -> dict[str, int]:
    return {word.lower(): int(year) for word, year in _YEAR_AFTER.findall(text)
            if word.lower() not in _NOT_BEFORE_A_YEAR}


def date_order(old: str, new: str) -> str | None:
    """The new text's latest date when it is later than every date the old one names; or a
    later year after the same word ("calendar 2024" → "calendar 2025")."""
    before, after = _dates(old), _dates(new)
    if after and (not before or max(after) > max(before)):
        return "-".join(f"{part:02d}" for part in max(after))
    years_before, years_after = _years(old), _years(new)
    shared = years_before.keys() & years_after.keys()
    if shared and all(years_after[w] > years_before[w] for w in shared):
        return str(max(years_after[w] for w in shared))
    return None


# --- one value replaced: the ``later`` order -------------------------------------------------
# Words and identifiers, and each Chinese character (Chinese is not split by spaces).
_SLOT_TOKEN = re.compile(r"[a-z0-9]+(?:[._/\-:@#][a-z0-9]+)*|[\u3400-\u9fff]", re.IGNORECASE)
_ARTICLES = frozenset({"the", "a", "an", "its", "their", "our", "your"})
# A replaced span after (or starting with) one of these says where or for whom the advice holds,
# not what the value is: "use pnpm for the web app" / "… for the docs site" are two subjects.
_SCOPE = frozenset("""for in of per within during under except when while if unless inside outside 对 给""".split())
_PREPOSITIONS = frozenset("on at to by via with through from into onto over behind".split()) | _SCOPE
_SLOT_MAX = 8  # tokens on either side of the replaced span


def _stem(token: str) -> str:
    """"gets" / "get", "failed" / "fail": the same word for aligning two statements."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(token) > len(suffix) + 2 and token.endswith(suffix) and token.isalpha():
            return token[: -len(suffix)]
    return token


# A quantity: "10", "01:00", "30s", "4g", "500m", "2.5".
_QUANTITY = re.compile(r"\d+(?:[.:,]\d+)*[a-z]{0,3}")


def slot_change(old: str, new: str) -> str | None:
    """``_slot_change`` of the old statement against the new one, or against the new one's
    first clauses (up to a ";", "(", or ", "), the rest being details it adds."""
    for end in [m.start() for m in _CLAUSE_END.finditer(new)] + [len(new)]:
        found = _slot_change(old, new[:end])
        if found:
            return found
    return None


_CLAUSE_END = re.compile(r"[;(]|[,.:](?:\s|$)")


def _slot_change(old: str, new: str) -> str | None:
    """"01:00 → 03:30" when ``new`` restates ``old``'s statement with one value replaced: a shared
    beginning of at least two words (the subject, which must not change), then one replaced span
    of at most eight words, then the rest of the old text unchanged; the new text may add words
    after the replaced span ("… 50 MB; bigger files go through S3"). Not a new value: a span that
    says where the statement applies ("for the web app" / "for the docs site": another subject),
    a change of inflection, or a quantity of something else ("3 primary shards" / "1 replica").
    In Chinese, only a replaced span written in Latin letters or digits counts ("保存在 NFS 上" /
    "保存在 S3 上"): without spaces between words, where a value ends is not known. None
    otherwise."""
    a, b = _SLOT_TOKEN.findall(old.lower()), _SLOT_TOKEN.findall(new.lower())
    if len(a) < 3 or len(b) < 3:
        return None
    matcher = difflib.SequenceMatcher(None, [_stem(t) for t in a], [_stem(t) for t in b], autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not ops or ops[0][0] != "replace" or any(tag != "insert" for tag, *_ in ops[1:]):
        return None
    _, i1, i2, j1, j2 = ops[0]
    prefix = [t for t in a[:i1] if t not in _ARTICLES]
    if len(prefix) < 2 or i2 - i1 > _SLOT_MAX or j2 - j1 > _SLOT_MAX:
        return None
    if prefix[-1] in _SCOPE or a[i1] in _SCOPE or b[j1] in _SCOPE:
        return None
    was, now = a[i1:i2], b[j1:j2]
    if was[0] != now[0] and was[0] in _PREPOSITIONS and now[0] in _PREPOSITIONS:
        return None  # "on the web app" / "with HSTS_SECONDS": another complement, not a new value
    if not [t for t in was if t not in _FUNCTION_WORDS] or not [t for t in now if t not in _FUNCTION_WORDS]:
        return None
    if _same_stem(was, now):
        return None  # "migration" / "migrations": the same word
    words_was = {t for t in was if not _QUANTITY.fullmatch(t)}
    words_now = {t for t in now if not _QUANTITY.fullmatch(t)}
    if any(_QUANTITY.fullmatch(t) for t in was + now) and words_was != words_now:
        return None  # a number with other words: the count of another thing
    if not all(t.isascii() for t in was + now):
        return None  # Chinese has no spaces between words: where a value ends is not known
    return f"{' '.join(was)} → {' '.join(now)}"


# Advice in the old text against something ("don't run on iOS 15 simulators", "avoid utcnow"): a
# newer version or date in the new text may be the alternative it already pointed to.
_PROHIBITION = re.compile(r"(?:^|[.;:!?\n]\s*)(?:don'?t|do not|never|avoid|stop)\b|不要|别用|禁止", re.IGNORECASE)


def change_decide(*, old: str, new: str, related: bool, close: bool, apart_days: float | None = None,
                  old_content: str | None = None, new_content: str | None = None) -> ChangeVerdict:
    """Whether memory text ``new`` (uploaded after ``old``) supersedes it, conflicts with it, or
    neither. ``related``: the two are on one topic (their similarity reaches the cluster
    threshold): enough when the new text says in words that something changed. ``close``: they
    are near-duplicates in wording (the soft duplicate threshold): needed for every other
    signal, which compares details. ``apart_days``: how long after the old memory was last
    confirmed the new one came (None: unknown); ``old_content`` / ``new_content``: the two
    statements alone, for ``slot_change`` (default: the whole texts)."""
    if not related:
        return ChangeVerdict(NONE)
    conflicts = details_conflicts(old, new) if close else []
    # An old text that already warns or contrasts ("don't call save() in a loop", "avoid
    # utcnow", "not the old path") may state the very advice the new one gives with a change
    # word ("… instead", "deprecated"): the order is not clear, a person decides.
    # Counted as written: an error message's "could not" in the old text is also a reason not to
    # read a change word of the new one as replacing it.
    if not change_cue(old) and not _negations(old, as_written=True) and not _CONTRAST.search(old):
        cue = change_cue(new)
        if cue:
            return ChangeVerdict(SUPERSEDES, "explicit", f"the new memory says {cue!r}")
    if not close:
        return ChangeVerdict(NONE)
    # A version or a date orders the two unless the old text advised against something: its
    # negations otherwise describe ("no config needed"), they do not steer.
    if conflicts and not _PROHIBITION.search(old) and not _CONTRAST.search(old):
        raised = version_order(old, new)
        if raised:
            return ChangeVerdict(SUPERSEDES, "version", raised)
        later = date_order(old, new)
        if later:
            return ChangeVerdict(SUPERSEDES, "date", f"the new memory is dated {later}")
    after = supersede_after_days()
    if after and apart_days is not None and apart_days >= after:
        replaced = slot_change(old if old_content is None else old_content, new if new_content is None else new_content)
        if replaced:
            return ChangeVerdict(SUPERSEDES, "later", f"{replaced}, recorded {apart_days:.0f} days after the old memory")
    if conflicts:
        return ChangeVerdict(CONFLICT, "none", "; ".join(conflicts))
    return ChangeVerdict(NONE)


def supersede_after_days() -> int:
    """``ULTRON_SUPERSEDE_AFTER_DAYS``: how far apart two reports of one value must be for the later
    to replace the earlier without a curator (0: never by time alone)."""
    return settings.ULTRON_SUPERSEDE_AFTER_DAYS


LLM_VERDICTS = ("new", "old", "both", "unsure")


def llm_change_verdict(old: tuple[str, str, str], new: tuple[str, str, str], evidence: str) -> str | None:
    """The LLM's reading of a conflict (``old`` recorded before ``new``; each content, context,
    resolution): ``new`` (the newer replaces the older), ``old`` (the older still holds),
    ``both`` (both hold, in different situations) or ``unsure``. None when no LLM is configured
    or it fails: the conflict then waits for a curator."""
    llm = get_llm()
    if not llm.available:
        return None

    def validate(data: Any) -> str:
        if not isinstance(data, dict) or data.get("current") not in LLM_VERDICTS:
            raise InvalidReply(f"current must be one of {', '.join(LLM_VERDICTS)}")
        return str(data["current"])

    system = (
        "Two memories from a team's shared knowledge are about the same subject and disagree. The "
        "OLDER one was recorded first, the NEWER one later. Decide which is current knowledge: "
        '"new" when the newer replaces the older (a changed fact, tool, version, setting or reversed '
        'advice), "old" when the older still holds and the newer is mistaken, "both" when both hold '
        '(different situations or scopes), "unsure" when the texts do not tell. Reply with JSON only: '
        '{"current": "new"} (or "old", "both", "unsure")'
    )
    user = (f"OLDER:\n{memory_prompt(*old)}\n\nNEWER:\n{memory_prompt(*new)}\n\n"
            f"Details that differ: {evidence or 'none found'}")
    try:
        return llm.ask_json(system=system, user=user, validate=validate, max_tokens=20, purpose="supersede")
    except LLMError as exc:
        logger.warning("conflict check failed, left to a curator: %s", exc)
        return None
