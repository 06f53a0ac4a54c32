"""Pure text helpers of the memory service: normalisation, hashing, token budgets, and the
offline (no-LLM) classifier and extractive summaries."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memories.models import MemoryType

_WS_RE = re.compile(r"\s+")
# Rough token count: one per CJK character, one per word, one per other symbol.
_TOKEN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？])|\n+")


def normalise_space(text: str) -> str:
    return _WS_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(content: str, context: str, resolution: str) -> str:
    """Hash of the normalised body: the exact-duplicate fast path (case and spacing ignored)."""
    body = "\x1f".join(normalise_space(part).casefold() for part in (content, context, resolution))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


def truncate_tokens(text: str, budget: int) -> str:
    """Cut ``text`` to about ``budget`` tokens, at a sentence boundary when one is near."""
    text = normalise_space(text)
    if budget <= 0 or not text:
        return ""
    matches = list(_TOKEN_RE.finditer(text))
    if len(matches) <= budget:
        return text
    cut = matches[budget - 1].end()
    head = text[:cut]
    # Prefer the last sentence end in the kept part, if it keeps at least half of it.
    ends = [m.end() for m in re.finditer(r"[.!?。！？]", head)]
    if ends and ends[-1] >= len(head) // 2:
        return head[: ends[-1]].rstrip() + " …"
    return head.rstrip(" ,;:-") + "…"


def first_sentence(text: str, *, min_words: int = 3) -> str:
    """The first sentence; a fragment shorter than ``min_words`` ("npm ERR!") takes the next."""
    text = normalise_space(text)
    taken: list[str] = []
    for part in _SENTENCE_END_RE.split(text):
        if part.strip():
            taken.append(part.strip())
            if len(" ".join(taken).split()) >= min_words or any(0x3400 <= ord(c) <= 0x9FFF for c in part):
                break
    return " ".join(taken) if taken else text


def extractive_l0(content: str, budget: int = 64) -> str:
    return truncate_tokens(first_sentence(content), budget)


def extractive_l1(content: str, context: str, resolution: str, budget: int = 256) -> str:
    """Problem / scenario / solution in a 70/15/15 token budget; unused shares flow to the rest."""
    parts = [("", content, 70), ("Context: ", context, 15), ("Resolution: ", resolution, 15)]
    present = [(label, normalise_space(text), share) for label, text, share in parts if text.strip()]
    if not present:
        return ""
    total_share = sum(share for _, _, share in present)
    # Give each field its share; a field that needs less hands the rest to the others.
    budgets = {i: budget * share // total_share for i, (_, _, share) in enumerate(present)}
    spare = 0
    for i, (label, text, _) in enumerate(present):
        need = estimate_tokens(label + text)
        if need < budgets[i]:
            spare += budgets[i] - need
            budgets[i] = need
    for i, (label, text, _) in enumerate(present):
        need = estimate_tokens(label + text)
        if spare and need > budgets[i]:
            extra = min(spare, need - budgets[i])
            budgets[i] += extra
            spare -= extra
    lines = []
    for i, (label, text, _) in enumerate(present):
        label_tokens = estimate_tokens(label)
        kept = truncate_tokens(text, max(budgets[i] - label_tokens, 1))
        lines.append(f"{label}{kept}")
    return "\n".join(lines)


# --- offline type classification ------------------------------------------------------------
# Each cue is a regular expression with a weight. English cues match on word boundaries,
# Chinese ones as substrings. The type with the highest total wins; ties go to the earlier
# type in _PRIORITY (security findings outrank errors, corrections outrank patterns...).
_CUES: dict[str, list[tuple[str, float]]] = {
    MemoryType.SECURITY: [
        (r"\bsecurity\b", 2), (r"\bvulnerab\w*", 3), (r"\bcve-\d{4}-\d+", 4), (r"\bexploit\w*", 3),
        (r"\bxss\b", 3), (r"\bcsrf\b", 3), (r"\bsql injection\b", 4), (r"\binjection\b", 2),
        (r"\b(leak|leaked|leaking|exposed)\b", 2), (r"\bprivilege escalation\b", 4),
        (r"\brce\b", 3), (r"\bmalicious\b", 3), (r"\bmalware\b", 3), (r"\bphishing\b", 3),
        (r"\bcredentials?\b", 1.5), (r"\b(api[_ ]?key|secret key|access token)s?\b", 1.5),
        (r"\brotate\b", 1), (r"\bsanitiz\w+", 1.5), (r"\bunauthori[sz]ed\b", 2), (r"\bsupply[- ]chain\b", 3),
        (r"漏洞", 4), (r"安全", 2), (r"注入", 3), (r"泄露", 3), (r"密钥", 2), (r"越权", 4),
        (r"攻击", 3), (r"恶意", 3), (r"权限提升", 4), (r"凭证", 2),
    ],
    MemoryType.CORRECTION: [
        (r"\bactually\b", 2), (r"\bcorrection\b", 3), (r"\bcorrected\b", 2), (r"\bwrong\b", 1.5),
        (r"\bmistaken(ly)?\b", 2), (r"\bnot\b[^.]{1,40}\bbut\b", 1.5), (r"\binstead of\b", 1.5),
        (r"\bshould (have )?(be|use|been)\b", 1), (r"\bturns out\b", 2), (r"\bmisconception\b", 3),
        (r"\bincorrect(ly)?\b", 2), (r"\bdo not use\b", 1), (r"\bdon'?t use\b", 1),
        (r"\bno longer\b", 1), (r"\bdeprecated\b", 1.5), (r"\boutdated\b", 1.5),
        (r"纠正", 3), (r"更正", 3), (r"其实", 2), (r"不是.{1,20}而是", 3), (r"搞错", 3),
        (r"应该(用|是)", 1.5), (r"错误地", 2), (r"过时", 1.5),
    ],
    MemoryType.ERROR: [
        (r"\berror\b", 2), (r"\berrors\b", 1.5), (r"\bexception\b", 2), (r"\btraceback\b", 3),
        (r"\bfail(ed|s|ure|ing)?\b", 1.5), (r"\bcrash(ed|es)?\b", 2), (r"\bbug\b", 1.5),
        (r"\berrno\b", 2), (r"\bstack ?trace\b", 2), (r"\b(cannot|can't|could not|couldn't)\b", 1),
        (r"\bnot found\b", 1.5), (r"\bexit (code|status)\b", 2), (r"\btimed? ?out\b", 1.5),
        (r"\b\w+Error\b", 2.5), (r"\bsegfault\b", 3), (r"\bdenied\b", 1), (r"\bbroken\b", 1),
        (r"\bE(?:ACCES|NOENT|PERM|EXIST|CONNREFUSED|CONNRESET|ADDRINUSE|TIMEDOUT|PIPE|NOSPC|NOMEM)\b", 3),
        (r"\bERR!", 2.5), (r"\bHTTP [45]\d\d\b|\b(?:401|403|404|500|502|503) (?:error|unauthorized|forbidden)", 2),
        (r"\bfix(ed|es)?\b", 1), (r"\bworkaround\b", 1.5), (r"\bresolved?\b", 0.5),
        (r"报错", 3), (r"错误", 2), (r"异常", 2), (r"失败", 2), (r"崩溃", 3), (r"超时", 2),
        (r"修复", 1.5), (r"无法", 1),
    ],
    MemoryType.PREFERENCE: [
        (r"\bprefer(s|red|ence|ences)?\b", 3), (r"\balways use\b", 2), (r"\bnever use\b", 2),
        (r"\bi (like|love|hate|dislike)\b", 2), (r"\bplease (use|don'?t|do not|always|never)\b", 2),
        (r"\b(user|team) (wants|likes|prefers|expects)\b", 3), (r"\bfavou?rite\b", 2),
        (r"\bconvention\b", 1), (r"\bstyle\b", 0.5), (r"\brather than\b", 1),
        (r"偏好", 3), (r"喜欢", 2), (r"习惯", 2), (r"总是用", 2), (r"不要用", 2), (r"更倾向", 3),
        (r"请(使用|用|不要)", 2),
    ],
    MemoryType.PATTERN: [
        (r"\bpattern\b", 2), (r"\bbest practices?\b", 3), (r"\bapproach\b", 1), (r"\btips?\b", 1.5),
        (r"\bhow to\b", 1.5), (r"\bwhen\b[^.]{1,60}\buse\b", 1.5), (r"\brecipe\b", 1),
        (r"\bworkflow\b", 1), (r"\bstrategy\b", 1), (r"\bidiom\b", 2), (r"\brule of thumb\b", 2),
        (r"\bin general\b", 1), (r"\busually\b", 0.5), (r"\bconfigure\b", 0.5), (r"\busing\b", 0.3),
        (r"模式", 2), (r"最佳实践", 3), (r"方法", 1), (r"技巧", 2), (r"步骤", 1), (r"通常", 1),
    ],
    MemoryType.LIFE: [
        (r"\b(restaurant|recipe|travel|trip|flight|hotel|weather|holiday|vacation)s?\b", 2),
        (r"\b(birthday|family|friend|kids?|pet|dog|cat|garden|hiking|movie|book|music)s?\b", 1.5),
        (r"\b(cafe|coffee shop|museum|park|beach|concert)s?\b", 1.5),
        (r"生活", 2), (r"旅行", 2), (r"餐厅", 2), (r"天气", 2), (r"菜谱", 2), (r"假期", 2),
        (r"家人", 1.5), (r"朋友", 1.5), (r"电影", 1.5),
    ],
}
_PRIORITY = [
    MemoryType.SECURITY,
    MemoryType.CORRECTION,
    MemoryType.ERROR,
    MemoryType.PREFERENCE,
    MemoryType.PATTERN,
    MemoryType.LIFE,
]
_COMPILED = {t: [(re.compile(p, re.IGNORECASE), w) for p, w in cues] for t, cues in _CUES.items()}
_TECHNICAL_RE = re.compile(r"[`$/\\{}<>=]|\b(pip|npm|git|docker|python|sql|api|http|json|def|class)\b", re.I)


def classify_offline(content: str, context: str = "", resolution: str = "") -> str:
    """Rule-based memory type from English and Chinese cues (SPEC §3)."""
    # The content says what the memory is; context and resolution add weaker evidence.
    scores = {t: 0.0 for t in _PRIORITY}
    for text, weight in ((content, 1.0), (context, 0.5), (resolution, 0.5)):
        if not text:
            continue
        for memory_type, cues in _COMPILED.items():
            for pattern, cue_weight in cues:
                hits = len(pattern.findall(text))
                if hits:
                    scores[memory_type] += weight * cue_weight * min(hits, 3)
    best = max(_PRIORITY, key=lambda t: (scores[t], -_PRIORITY.index(t)))
    if scores[best] > 0:
        return str(best)
    joined = " ".join((content, context, resolution))
    return str(MemoryType.PATTERN if _TECHNICAL_RE.search(joined) else MemoryType.LIFE)


_MARKER_RE = re.compile(r"<([a-z][a-z0-9_]*)>")


def normalise_tags(tags: list[str], *, max_tags: int, max_chars: int) -> list[str]:
    """Lower-case, trim, collapse spaces, drop empties and duplicates (order kept), cap count.
    Redaction markers keep their capitals (``<PERSON>``)."""
    seen: list[str] = []
    for tag in tags:
        clean = normalise_space(str(tag)).lower()[:max_chars].strip()
        clean = _MARKER_RE.sub(lambda m: f"<{m.group(1).upper()}>", clean)
        if clean and clean not in seen:
            seen.append(clean)
    return seen[:max_tags]


def memory_body(content: str, context: str, resolution: str) -> str:
    """A memory's body as one text (for comparing two memories' details)."""
    return "\n".join(part for part in (content, context, resolution) if part)


def embedding_text(memory_type: str, content: str, context: str, resolution: str) -> str:
    """The text that is embedded for a memory: its type and all of its body."""
    lines = [f"{memory_type}: {content.strip()}"]
    if context.strip():
        lines.append(f"Context: {context.strip()}")
    if resolution.strip():
        lines.append(f"Resolution: {resolution.strip()}")
    return "\n".join(lines)


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
