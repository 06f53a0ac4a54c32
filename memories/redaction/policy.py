"""When the hub redacts, and how thoroughly: the one table of occasions.

Every text that enters the hub passes redaction before it is stored, embedded, logged or sent to
an LLM. *What* counts as a secret or a personal datum is the detectors' business (the rest of
this package); *which* detectors run on *which* text is decided here, per occasion, so that a
change of policy (say, person names in the raw archive) is one line in ``POLICIES``.

Callers outside this package redact through ``redact_for`` / ``redact_one_for`` (a test keeps it
so): the call site names its occasion, and a reader finds every occasion listed below.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from memories.redaction import Redacted, analyze_many, apply_findings, redact_many
from memories.redaction.patterns import Finding


class Occasion(StrEnum):
    MEMORY = "memory"  # a memory's fields and tags: stored, embedded, shown to every agent
    QUERY = "query"  # a search query: reaches the query cache, the embedding model and the logs
    SESSION = "session"  # a session's messages and tool targets: what scoring, extraction and the LLM read
    TEXT = "text"  # plain text sent to be learned from: the archive keeps it, extraction reads it
    ARCHIVE = "archive"  # the raw archive of an uploaded session file: megabytes of tool output
    TRAINING = "training"  # segments exported as fine-tuning data: leaves the hub
    IMPORT = "import"  # another hub's export, before any of it is written here
    HUB_TEXT = "hub_text"  # text this hub's own writers produced (cluster topics, skills), on import


@dataclass(frozen=True)
class Policy:
    # spaCy's person names: six times the cost of every other detector together (bench/redaction.py).
    names: bool
    # Findings left as they are: a skill's text names its own subjects ("Alice's fix"), which
    # were already redacted in the memories it was written from.
    keep_tags: frozenset[str] = frozenset()


POLICIES: dict[Occasion, Policy] = {
    Occasion.MEMORY: Policy(names=True),
    Occasion.QUERY: Policy(names=True),
    Occasion.SESSION: Policy(names=True),
    Occasion.TEXT: Policy(names=True),
    # Pattern recognizers only: what the pipeline keeps of a session (segments, memories) is
    # redacted with names too, and names would make an upload's archive six times slower.
    Occasion.ARCHIVE: Policy(names=False),
    Occasion.TRAINING: Policy(names=True),
    Occasion.IMPORT: Policy(names=True),
    Occasion.HUB_TEXT: Policy(names=True, keep_tags=frozenset({"PERSON"})),
}


def redact_for(occasion: Occasion, texts: list[str]) -> list[Redacted]:
    """Each text redacted as ``occasion``'s policy says (one batched pass)."""
    policy = POLICIES[occasion]
    if not policy.keep_tags:
        return redact_many(texts, names=policy.names)
    found = analyze_many(texts, names=policy.names)
    return [apply_findings(text or "", [f for f in findings if f.tag not in policy.keep_tags])
            for text, findings in zip(texts, found, strict=True)]


def findings_for(occasion: Occasion, texts: list[str]) -> list[list[Finding]]:
    """What ``occasion``'s policy redacts in each text, as findings with their offsets (for a
    caller that puts the redaction back into a structure the texts were made from)."""
    policy = POLICIES[occasion]
    return [[f for f in findings if f.tag not in policy.keep_tags] for findings in analyze_many(texts, names=policy.names)]


def redact_one_for(occasion: Occasion, text: str) -> Redacted:
    return redact_for(occasion, [text])[0]
