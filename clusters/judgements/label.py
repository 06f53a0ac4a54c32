"""Judgement: a cluster's topic label — with an LLM, its 3-8 words in the members' language;
offline (and when the LLM fails), the first sentence of the member that holds the most of the
cluster's distinctive keywords (TF-IDF), cut to a heading's length. The one
place a cluster is named: a new cluster on upload, the rebuild, and the pipeline's relabelling
all ask ``cluster_label`` (docs/flow.md#topics)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from memories.providers.llm import InvalidReply, LLMError, get_llm
from memories.text import first_sentence

# A label is read in lists and on the cluster page: at most 80 characters, whichever path wrote it.
MAX_CHARS = 80
# Keywords in an offline label: enough to tell topics apart in a list, and they fit in MAX_CHARS.
KEYWORDS = 4
# The LLM reads at most this many summaries (the caller's order: most used first), a short prompt.
LLM_SUMMARIES = 30
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


class Corpus:
    """The memories a cluster's terms are weighed against (how many of them hold each term),
    each given as its texts (content, context). Counted once and only when first needed: the
    rebuild labels every cluster against one corpus, and relabelling passes its sample as an
    unread queryset, read only if the LLM gave no topic."""

    def __init__(self, memories: Iterable[tuple[str, ...]]) -> None:
        self._memories = memories
        self._counts: tuple[Counter, int] | None = None

    def counts(self) -> tuple[Counter, int]:
        """(document frequency per term, number of documents)."""
        if self._counts is None:
            frequency: Counter = Counter()
            documents = 0
            for texts in self._memories:
                frequency.update(set(_terms(" ".join(texts))))
                documents += 1
            self._counts = (frequency, documents)
        return self._counts


def cluster_label(texts: list[str], *, corpus: Corpus | None = None, summaries: list[str] | None = None,
                  fallback: str = "untitled") -> str:
    """The topic of a cluster whose members read ``texts`` (content and context). ``summaries``:
    the members' one-line summaries; given, the LLM names the topic when one is configured
    (relabelling does; a new cluster on upload and the rebuild label offline, at once and
    deterministically). ``corpus``: what the keywords are weighed against; without one, the
    members' own term counts decide. ``fallback`` when no keyword is found."""
    # The LLM only names a cluster from its summaries; a failed or absent LLM falls back to keywords.
    topic = _llm_topic(summaries) if summaries else None
    if topic is not None:
        return topic
    # No corpus: every term counts as rare (one document holding none), so frequency alone ranks.
    frequency, documents = corpus.counts() if corpus is not None else (Counter(), 1)
    keywords = _keywords(texts, frequency, documents)
    return _phrase_topic(texts, keywords) or " · ".join(keywords)[:MAX_CHARS] or fallback


def _terms(text: str) -> list[str]:
    words = [w.lower().strip(".-") for w in _WORD_RE.findall(text)]
    out = [w for w in words if w not in STOPWORDS and not w.isdigit() and len(w) >= 3]
    # CJK has no spaces between words: overlapping character pairs stand in for them.
    for run in _CJK_RUN_RE.findall(text):
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


LABEL_CHARS = 60  # a phrase read as a heading (MEMORY.md) and in lists


def _phrase_topic(member_texts: list[str], keywords: list[str]) -> str:
    """The cluster named in words its members wrote: the first sentence of the member holding the
    most of the cluster's keywords (the first such member among equals), cut at a word within
    ``LABEL_CHARS``. A list of keywords ("build · docker · find · flask") names nothing a reader
    can scan; a member's own sentence does."""
    wanted = set(keywords)
    best: tuple[int, str] | None = None
    for text in member_texts:
        clause = first_sentence(text).rstrip(".。").strip(" :,-")
        if len(clause) < 8:
            continue
        hits = len(wanted & set(_terms(clause)))
        if best is None or hits > best[0]:
            best = (hits, clause)
    if best is None or (wanted and best[0] == 0):
        return ""
    clause = best[1]
    if len(clause) > LABEL_CHARS:
        clause = clause[:LABEL_CHARS].rsplit(" ", 1)[0].rstrip(" :,;-(") + "…"
    return clause


def _keywords(member_texts: Iterable[str], document_frequency: Counter, documents: int) -> list[str]:
    """The cluster's most distinctive terms: frequent in its members, rare elsewhere (TF-IDF)."""
    tf: Counter = Counter()
    present: Counter = Counter()
    for text in member_texts:
        found = _terms(text)
        tf.update(found)
        present.update(set(found))
    # Each member holding a term counts fully; its total occurrences only logarithmically.
    scored = sorted(
        ((present[t] * (1 + math.log(tf[t])) * math.log((1 + documents) / (1 + document_frequency.get(t, 0))), t)
         for t in tf),
        key=lambda pair: (-pair[0], pair[1]),
    )
    chosen: list[str] = []
    for _, term in scored:
        # "docker" after "docker-compose" (or the reverse) says nothing new.
        if any(term in c or c in term for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) == KEYWORDS:
            break
    return chosen


def _validate_topic(data: Any) -> str:
    if not isinstance(data, dict) or not isinstance(data.get("topic"), str):
        raise InvalidReply("no topic")
    topic = " ".join(data["topic"].split()).strip(" .\"'")
    if not topic or len(topic) > MAX_CHARS:
        raise InvalidReply("topic is empty or longer than 80 characters")
    return topic


def _llm_topic(summaries: list[str]) -> str | None:
    """3-8 words in the members' language, or None when no LLM is configured or it fails."""
    llm = get_llm()
    if not llm.available or not summaries:
        return None
    listing = "\n".join(f"- {s}" for s in summaries[:LLM_SUMMARIES])
    try:
        return llm.ask_json(
            system="Name the common topic of these related memories in 3 to 8 words, in their language, at "
                   'most 80 characters. Reply with JSON only: {"topic": "..."}',
            user=listing, validate=_validate_topic, max_tokens=60, purpose="cluster_topic",
        )
    except LLMError:
        return None


def shared_terms(first: Iterable[str], second: Iterable[str], *, limit: int = 8) -> list[str]:
    """The words two clusters' members both use (the texts of each), the most used first: the
    evidence that two clusters are one topic, shown beside a merge suggestion. A word counts
    for a side when at least two of its texts hold it, or its only text does."""

    def held(texts: Iterable[str]) -> Counter:
        present: Counter = Counter()
        count = 0
        for text in texts:
            present.update(set(_terms(text)))
            count += 1
        return Counter({t: n for t, n in present.items() if n >= min(2, count)})

    a, b = held(first), held(second)
    common = sorted(set(a) & set(b), key=lambda t: (-(a[t] + b[t]), t))
    return common[:limit]
