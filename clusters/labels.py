"""Topic labels for clusters: the LLM's 3-8 words, or offline the most distinctive keywords."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from memories.providers.llm import InvalidReply, LLMError, get_llm

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.+#-]{2,}")
_CJK_RUN_RE = re.compile(r"[\u4e00-\u9fff]{2,}")
STOPWORDS = set("""
the and for with that this from have has had was were are is be been being not but you your they them their
its it's into onto over under when then than there here what which who whom why how all any each few more most
other some such only own same can will just don should now use used using also very too out off our ours
error errors fix fixed fails failed failure issue issues problem problems memory need needs make makes made
via per get got set run runs running after before while within without about again able would could
because context resolution content when where lesson note notes one two new
cannot can't won't doesn't didn't case cases start started starting like want wants know see seen
""".split())


def terms(text: str) -> list[str]:
    words = [w.lower().strip(".-") for w in _WORD_RE.findall(text)]
    out = [w for w in words if w not in STOPWORDS and not w.isdigit() and len(w) >= 3]
    for run in _CJK_RUN_RE.findall(text):
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def keyword_topic(member_texts: Iterable[str], document_frequency: Counter, documents: int, *, words: int = 4) -> str:
    """The cluster's most distinctive terms: frequent in its members, rare elsewhere (TF-IDF)."""
    tf: Counter = Counter()
    present: Counter = Counter()
    for text in member_texts:
        found = terms(text)
        tf.update(found)
        present.update(set(found))
    scored = sorted(
        ((present[t] * (1 + math.log(tf[t])) * math.log((1 + documents) / (1 + document_frequency.get(t, 0))), t)
         for t in tf),
        key=lambda pair: (-pair[0], pair[1]),
    )
    chosen: list[str] = []
    for _, term in scored:
        if any(term in c or c in term for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) == words:
            break
    return " · ".join(chosen)[:80]


def _validate_topic(data: Any) -> str:
    if not isinstance(data, dict) or not isinstance(data.get("topic"), str):
        raise InvalidReply("no topic")
    topic = " ".join(data["topic"].split()).strip(" .\"'")
    if not topic or len(topic) > 80:
        raise InvalidReply("topic is empty or longer than 80 characters")
    return topic


def llm_topic(summaries: list[str]) -> str | None:
    """3-8 words in the members' language, or None when no LLM is configured or it fails."""
    llm = get_llm()
    if not llm.available or not summaries:
        return None
    listing = "\n".join(f"- {s}" for s in summaries[:30])
    try:
        return llm.ask_json(
            system="Name the common topic of these related memories in 3 to 8 words, in their language, at "
                   'most 80 characters. Reply with JSON only: {"topic": "..."}',
            user=listing, validate=_validate_topic, max_tokens=60, purpose="cluster_topic",
        )
    except LLMError:
        return None
