"""The poisoning screen (docs/flow.md#screening): every memory written to the hub is read, after
redaction, for what published attacks on agent memory use — orders to the reading agent, prompt
structure, remote code, secrets sent away, checks turned off, destructive commands, hidden
characters, encoded payloads, links outside the space's allowed hosts — by rules
(``rules``, ``links``, ``hidden``) and a learned classifier (``classifier``).

``memories_screen`` is the one policy function: a verdict per memory, ``hold`` (a curator
decides before any other agent sees it), ``mark`` (served, with the reasons shown to readers)
or ``pass``. It never fails open: an error in any detector holds the memory, with the error as
its reason."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from memories.screening.classifier import ClassifierError, get_classifier
from memories.screening.families import rule_findings
from memories.screening.hidden import decoded_payloads, hidden_findings, tag_text
from memories.screening.links import ALLOWED_DEFAULT, allowed_checker, link_findings
from memories.screening.model import screen_model
from memories.screening.rules import HOLD, MARK, Finding
from memories.screening.text import fold
from memories.text import embedding_text

logger = logging.getLogger(__name__)

PASS = "pass"
FIELDS = ("content", "context", "resolution", "tags")


@dataclass(frozen=True)
class Verdict:
    action: str  # HOLD | MARK | PASS
    findings: tuple[Finding, ...] = ()
    score: float | None = None  # the classifier's highest score over the fields
    classifier: str = ""
    learned: float | None = None  # the learned model's probability

    @property
    def held(self) -> bool:
        return self.action == HOLD

    def reasons(self) -> list[dict]:
        """What a curator and the upload's answer read: one entry per finding, strongest first."""
        ordered = sorted(self.findings, key=lambda f: (f.severity != HOLD, f.field, f.start))
        seen: set[tuple] = set()
        out = []
        for finding in ordered:
            key = (finding.rule, finding.field, finding.start, finding.end)
            if key not in seen:
                seen.add(key)
                out.append(finding.reason())
        return out

    def labels(self) -> list[str]:
        return list(dict.fromkeys(f.label for f in sorted(self.findings, key=lambda f: f.severity != HOLD)))


@dataclass(frozen=True)
class Thresholds:
    hold: float
    mark: float
    model_hold: float
    model_mark: float
    # Above this second-head score the text discusses injections rather than carrying one: the
    # main score then holds only from ``hold_discussed``.
    aux: float
    hold_discussed: float


def thresholds() -> Thresholds:
    return Thresholds(hold=settings.ULTRON_SCREEN_HOLD_SCORE, mark=settings.ULTRON_SCREEN_MARK_SCORE,
                      model_hold=settings.ULTRON_SCREEN_MODEL_HOLD, model_mark=settings.ULTRON_SCREEN_MODEL_MARK,
                      aux=settings.ULTRON_SCREEN_AUX_SCORE, hold_discussed=settings.ULTRON_SCREEN_HOLD_DISCUSSED_SCORE)


