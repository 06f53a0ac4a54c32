"""Judgement: how much reusable experience a task segment holds (a score in 0..1, the task
type, and the evidence). With an LLM a rubric prompt decides; without one, evidence in the
segment does: completion, errors met and resolved, explanations, stated rules, rejected work.
Segments scoring at least ``ULTRON_SEGMENT_MIN_SCORE`` go on to extraction."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ingestion.judgements.chains import chains_find, steps_of, undoes
from ingestion.judgements.commands import command_key
from ingestion.judgements.cues import (
    CODING_TOOLS,
    CONFIG_RE,
    DATA_NOTE,
    EXPLAIN_RE,
    REJECTED_RE,
    RESEARCH_TOOLS,
    SUCCESS_RE,
    USER_UNDO_RE,
    is_error,
    render,
)
from ingestion.judgements.lessons import confirms, lessons_find
from ingestion.judgements.segmentation import is_goal
from ingestion.parsing import Message
from memories.models import MemoryType
from memories.providers.llm import InvalidReply, get_llm

TASK_TYPES = ["debugging", "coding", "configuration", "research", "writing", "conversation"]


@dataclass
class SegmentMetrics:
    score: float
    task_type: str
    completed: bool
    errors_met: bool
    errors_resolved: bool
    reusable: bool
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 3), "task_type": self.task_type, "completed": self.completed,
                "errors_met": self.errors_met, "errors_resolved": self.errors_resolved,
                "reusable": self.reusable, "reasons": self.reasons}


def _task_type(messages: list[Message], errors_met: bool) -> str:
    tools = {name.lower() for m in messages for name in m.tool_names}
    text = " ".join(m.text for m in messages if m.role == "user")[:5000]
    if errors_met:
        return "debugging"
    if tools & CODING_TOOLS:
        return "coding"
    if CONFIG_RE.search(text):
        return "configuration"
    if tools and tools <= RESEARCH_TOOLS:
        return "research"
    return "conversation" if not tools else "coding"


# How strongly each kind of evidence says a segment holds reusable experience; combined as a
# noisy-OR (each piece can make the case on its own, more pieces make it surer).
_EVIDENCE = {"chain": 0.7, "explained": 0.8, MemoryType.ERROR: 0.7, MemoryType.CORRECTION: 0.7,
             MemoryType.PREFERENCE: 0.7, MemoryType.PATTERN: 0.7, "completed": 0.35}
# What a lesson of each type says about the segment, in the score's reasons.
_LESSON_EVIDENCE = {MemoryType.ERROR: "a fix the user confirmed", MemoryType.CORRECTION: "the user corrected the agent",
                    MemoryType.PREFERENCE: "the user stated a rule or preference",
                    MemoryType.PATTERN: "a how-to task the user confirmed"}
_REVERT_RE = re.compile(r"^git (?:checkout|restore|revert|reset|stash)$")


def score_offline(messages: list[Message], notes: list[str] | None = None) -> SegmentMetrics:
    """Evidence in the segment, not its length: error chains resolved (and explained), what the
    user taught (corrections, rules, confirmed how-to steps), completion; against it, an error
    the segment ends on, work the user rejected, work reverted."""
    chains = chains_find(messages, notes)
    lessons = lessons_find(messages, notes)
    steps = [s for s in steps_of(messages) if s.result is not None]
    errors = [i for i, m in enumerate(messages) if is_error(m)]
    errors_met = bool(errors)
    # The penalty is for ending on a failing *command* (flow.md#scoring): a file tool's last result does
    # not count.
    last_steps = [s for s in steps if s.is_shell][-3:]
    ends_failing = bool(last_steps) and last_steps[-1].failed
    errors_resolved = errors_met and not ends_failing and (bool(chains) or any(
        (m.is_tool_result and not is_error(m)) or (not m.is_tool_result and SUCCESS_RE.search(m.text))
        for m in messages[errors[-1] + 1 :]))
    # What the agent said aloud: its last words decide whether it reports success (flow.md#scoring).
    assistant_text = [m.text for m in messages if m.role == "assistant" and not m.text.startswith(("[tool call",
                                                                                                 "[thinking]"))]
    user_turns = [m.text for m in messages if is_goal(m)]
    # The first goal turn is the request itself: only a later turn can confirm it (a confirmation that
    # follows no request is refused, lessons.py).
    confirmed = any(confirms(t) for t in user_turns[1:])
    completed = confirmed or bool(assistant_text and SUCCESS_RE.search(assistant_text[-1]) and not ends_failing)
    reusable = bool(chains or lessons) or any(EXPLAIN_RE.search(t) for t in assistant_text)
    found: list[tuple[str, float]] = []
    if chains:
        explained = any(c.explanation for c in chains)
        found.append((f"{len(chains)} error(s) met and fixed{', with the cause explained' if explained else ''}",
                      _EVIDENCE["explained" if explained else "chain"]))
        # Further chains add little and at most two count: the score weighs evidence, not the segment's length.
        found.extend(("another error fixed", 0.3) for _ in chains[1:3])
    for kind, label in _LESSON_EVIDENCE.items():
        if any(lesson.memory_type == kind for lesson in lessons):
            found.append((label, _EVIDENCE[kind]))
    if completed:
        found.append(("the user confirmed the result" if confirmed else "the task was completed", _EVIDENCE["completed"]))
    remaining = 1.0
    for _, weight in found:
        remaining *= 1.0 - weight
    score = 0.1 + 0.9 * (1.0 - remaining)
    reasons = [label for label, _ in found]
    if ends_failing:
        score *= 0.75
        reasons.append("the segment ends on a failing command")
    rejected = [i for i, m in enumerate(messages) if REJECTED_RE.search(m.text)]
    if rejected and rejected[-1] >= len(messages) * 0.75 and not completed:  # the work stopped there
        score *= 0.6
        reasons.append("the user interrupted or rejected the work")
    # An undo that names only what no fix changed takes back an extra, not the lesson: it is noted and
    # costs nothing (flow.md#scoring, "revert the default_server bit, it wasn't asked for").
    undone = [t for t in user_turns[1:] if USER_UNDO_RE.search(t)]
    undone += [s.target for s in steps if s.is_shell and _REVERT_RE.match(command_key(s.target))]
    if any(undoes(t, chains) for t in undone):
        score *= 0.75
        reasons.append("work was reverted")
    elif undone:
        reasons.append("a part of the work was undone that no fix depends on")
    return SegmentMetrics(
        score=max(0.0, min(1.0, score)), task_type=_task_type(messages, errors_met), completed=completed,
        errors_met=errors_met, errors_resolved=errors_resolved, reusable=reusable, reasons=reasons,
    )


def _validate_metrics(data: Any) -> SegmentMetrics:
    if not isinstance(data, dict):
        raise InvalidReply("metrics reply is not an object")
    score = data.get("score")
    # bool is an int in Python: without the first test a reply of `true` would pass as a score of 1.
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= float(score) <= 1:
        raise InvalidReply("score must be a number between 0 and 1")
    task_type = str(data.get("task_type", "")).strip().lower()
    # Only the score and the flags make a reply invalid (flow.md#scoring): an unknown task type costs no
    # attempt, it becomes "conversation".
    if task_type not in TASK_TYPES:
        task_type = "conversation"
    flags = {}
    for key in ("completed", "errors_met", "errors_resolved", "reusable"):
        if not isinstance(data.get(key, False), bool):
            raise InvalidReply(f"{key} must be a boolean")
        flags[key] = bool(data.get(key, False))
    reasons = data.get("reasons", [])
    if isinstance(reasons, str):
        reasons = [reasons]
    if not isinstance(reasons, list):
        raise InvalidReply("reasons must be a list")
    return SegmentMetrics(float(score), task_type, reasons=[str(r)[:300] for r in reasons][:10], **flags)


SCORE_PROMPT = (
    "You grade one task segment of an AI agent's session for how much reusable experience it holds. "
    "Consider: was the task completed; were errors met and resolved; is there a reusable insight (a "
    "cause and fix, a correction, a rule or preference)? Reply with JSON only: "
    '{"score": <0..1>, "task_type": "<one of: ' + ", ".join(TASK_TYPES) + '>", "completed": <bool>, '
    '"errors_met": <bool>, "errors_resolved": <bool>, "reusable": <bool>, "reasons": ["..."]}'
    + DATA_NOTE
)


def score_segment(messages: list[Message], notes: list[str] | None = None) -> SegmentMetrics:
    """LLM rubric when configured (raises LLMError on failure), else the offline scorer; what the
    offline scorer saw and refused goes to ``notes``."""
    llm = get_llm()
    # No offline fallback once an LLM is configured: its failure reaches the pipeline, which retries the
    # segment later (flow.md, "Without an LLM").
    if not llm.available:
        return score_offline(messages, notes)
    return llm.ask_json(system=SCORE_PROMPT, user=render(messages), validate=_validate_metrics,
                        max_tokens=400, purpose="score")
