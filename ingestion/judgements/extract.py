"""Judgement: the memories a segment (or a plain text) holds — an error and its fix, a
correction, a rule or preference. With an LLM a prompt extracts them; without one, rules do:
failing tool results followed by the explanation or success that resolved them, labelled
notes (Error:/Cause:/Fix:), stated preferences."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from ingestion.judgements.chains import (
    Chain,
    chain_content,
    chain_context,
    chain_resolution,
    chains_find,
    error_line,
    note,
    steps_of,
    undoes,
)
from ingestion.judgements.cues import (
    CORRECTION_RE,
    DATA_NOTE,
    EXPLAIN_RE,
    SUCCESS_RE,
    USER_UNDO_RE,
    fence,
    is_error,
    render,
    states_rule,
)
from ingestion.judgements.lessons import lessons_find
from ingestion.judgements.segmentation import is_goal
from ingestion.parsing import Message
from memories.models import MemoryType
from memories.providers.llm import InvalidReply, LLMError, get_llm
from memories.text import estimate_tokens, normalise_space, truncate_tokens

logger = logging.getLogger("ultron.ingestion")


@dataclass
class Extracted:
    content: str
    context: str = ""
    resolution: str = ""
    confidence: float = 0.5
    tags: list[str] = field(default_factory=list)
    memory_type: str = ""  # known from how it was found (an error chain, a stated rule); else classified

    def as_dict(self) -> dict[str, Any]:
        return {"content": self.content, "context": self.context, "resolution": self.resolution,
                "confidence": self.confidence, "tags": self.tags, "memory_type": self.memory_type}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extracted:
        return cls(data["content"], data.get("context", ""), data.get("resolution", ""),
                   float(data.get("confidence", 0.5)), list(data.get("tags", [])), data.get("memory_type", ""))


def _errors_without_calls(messages: list[Message], tags: list[str], topic: str,
                          notes: list[str] | None = None) -> list[Extracted]:
    """Transcripts that keep tool results but not the calls: an error, then the agent's
    explanation (or report of success) within the next turns."""
    found: list[Extracted] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if not is_error(message):
            continue
        error = error_line(message.text) or normalise_space(message.text.replace("[tool result ERROR]", ""))[:300]
        window = [m for m in messages[index + 1 : index + 16]
                  if m.role == "assistant" and not m.text.startswith(("[tool call", "[thinking]"))]
        # The agent's explanation of the cause is preferred to a bare success report: it is what another agent
        # can reuse (0.75 confidence against 0.6 below).
        chosen = next((m for m in window if EXPLAIN_RE.search(m.text)), None) or next(
            (m for m in window if SUCCESS_RE.search(m.text)), None)
        # Each distinct error once (flow.md#offline-extraction): a repeat of a paired error gives no second
        # memory and no note.
        if error in seen or chosen is None:
            if error not in seen:
                note(notes, f"the error at message {index} ({truncate_tokens(error, 20)}) has no explanation or "
                            "success report after it")
            continue  # an error with no fix in sight teaches nothing reusable
        seen.add(error)
        resolution = truncate_tokens(chosen.text, 150)
        confidence = 0.75 if EXPLAIN_RE.search(resolution) else 0.6
        found.append(Extracted(error, topic, resolution, confidence, tags, MemoryType.ERROR))
    return found


MAX_CHAINS = 8


def _taken_back(messages: list[Message], chain: Chain, notes: list[str] | None) -> bool:
    """Whether the user, after the fix passed, asked for it to be undone ("That only makes Composer
    pretend we're on 8.1. Please revert the platform override."): a fix the user rejects is no
    lesson (their correction, if they gave one, is)."""
    for message in messages[chain.passed.call + 1 :]:
        if is_goal(message) and USER_UNDO_RE.search(message.text) and undoes(message.text, [chain]):
            note(notes, f"the user had the fix of `{chain.command}` undone")
            return True
    return False


def extract_offline(messages: list[Message], *, topic: str, task_type: str,
                    notes: list[str] | None = None) -> list[Extracted]:
    """Error chains (docs/flow.md#offline-extraction), then what the user taught: confirmed
    fixes and how-to steps, corrections, stated rules. Why a candidate was refused goes to
    ``notes``."""
    tags = ["trajectory", f"type:{task_type}"]
    # Chains need calls to pair results with; a transcript that kept only the results falls back to
    # pairing each error with what the agent said next.
    if steps_of(messages):
        chains = [chain for chain in chains_find(messages, notes) if not _taken_back(messages, chain, notes)]
        # Fixes the user had undone are dropped before the cap, so they do not take a chain's place.
        chains = chains[:MAX_CHAINS]
        found = [Extracted(chain_content(chain), chain_context(chain), chain_resolution(chain),
                           0.75 if chain.explanation else 0.65, tags, MemoryType.ERROR) for chain in chains]
    else:
        found = _errors_without_calls(messages, tags, topic, notes)[:MAX_CHAINS]
    for lesson in lessons_find(messages, notes):
        found.append(Extracted(lesson.content, lesson.context or topic, lesson.resolution, lesson.confidence, tags,
                               lesson.memory_type))
    # flow.md#offline-extraction: at most 12 items, of which at most 8 are chains, so the user's lessons
    # (listed after the chains) keep at least four places.
    return found[: MAX_CHAINS + 4]


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
    # A fix alone is no memory: it needs a line saying what it fixes (flow.md: "at least one fix line and
    # one other line").
    if fix and (problem or loose):
        heading = [line for line in loose if not line.endswith(":")][:2]
        content = "; ".join(heading + problem)
        return [Extracted(content, "; ".join(cause), "; ".join(fix), 0.8, tags)]
    sentences = [s.strip() for s in re.split(r"(?<=[.!?。！？])\s+|\n+", text) if s.strip()]
    rules = [s for s in sentences if states_rule(s) or CORRECTION_RE.search(s)]
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
    + DATA_NOTE
)
MIN_CONFIDENCE = 0.5


def extract(messages: list[Message] | None, *, text: str | None = None, topic: str = "",
            task_type: str = "conversation", notes: list[str] | None = None) -> list[Extracted]:
    """Memories from a segment (``messages``) or from plain ``text``; why candidates were refused
    goes to ``notes``. Raises LLMError when the configured LLM keeps failing; the caller records
    the failure and retries later."""
    llm = get_llm()
    if not llm.available:
        if messages is not None:
            return extract_offline(messages, topic=topic, task_type=task_type, notes=notes)
        return extract_text_offline(text or "")
    # The same budget as scoring's (cues.render): flow.md#extraction renders the segment as for scoring.
    budget = settings.ULTRON_LLM_MAX_INPUT_TOKENS - settings.ULTRON_LLM_PROMPT_RESERVE_TOKENS - 800
    if messages is not None:
        sources = [render(messages, budget)]
    else:
        sources = [fence(window) for window in _text_windows(text or "", budget)]
    found: list[Extracted] = []
    for source in sources:
        header = f"Task: {topic}\n\n" if topic else ""
        replies = llm.ask_json(system=EXTRACT_PROMPT, user=header + source, validate=_validate_extracted,
                               max_tokens=2000, purpose="extract")
        if not replies:
            note(notes, "the LLM found nothing worth keeping")
        for item in replies:
            # The topic header counts as source too: it is text the model was shown, taken from the session.
            if grounded(item, header + source):
                found.append(item)
            else:
                note(notes, f"the LLM's \"{truncate_tokens(item.content, 20)}\" is not in the session (ungrounded)")
    tags = ["trajectory", f"type:{task_type}"] if messages is not None else ["text"]
    # Items below the bar are kept until here so that each one leaves a note saying why it was dropped.
    for item in found:
        item.tags = list(dict.fromkeys(tags + item.tags))
        if item.confidence < MIN_CONFIDENCE:
            note(notes, f"the LLM's \"{truncate_tokens(item.content, 20)}\" has confidence {item.confidence:.2f}, "
                        f"below {MIN_CONFIDENCE}")
    return [item for item in found if item.confidence >= MIN_CONFIDENCE]


def text_extract(text: str) -> tuple[list[Extracted], str]:
    """Memories from plain text while its sender waits, and the extractor that found them (the
    LLM's name, ``offline``, or ``offline (LLM failed)``). A failing LLM falls back to the rules
    here, not later: the caller is waiting, and the rules extract what they can rather than lose
    the text (a segment, by contrast, is retried: ``extract`` raises)."""
    extractor = get_llm().name
    try:
        return extract(None, text=text), extractor
    except LLMError as exc:
        logger.warning("text extraction: the LLM failed, using the offline extractor: %s", exc)
        return extract_text_offline(text), "offline (LLM failed)"


# Each CJK character is a word of its own: Chinese has no spaces to split words on.
_WORD_RE = re.compile(r"[a-z0-9_][a-z0-9_.+-]{2,}|[\u3400-\u9fff]")
GROUNDED_SHARE = 0.5


def _words(text: str) -> set[str]:
    # Five-character stems: "failing" and "failed", "configure" and "configuration" meet.
    return {word[:5] for word in _WORD_RE.findall(text.lower())}


def grounded(item: Extracted, source: str) -> bool:
    """Whether the model's memory comes from the session it was shown: at least half of the
    words of its problem and fix occur there. A model writes its memories from what it read
    (the error, the command, the setting), so a paraphrase keeps most of those words; text it
    was talked into inventing, or knowledge from elsewhere, does not."""
    words = _words(f"{item.content} {item.resolution}")
    if not words:
        return False
    return len(words & _words(source)) >= GROUNDED_SHARE * len(words)


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
