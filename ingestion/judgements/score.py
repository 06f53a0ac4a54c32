"""Judgement: how much reusable experience a task segment holds (a score in 0..1, the task
type, and the evidence). With an LLM a rubric prompt decides; without one, evidence in the
segment does: completion, errors met and resolved, explanations, stated rules, rejected work.
Segments scoring at least ``ULTRON_SEGMENT_MIN_SCORE`` go on to extraction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingestion.judgements.cues import (
    CODING_TOOLS,
    CONFIG_RE,
    CORRECTION_RE,
    EXPLAIN_RE,
    PREFERENCE_RE,
    REJECTED_RE,
    RESEARCH_TOOLS,
    SUCCESS_RE,
    is_error,
    render,
)
from ingestion.parsing import Message
from ingestion.segmentation import is_goal
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


def score_offline(messages: list[Message]) -> SegmentMetrics:
    errors = [i for i, m in enumerate(messages) if is_error(m)]
    errors_met = bool(errors)
    tail = messages[errors[-1] + 1 :] if errors else []
    errors_resolved = errors_met and any(
        (m.is_tool_result and not is_error(m)) or (not m.is_tool_result and SUCCESS_RE.search(m.text))
        for m in tail
    ) and not (tail and is_error(tail[-1]))
    assistant_text = [m.text for m in messages if m.role == "assistant" and not m.text.startswith("[tool call")]
    last_assistant = assistant_text[-1] if assistant_text else ""
    user_turns = [m.text for m in messages if is_goal(m)]
    completed = bool(SUCCESS_RE.search(last_assistant) or (user_turns[1:] and SUCCESS_RE.search(user_turns[-1])))
    if not completed and not errors_met and last_assistant and messages[-1].role == "assistant":
        completed = any(m.tool_names for m in messages)
    reusable = any(EXPLAIN_RE.search(t) for t in assistant_text) or any(
        PREFERENCE_RE.search(t) or CORRECTION_RE.search(t) for t in user_turns
    )
    interrupted = any(REJECTED_RE.search(m.text) for m in messages)
    reasons = []
    score = 0.2
    if completed:
        score += 0.25
        reasons.append("the task was completed")
    if errors_met and errors_resolved:
        score += 0.25
        reasons.append("errors were met and resolved")
    elif errors_met:
        score -= 0.2
        reasons.append("errors were met and not resolved")
    elif completed:
        score += 0.1
    if reusable:
        score += 0.2
        reasons.append("the conversation explains a cause, a fix or a rule")
    if any(PREFERENCE_RE.search(t) or CORRECTION_RE.search(t) for t in user_turns):
        score += 0.1
        reasons.append("the user stated a preference or a correction")
    if interrupted and not completed:
        score -= 0.15
        reasons.append("the user interrupted or rejected the work")
    return SegmentMetrics(
        score=max(0.0, min(1.0, score)), task_type=_task_type(messages, errors_met), completed=completed,
        errors_met=errors_met, errors_resolved=errors_resolved, reusable=reusable, reasons=reasons,
    )


def _validate_metrics(data: Any) -> SegmentMetrics:
    if not isinstance(data, dict):
        raise InvalidReply("metrics reply is not an object")
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= float(score) <= 1:
        raise InvalidReply("score must be a number between 0 and 1")
    task_type = str(data.get("task_type", "")).strip().lower()
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
)


def score_segment(messages: list[Message]) -> SegmentMetrics:
    """LLM rubric when configured (raises LLMError on failure), else the offline scorer."""
    llm = get_llm()
    if not llm.available:
        return score_offline(messages)
    return llm.ask_json(system=SCORE_PROMPT, user=render(messages), validate=_validate_metrics,
                        max_tokens=400, purpose="score")
