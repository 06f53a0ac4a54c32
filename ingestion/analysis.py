"""Scoring segments and extracting memories from them (and from plain text), SPEC §9.

Each judgement has an LLM path and a deterministic offline path. Everything passed in has
already been redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from ingestion.parsing import Message
from ingestion.segmentation import is_goal
from memories.providers.llm import InvalidReply, get_llm
from memories.text import estimate_tokens, normalise_space, truncate_tokens

TASK_TYPES = ["debugging", "coding", "configuration", "research", "writing", "conversation"]

_ERROR_RE = re.compile(
    r"Traceback \(most recent call last\)|^\W*\w*(?:Error|Exception)\b[:(]|\berror(?:\[\w+\])?:|\bFAILED\b"
    r"|[Ee]xit (?:code|status) [1-9]|command not found|No such file or directory|Permission denied|^panic:"
    r"|\*\* \(\w+Error\)|报错|错误：|失败：|异常：",
    re.MULTILINE,
)
_REJECTED_RE = re.compile(r"user doesn't want to proceed|tool use was rejected|Request interrupted", re.I)
_SUCCESS_RE = re.compile(
    r"\b(?:fixed|works now|working now|now works|passes|passed|succeeded|successfully|resolved|all tests pass"
    r"|compiles|no errors|done|it works|that worked|perfect|thanks|thank you)\b|✓|✅|修复了|成功|解决了|好了",
    re.I,
)
_EXPLAIN_RE = re.compile(
    r"\b(?:because|the (?:issue|problem|cause|fix|reason) (?:was|is)|root cause|you need to|make sure|instead of"
    r"|the solution|turns out|caused by|this happens when|to fix)\b|原因|因为|解决方法|需要",
    re.I,
)
_CORRECTION_RE = re.compile(
    r"^\W*(?:no[,.!]|nope|actually|that'?s (?:wrong|not|incorrect)|this is wrong|wrong[,.]|not (?:that|what)"
    r"|you should(?:n'?t| not)?|don'?t use|do not use|instead,? use|use \S+ instead|不对|不是|错了|应该)",
    re.I,
)
_PREFERENCE_RE = re.compile(
    r"\b(?:always|never|i prefer|i'd prefer|we prefer|please (?:use|don'?t|do not|always|never)|from now on"
    r"|remember to|make sure to|don'?t ever|our convention|we use)\b|总是|永远不要|不要用|记住|以后都|请使用|偏好",
    re.I,
)
_CODING_TOOLS = {"edit", "write", "multiedit", "notebookedit", "apply_patch", "str_replace_editor", "create_file"}
_RESEARCH_TOOLS = {"read", "grep", "glob", "websearch", "webfetch", "ls", "search"}
_CONFIG_RE = re.compile(r"\b(?:install|config|configure|docker|deploy|kubectl|helm|nginx|systemctl|env|setup)\b", re.I)


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


@dataclass
class Extracted:
    content: str
    context: str = ""
    resolution: str = ""
    confidence: float = 0.5
    tags: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"content": self.content, "context": self.context, "resolution": self.resolution,
                "confidence": self.confidence, "tags": self.tags}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extracted:
        return cls(data["content"], data.get("context", ""), data.get("resolution", ""),
                   float(data.get("confidence", 0.5)), list(data.get("tags", [])))


def _is_error(message: Message) -> bool:
    if _REJECTED_RE.search(message.text):
        return False
    if message.is_error:
        return True
    return message.is_tool_result and bool(_ERROR_RE.search(message.text[:2000]))


def render(messages: list[Message], budget_tokens: int | None = None) -> str:
    """The segment as the LLM reads it: numbered turns, each clipped, the whole within budget."""
    budget = budget_tokens or (settings.ULTRON_LLM_MAX_INPUT_TOKENS - settings.ULTRON_LLM_PROMPT_RESERVE_TOKENS - 800)
    per_message = max(60, min(600, budget // max(1, len(messages))))
    lines = [f"[{i}] {m.role.upper()}: {truncate_tokens(m.text, per_message)}" for i, m in enumerate(messages)]
    text = "\n".join(lines)
    return truncate_tokens(text, budget) if estimate_tokens(text) > budget else text


# --- metrics -------------------------------------------------------------------------------


def _task_type(messages: list[Message], errors_met: bool) -> str:
    tools = {name.lower() for m in messages for name in m.tool_names}
    text = " ".join(m.text for m in messages if m.role == "user")[:5000]
    if errors_met:
        return "debugging"
    if tools & _CODING_TOOLS:
        return "coding"
    if _CONFIG_RE.search(text):
        return "configuration"
    if tools and tools <= _RESEARCH_TOOLS:
        return "research"
    return "conversation" if not tools else "coding"


def score_offline(messages: list[Message]) -> SegmentMetrics:
    errors = [i for i, m in enumerate(messages) if _is_error(m)]
    errors_met = bool(errors)
    tail = messages[errors[-1] + 1 :] if errors else []
    errors_resolved = errors_met and any(
        (m.is_tool_result and not _is_error(m)) or (not m.is_tool_result and _SUCCESS_RE.search(m.text))
        for m in tail
    ) and not (tail and _is_error(tail[-1]))
    assistant_text = [m.text for m in messages if m.role == "assistant" and not m.text.startswith("[tool call")]
    last_assistant = assistant_text[-1] if assistant_text else ""
    user_turns = [m.text for m in messages if is_goal(m)]
    completed = bool(_SUCCESS_RE.search(last_assistant) or (user_turns[1:] and _SUCCESS_RE.search(user_turns[-1])))
    if not completed and not errors_met and last_assistant and messages[-1].role == "assistant":
        completed = any(m.tool_names for m in messages)
    reusable = any(_EXPLAIN_RE.search(t) for t in assistant_text) or any(
        _PREFERENCE_RE.search(t) or _CORRECTION_RE.search(t) for t in user_turns
    )
    interrupted = any(_REJECTED_RE.search(m.text) for m in messages)
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
    if any(_PREFERENCE_RE.search(t) or _CORRECTION_RE.search(t) for t in user_turns):
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


METRICS_PROMPT = (
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
    return llm.ask_json(system=METRICS_PROMPT, user=render(messages), validate=_validate_metrics,
                        max_tokens=400, purpose="metrics")


# --- extraction ----------------------------------------------------------------------------


def _error_line(text: str) -> str:
    for line in text.splitlines():
        if _ERROR_RE.search(line) and len(line.strip()) > 8:
            return normalise_space(line.replace("[tool result ERROR]", "").replace("[tool result]", ""))[:300]
    return normalise_space(text.replace("[tool result ERROR]", ""))[:300]


def _command_before(messages: list[Message], index: int) -> str:
    for message in reversed(messages[:index]):
        if message.role == "assistant" and message.text.startswith("[tool call"):
            match = re.search(r'"command":\s*"((?:[^"\\]|\\.){1,200})"', message.text)
            return match.group(1) if match else ""
    return ""


def extract_offline(messages: list[Message], *, topic: str, task_type: str) -> list[Extracted]:
    tags = ["trajectory", f"type:{task_type}"]
    found: list[Extracted] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if not _is_error(message):
            continue
        error = _error_line(message.text)
        if error in seen:
            continue
        # The fix: the first explanation the assistant gives within the next turns, else the
        # first report of success.
        window = [m for m in messages[index + 1 : index + 16]
                  if m.role == "assistant" and not m.text.startswith(("[tool call", "[thinking]"))]
        chosen = next((m for m in window if _EXPLAIN_RE.search(m.text)), None) or next(
            (m for m in window if _SUCCESS_RE.search(m.text)), None)
        resolution = truncate_tokens(chosen.text, 150) if chosen else ""
        if not resolution:
            continue  # an error with no fix in sight teaches nothing reusable
        seen.add(error)
        command = _command_before(messages, index)
        content = f"`{command}` failed: {error}" if command else error
        found.append(Extracted(content, topic, resolution, 0.75 if _EXPLAIN_RE.search(resolution) else 0.6, tags))
        if len(found) >= 3:
            break
    for message in messages:
        if not is_goal(message):
            continue
        text = truncate_tokens(message.text, 120)
        if _CORRECTION_RE.search(message.text):
            found.append(Extracted(text, topic, "", 0.55, tags))
        elif _PREFERENCE_RE.search(message.text):
            found.append(Extracted(text, topic, "", 0.6, tags))
    return found[:6]


_LABEL_RE = re.compile(
    r"^\s*(?:\d+[.)]\s*|[-*•]\s*)?(?P<label>error|problem|symptom|issue|cause|root cause|reason|fix|solution"
    r"|resolution|workaround|resolved by|context|environment|错误|问题|现象|原因|修复|解决|解决方法|办法|环境)\s*[:：]\s*(?P<text>.+)$",
    re.IGNORECASE,
)
_CAUSE = {"cause", "root cause", "reason", "context", "environment", "原因", "环境"}
_FIX = {"fix", "solution", "resolution", "workaround", "resolved by", "修复", "解决", "解决方法", "办法"}


def extract_text_offline(text: str) -> list[Extracted]:
    """Plain text: labelled notes (Error:/Cause:/Fix:) become one memory; stated preferences
    and corrections one each; otherwise the text itself, if short enough to be one memory."""
    problem: list[str] = []
    cause: list[str] = []
    fix: list[str] = []
    loose: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LABEL_RE.match(line)
        if match:
            label = match.group("label").lower()
            target = cause if label in _CAUSE else fix if label in _FIX else problem
            target.append(match.group("text").strip())
        else:
            loose.append(re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line).strip())
    tags = ["text"]
    if fix and (problem or loose):
        heading = [line for line in loose if not line.endswith(":")][:2]
        content = "; ".join(heading + problem)
        return [Extracted(content, "; ".join(cause), "; ".join(fix), 0.8, tags)]
    sentences = [s.strip() for s in re.split(r"(?<=[.!?。！？])\s+|\n+", text) if s.strip()]
    rules = [s for s in sentences if _PREFERENCE_RE.search(s) or _CORRECTION_RE.search(s)]
    if rules:
        return [Extracted(truncate_tokens(s, 120), "", "", 0.6, tags) for s in rules[:10]]
    if estimate_tokens(text) <= 400:
        return [Extracted(normalise_space(text), "", "", 0.5, tags)]
    return []


def _validate_extracted(data: Any) -> list[Extracted]:
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise InvalidReply("no memories list")
    out = []
    for item in data["memories"]:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or not item["content"].strip():
            raise InvalidReply("a memory without content")
        confidence = item.get("confidence", 0.5)
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            raise InvalidReply("confidence must be a number between 0 and 1")
        tags = item.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidReply("tags must be a list of strings")
        out.append(Extracted(
            item["content"].strip(), str(item.get("context") or "").strip(), str(item.get("resolution") or "").strip(),
            float(confidence), tags[:8],
        ))
    return out


EXTRACT_PROMPT = (
    "Extract reusable experience for other AI agents: errors and their fixes, security findings, "
    "corrections of wrong beliefs, patterns that work, stated preferences, shareable everyday facts. "
    "Nothing private, nothing one-off, nothing already obvious. Write each memory in the language of "
    'the source. Reply with JSON only: {"memories": [{"content": "the problem or fact", "context": '
    '"where it happened", "resolution": "the fix or how to apply it", "confidence": <0..1>, '
    '"tags": ["short", "tags"]}]} — an empty list when there is nothing worth keeping.'
)
MIN_CONFIDENCE = 0.5


def extract(messages: list[Message] | None, *, text: str | None = None, topic: str = "",
            task_type: str = "conversation") -> list[Extracted]:
    """Memories from a segment (``messages``) or from plain ``text``. Raises LLMError when the
    configured LLM keeps failing; the caller records the failure and retries later."""
    llm = get_llm()
    if not llm.available:
        if messages is not None:
            return extract_offline(messages, topic=topic, task_type=task_type)
        return extract_text_offline(text or "")
    budget = settings.ULTRON_LLM_MAX_INPUT_TOKENS - settings.ULTRON_LLM_PROMPT_RESERVE_TOKENS - 800
    if messages is not None:
        sources = [render(messages, budget)]
    else:
        sources = _text_windows(text or "", budget)
    found: list[Extracted] = []
    for source in sources:
        header = f"Task: {topic}\n\n" if topic else ""
        found.extend(llm.ask_json(system=EXTRACT_PROMPT, user=header + source, validate=_validate_extracted,
                                  max_tokens=2000, purpose="extract"))
    tags = ["trajectory", f"type:{task_type}"] if messages is not None else ["text"]
    for item in found:
        item.tags = list(dict.fromkeys(tags + item.tags))
    return [item for item in found if item.confidence >= MIN_CONFIDENCE]


def _text_windows(text: str, budget: int) -> list[str]:
    """Split long text at paragraph boundaries into pieces within ``budget`` tokens."""
    windows: list[str] = []
    current: list[str] = []
    used = 0
    for paragraph in re.split(r"\n\s*\n", text):
        cost = estimate_tokens(paragraph)
        if cost > budget:
            paragraph = truncate_tokens(paragraph, budget)
            cost = budget
        if used + cost > budget and current:
            windows.append("\n\n".join(current))
            current, used = [], 0
        current.append(paragraph)
        used += cost
    if current:
        windows.append("\n\n".join(current))
    return windows
