"""Judgement: whether a crystallized skill may be published without a curator (docs/flow.md#screening).

A skill is code: every agent of its space may follow its steps. So the crystallization publishes
on its own only a skill drawn from memories served in the open — none held or rejected, none the
poisoning screen flagged, none an unverified memory of a writer whose membership is ``reviewed``
— and whose own text (name, description, SKILL.md) passes the screen. Any other skill waits for
a curator as a draft, with the reasons this module gives; a curator may still publish it by hand.

It fails closed: a memory the skill was drawn from that is gone counts against it, and the
screen holds on its own errors. The service reads the memories and the writers' trust and hands
them in; nothing here builds a query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memories.screening import PASS, memory_screen

# The screen reads a memory's fields; a skill's are passed in them, and its findings named back.
# The name is read where it stands, as the body's heading: the classifier reads a few imperative
# words alone as an order (read as a field of its own, the names of 7 of the 47 offline skills
# of tests/data/cluster_topics.jsonl scored as prompt injections; as the heading, none did).
_SKILL_FIELDS = {"content": "body", "context": "description"}
# What the hub adds to the text its members gave: the citations (``[m:1f95ecf2]``), whose hex the
# classifier reads as a payload (an ordinary skill scored 0.5–0.8 with them, 0.17 without), and
# the front matter (the name and the description, read as fields of the text).
_CITATION = re.compile(r"\s*\[m:[0-9a-f]{8}\]")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


@dataclass(frozen=True)
class SourceFacts:
    """What the gate needs of one memory a skill was drawn from (``found`` False: it is gone)."""

    id: str
    found: bool = True
    status: str = "active"
    flags: tuple[str, ...] = ()  # the labels of its ``screen_flags``
    verified: bool = False
    reviewed_writer: bool = False  # its writer's membership in the skill's space is ``reviewed``


def _reason(cause: str, label: str, *, memory: str = "", rule: str = "", field: str = "", text: str = "",
            severity: str = "") -> dict:
    return {"cause": cause, "label": label, "memory": memory, "rule": rule, "field": field, "text": text,
            "severity": severity}


def source_reasons(sources: Iterable[SourceFacts]) -> list[dict]:
    """Why the memories a skill was drawn from keep it from publishing on its own (none: they don't)."""
    out = []
    for source in sources:
        short = source.id[:8]
        if not source.found:
            out.append(_reason("gone", f"memory {short} it was drawn from is gone", memory=source.id))
        elif source.status == "held":
            out.append(_reason("held", f"memory {short} it was drawn from is held for review", memory=source.id))
        elif source.status == "rejected":
            out.append(_reason("rejected", f"memory {short} it was drawn from was rejected by a curator",
                               memory=source.id))
        if source.found and source.flags:
            out.append(_reason("flagged", f"memory {short} was flagged by the screen: {'; '.join(source.flags)}",
                               memory=source.id))
        if source.found and source.reviewed_writer and not source.verified:
            out.append(_reason("reviewed_writer", f"memory {short} is unverified and its writer is reviewed",
                               memory=source.id))
    return out


def skill_text_reasons(*, name: str, description: str, body: str, allowed_hosts: Iterable[str] = ()) -> list[dict]:
    """The poisoning screen on the skill's own text: its findings, when it does not pass."""
    text = _CITATION.sub("", _FRONT_MATTER.sub("", body)).strip()
    if name.strip() and name.strip() not in text:
        text = f"# {name.strip()}\n\n{text}"
    verdict = memory_screen({"content": text, "context": description}, allowed_hosts=allowed_hosts)
    if verdict.action == PASS:
        return []
    found = [_reason("screen", f"its {_SKILL_FIELDS.get(r.get('field', ''), 'text')} {r.get('label', '')}".strip(),
                     rule=str(r.get("rule", "")), field=_SKILL_FIELDS.get(r.get("field", ""), str(r.get("field", ""))),
                     text=str(r.get("text", ""))[:200], severity=str(r.get("severity", "")))
             for r in verdict.reasons()]
    return found or [_reason("screen", f"its text did not pass the screen ({verdict.action})")]


def waiting_reason(reasons: list[dict]) -> str:
    """The one line a version's ``reason`` keeps: why it waits for a curator."""
    labels = list(dict.fromkeys(r["label"] for r in reasons))
    shown = "; ".join(labels[:6]) + (f"; and {len(labels) - 6} more" if len(labels) > 6 else "")
    return f"waiting for a curator: {shown}"[:2000]