def allowed_hosts_for(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The built-in documentation and package hosts, the hub's (``ULTRON_SCREEN_ALLOWED_HOSTS``)
    and a space's own."""
    return (*ALLOWED_DEFAULT, *settings.ULTRON_SCREEN_ALLOWED_HOSTS, *(h for h in extra if h))


@functools.lru_cache(maxsize=64)
def _checker(listed: tuple[str, ...]):
    """One allowed-host check per list of hosts (a space's list rarely changes)."""
    return allowed_checker(listed)


@dataclass
class _Item:
    fields: dict[str, str]
    hidden: list[tuple[str, str]] = field(default_factory=list)  # (field, decoded text)
    findings: list[Finding] = field(default_factory=list)
    texts: list[tuple[str, int, int, str]] = field(default_factory=list)  # (field, start, end, text) to classify


def _fields(item: Mapping[str, object]) -> dict[str, str]:
    out = {}
    for name in FIELDS:
        value = item.get(name)
        if name == "tags":
            value = "\n".join(str(t) for t in value) if isinstance(value, (list, tuple)) else ""
        if value:
            out[name] = str(value)
    return out


def _read(item: _Item, allowed, listed: tuple[str, ...]) -> None:
    body: list[str] = []
    for name, raw in item.fields.items():
        item.findings.extend(hidden_findings(name, raw))
        folded = fold(raw)
        item.findings.extend(rule_findings(name, folded, allowed))
        item.findings.extend(link_findings(name, folded, allowed, listed))
        body.append(folded.text)
        # What the field hides, screened as text of its own: tag characters, base64 and hex left
        # by redaction (the upload passes what it decoded before redaction as ``hidden``).
        hidden = [(name, decoded) for _, _, decoded in decoded_payloads(folded.text)]
        spelled = tag_text(raw)
        if spelled.strip():
            hidden.append((name, spelled))
        item.hidden.extend(hidden)
    # The classifier reads the memory once, its fields together (one model call), and each hidden text.
    if body:
        item.texts.append(("content", 0, 0, "\n".join(body)))
    for name, decoded in dict.fromkeys(item.hidden):
        inner = fold(decoded)
        for finding in [*rule_findings(name, inner, allowed), *link_findings(name, inner, allowed, listed)]:
            item.findings.append(Finding(
                "encoded", f"hides an instruction in an encoded or invisible payload ({finding.label})", name, 0, 0,
                "", HOLD))
        item.texts.append((name, 0, 0, inner.text))


def _classify(items: list[_Item], limits: Thresholds) -> list[float | None]:
    classifier = get_classifier()
    flat = [(i, text) for i, item in enumerate(items) for text in item.texts]
    scores = classifier.scores([text for _, (_, _, _, text) in flat]) if flat else []
    best: list[float | None] = [None] * len(items)
    if classifier.name == "off":
        return best
    for (index, (name, start, end, _text)), score in zip(flat, scores, strict=True):
        item = items[index]
        best[index] = max(best[index] or 0.0, score.main)
        discussed = score.aux is not None and score.aux >= limits.aux
        if score.main >= (limits.hold_discussed if discussed else limits.hold):
            severity = HOLD
        elif score.main >= limits.mark:
            severity = MARK
        else:
            continue
        label = f"reads as a prompt injection to the classifier (score {score.main:.2f})"
        item.findings.append(Finding("classifier", label, name, start, end, "", severity))
    return best


def _learned(items: list[_Item], vectors: Sequence[Any] | None, limits: Thresholds,
             allowed: Any = None) -> list[float | None]:
    """The learned model's probability for each memory (``memories.screening.model``), from the
    memory's own embedding; a finding where it is high."""
    if vectors is None or not settings.ULTRON_SCREEN_MODEL:
        return [None] * len(items)
    model = screen_model()
    if model is None:
        return [None] * len(items)
    out: list[float | None] = []
    for item, vector in zip(items, vectors, strict=True):
        text = embedding_text(item.fields.get("content", ""), item.fields.get("context", ""),
                              item.fields.get("resolution", ""))
        probability = model.probability(text.strip(), vector, allowed)
        out.append(probability)
        severity = HOLD if probability >= limits.model_hold else MARK if probability >= limits.model_mark else None
        if severity is not None:
            item.findings.append(Finding("model", f"reads like an attempt to steer the agents that read it "
                                         f"(learned screen, {probability:.2f})", "content", 0, 0, "", severity))
    return out


def memories_screen(items: Sequence[Mapping[str, object]], *, allowed_hosts: Iterable[str] = (),
                    vectors: Sequence[Any] | None = None) -> list[Verdict]:
    """A verdict for each memory (a mapping of ``content``, ``context``, ``resolution``, ``tags``,
    already redacted, and ``hidden``: (field, text) pairs the fields hid, decoded before redaction
    — ``memories.screening.hidden.hidden_texts``), in order; ``allowed_hosts``: the space's own,
    added to the hub's; ``vectors``: each memory's embedding (``embedding_text`` of its fields),
    for the learned model."""
    try:
        listed = allowed_hosts_for(allowed_hosts)
        allowed = _checker(listed)
        limits = thresholds()
        read = [_Item(_fields(item), list(item.get("hidden") or [])) for item in items]  # type: ignore[call-overload]
        for item in read:
            _read(item, allowed, listed)
        best = _classify(read, limits)
        learned = _learned(read, vectors, limits, allowed)
        name = get_classifier().name
    except ClassifierError as exc:
        logger.error("screen: the classifier failed, holding %d memories: %s", len(items), exc)
        return [_failed(f"the injection classifier failed ({exc})") for _ in items]
    except Exception as exc:  # any detector's bug holds the memory: never fail open
        logger.exception("screen: a detector failed, holding %d memories", len(items))
        return [_failed(f"the screen failed ({type(exc).__name__})") for _ in items]
    out = []
    for item, score, probability in zip(read, best, learned, strict=True):
        severities = {f.severity for f in item.findings}
        action = HOLD if HOLD in severities else MARK if MARK in severities else PASS
        out.append(Verdict(action, tuple(item.findings), score, name, probability))
    return out


def memory_screen(item: Mapping[str, object], *, allowed_hosts: Iterable[str] = (), vector: Any = None) -> Verdict:
    return memories_screen([item], allowed_hosts=allowed_hosts, vectors=None if vector is None else [vector])[0]


def _failed(message: str) -> Verdict:
    return Verdict(HOLD, (Finding("error", message, "content", 0, 0, "", HOLD),))


__all__ = ["ALLOWED_DEFAULT", "HOLD", "MARK", "PASS", "Finding", "Verdict", "memories_screen", "memory_screen"]
