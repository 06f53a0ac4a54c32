"""Splitting a session into independent task segments (docs/flow.md#segmentation).

A new segment starts where the user turns to a clearly different goal; follow-ups stay in the
segment. With an LLM the model proposes the split for each window of the session that fits its
input budget, and the answer is checked (contiguous, covering, in bounds) before it is used.
Without one, a deterministic segmenter looks at the user's own turns: explicit cues ("next
task", "另外") start a segment, follow-up cues ("that didn't work", "continue") never do, and
otherwise a turn whose embedding is far from the goals of the current segment starts one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

from ingestion.judgements.chains import Step, steps_of
from ingestion.judgements.commands import command_key, short_command
from ingestion.judgements.cues import ACKNOWLEDGED_RE, DATA_NOTE, confirms, fence, named_things
from ingestion.parsing import Message
from memories.providers.embeddings import get_embedder
from memories.providers.llm import InvalidReply, LLMError, get_llm
from memories.text import estimate_tokens, first_sentence, truncate_tokens
from memories.thresholds import model_thresholds

logger = logging.getLogger("ultron.ingestion")

NEW_GOAL_CUES = re.compile(
    r"^\W*(?:new task|next task|next,|next up|now,? (?:let'?s|can you|could you|please)|another (?:thing|task|question)"
    r"|switching to|unrelated|different (?:question|topic|task)|moving on|ok(?:ay)?,? now|separately"
    r"|另外|换个|新任务|下一个|接下来|还有一个问题)",
    re.IGNORECASE,
)
FOLLOW_UP_CUES = re.compile(
    r"^\W*(?:(?:hmm+|um+|uh+|well|wait|oh|ah|so)\W+)?(?:yes|yeah|yep|no|nope|ok|okay|sure|thanks|thank you|great|perfect|continue|go on|go ahead|proceed"
    r"|try again|retry|still|same (?:error|problem|issue)|it (?:still|didn'?t|doesn'?t|does not|did not)|that (?:didn'?t|doesn'?t|worked|works)"
    r"|what about|why|how about|and |also|but |now it|doesn'?t work|not working|works|fixed|好的|继续|还是|不行|可以)\b",
    re.IGNORECASE,
)
# The user reporting back on what the agent told them to do: "I set pool_size=5 and reran it",
# "we switched to the slim image", "ok, I've added the header". The verbs are doing verbs: "I wanted
# to ask…" or "I need…" open something new.
REPORT_BACK = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|alright|right|done|yes|yep)\W+)?(?:i|we)(?:'ve|\s+have|\s+just|\s+now|\s+then|\s+also)*"
    r"\s+(?:(?!(?:wanted|needed|wondered|hoped|planned|intended|liked|loved|noticed|received|heard|learned)\b)"
    r"[a-z]{2,}ed|set|ran|re-?ran|put|made|did|tried|built|rebuilt|wrote|rewrote|cut)\b"
    r"|^\W*(?:did|done|tried) (?:that|it|this|so)\b|^\W*(?:after|with) (?:that|this|the|your) (?:change|fix|edit)"
    # without the subject: "Added cache: 'pip'…", "Removed my hook…", "Deployed with pool_size=3."
    r"|^\W*(?!(?:based|related|supposed|used|needed|wanted|interested|asked|unrelated)\b)[a-z]{3,}ed\s+(?!to\b)\S"
    r"|^\W*(?:did|ran|re-?ran|set|put|made|tried|built|rebuilt)\s+(?:the|a|an|it|that|this|my|our|your|both|steps?|\S*[_=./:]\S*)\b",
    re.IGNORECASE,
)
def answers_agent(text: str, previous_reply: str) -> bool:
    """Whether a user turn answers the agent's last reply rather than opening a new goal: it
    reports doing what the reply said, or it names a thing (a setting, a file, a flag) the reply
    named."""
    if REPORT_BACK.match(text):
        return True
    return bool(previous_reply) and bool(named_things(text) & named_things(previous_reply))


# User-role rows that state no goal: an interruption marker, slash-command and system-reminder rows,
# background-job notices and the "session continued" summary (flow.md#segmentation).
NOISE = re.compile(
    r"^\[Request interrupted|^<(?:command-|local-command|system-reminder|task-notification)"
    r"|^This session is being continued from a previous conversation",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    start: int  # message index, inclusive
    end: int  # exclusive
    topic: str


def fingerprint(messages: list[Message]) -> str:
    """SHA-256 of the canonical segment messages, first 16 hex characters."""
    canonical = json.dumps([[m.role, m.text] for m in messages], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def is_goal(message: Message) -> bool:
    return message.role == "user" and not message.is_tool_result and not NOISE.match(message.text)


def topic_of(messages: list[Message]) -> str:
    for message in messages:
        if is_goal(message):
            return truncate_tokens(first_sentence(message.text), 24)[:200]
    return truncate_tokens(first_sentence(messages[0].text), 24)[:200] if messages else ""


# Work that closes a task: a commit or push, an issue closed in a tracker, a pull request opened.
_CLOSING_KEY = re.compile(r"^(?:git (?:commit|push)|\S+ (?:close|done|complete|resolve|finish))$")
_CLOSING_REQUEST = re.compile(r"^(?:gh|glab) (?:pr|mr|issue) (?:create|merge|close)\b")  # ``gh issue view`` only looks
MIN_AGENT_SEGMENT = 6  # messages on each side of a cut the agent's own work makes


def _closing(step: Step) -> bool:
    return step.is_shell and bool(_CLOSING_KEY.match(command_key(step.target))
                                  or _CLOSING_REQUEST.match(short_command(step.target)))


_PLAN_TOOL = re.compile(r"todo|plan", re.I)  # TodoWrite (Claude Code), update_plan (Codex), write_todos (Gemini CLI)
_DONE_ITEM = re.compile(r'"status"\s*:\s*"(?:completed|complete|done)"', re.I)
_OPEN_ITEM = re.compile(r'"status"\s*:\s*"(?:in_progress|pending|in-progress|todo)"', re.I)


def _plan_progress(messages: list[Message], steps: list[Step]) -> set[int]:
    """Calls of the agent's to-do list tool that tick one more item off while others remain:
    one task done, the next one begins."""
    ticked: set[int] = set()
    done_before = 0
    for step in steps:
        if not _PLAN_TOOL.search(step.name) or step.is_shell:
            continue
        text = messages[step.call].text
        done = len(_DONE_ITEM.findall(text))
        if done > done_before and _OPEN_ITEM.search(text) and step.result is not None and not step.failed:
            ticked.add(step.call)
        done_before = max(done_before, done)
    return ticked


# The agent announcing the next numbered piece of work: "Now let me implement Task 2", "Next, #42:",
# "Moving on to step 3", "Back to the list: #43".
_NEXT_TASK = re.compile(
    r"\b(?:now|next)\b[^.\n]{0,30}?\b(?:task|step|item|issue|bead|subtask|phase|part|ticket)\s+#?\d+\b"
    r"|\b(?:next|moving on to|on to|back to the list)\b[:,]?\s+#\d+\b",
    re.I,
)


_BACKGROUND_DONE = re.compile(r"^\s*<task-notification>")  # Claude Code: a background command finished


def said_aloud(message: Message) -> bool:
    """What the agent says to the user: not a tool call, not its thinking."""
    return message.role == "assistant" and not message.text.startswith(("[tool call", "[thinking]"))


def agent_boundaries(messages: list[Message]) -> list[int]:
    """Where the agent, working on its own, finishes one task and turns to the next: after a
    commit, a push, an issue closed or a pull request opened (and whatever closing steps follow
    it), or an item ticked off its to-do list, at the first message that starts other work; where
    it announces the next numbered task; where a background job reports back after its wrap-up."""
    steps = steps_of(messages)
    ticked = _plan_progress(messages, steps)
    closing_calls = {s.call for s in steps if _closing(s) and s.result is not None and not s.failed} | ticked
    # After a commit, its push (a failed first push too) and status checks belong to it.
    closing_moves = {s.call for s in steps if _closing(s)} | ticked
    quiet_calls = (closing_moves - ticked) | {s.call for s in steps if s.is_shell and _quiet(s.target)}
    cuts: list[int] = []
    index = 0
    while index < len(messages):
        if index not in closing_calls:
            index += 1
            continue
        after = index + 1
        while after < len(messages) and (
            messages[after].is_tool_result or messages[after].text.startswith("[thinking]")
            or (after in quiet_calls and index not in ticked)
            or (said_aloud(messages[after]) and after + 1 < len(messages) and after + 1 in closing_moves)
        ):
            after += 1
        # Of several things the agent says before its next action, the last one opens the next
        # task ("Committed, tests pass." / "Back to the list: #43").
        while (after + 1 < len(messages) and said_aloud(messages[after]) and said_aloud(messages[after + 1])):
            after += 1
        if after + 1 < len(messages) and said_aloud(messages[after]) and messages[after + 1].role == "user":
            # The agent's wrap-up, then the user speaks: a turn of the user's is judged on its own,
            # a background job reporting back starts a side task.
            if _BACKGROUND_DONE.match(messages[after + 1].text):
                cuts.append(after + 1)
        elif after < len(messages) and messages[after].role == "assistant":
            cuts.append(after)
        index = after
    cuts.extend(i for i, m in enumerate(messages) if said_aloud(m) and _NEXT_TASK.search(m.text[:300]))
    return sorted(set(cuts))


def _quiet(command: str) -> bool:
    return bool(re.match(r"^(?:git (?:status|log|add|diff|fetch|pull)|\S+ (?:sync|list|ready))\b", short_command(command)))


def shift_threshold() -> float:
    """How similar a user turn must be to the current goals to stay in the segment: the embedding
    space's ``shift`` (``ULTRON_SEGMENT_SHIFT_THRESHOLD`` when set; fitted by ``manage.py calibrate``,
    ``ingestion.calibration``)."""
    return model_thresholds().shift


@dataclass
class GoalTurns:
    """What the offline segmenter decides about a session's user turns before any threshold: the
    goal turns, how each later one is decided (``new``: a cue starts a task; ``same``: it confirms
    or answers the agent, or follows up; ``similarity``: its embedding against the current goals
    decides), their vectors, and the agent's own cuts."""

    goals: list[int]
    kinds: list[str]
    vectors: np.ndarray | None
    agent_cuts: list[int]


def goal_texts(messages: list[Message]) -> tuple[list[int], list[str]]:
    """The user's goal turns and the text of each that is embedded."""
    goals = [i for i, m in enumerate(messages) if is_goal(m)]
    return goals, [truncate_tokens(messages[i].text, 200) for i in goals]


def goal_turns(messages: list[Message], *, embed: Callable[[list[str]], np.ndarray] | None = None) -> GoalTurns:
    goals, texts = goal_texts(messages)
    agent_cuts = agent_boundaries(messages)
    # One goal turn or none: the user never turned to another goal; only the agent's own cuts may split it.
    if len(goals) <= 1:
        return GoalTurns(goals, [], None, agent_cuts)
    vectors = (embed or get_embedder().embed)(texts)
    kinds: list[str] = []
    closed = False  # the user has confirmed the current task: what follows is judged on its own
    for position, index in enumerate(goals[1:], 1):
        text = ACKNOWLEDGED_RE.sub("", messages[index].text, count=1) or messages[index].text
        closed = closed or text != messages[index].text  # "thanks! now …": the thanks closed the task
        reply = next((m.text for m in reversed(messages[goals[position - 1] : index]) if said_aloud(m)), "")
        # Cues first, the embedding last: "next task" starts a segment whatever its words' similarity, and a
        # turn that confirms or answers the agent stays in the task however far its embedding lies.
        if NEW_GOAL_CUES.match(text):
            kinds.append("new")
        # Once the user has confirmed the task, naming what the agent named no longer ties a turn to it.
        elif confirms(text) or (not closed and answers_agent(text, reply)):
            kinds.append("same")
        elif not FOLLOW_UP_CUES.match(text) and len(text.split()) >= 6:
            kinds.append("similarity")
        else:
            kinds.append("same")
        closed = confirms(messages[index].text)
    return GoalTurns(goals, kinds, vectors, agent_cuts)


def goal_starts(turns: GoalTurns, threshold: float) -> list[int]:
    """The goal turns that start a task at ``threshold``: a turn decided by similarity starts one
    when it is less similar than that to the mean of the current task's goal turns."""
    starts = [0]
    if turns.vectors is None:
        return starts
    members: list[np.ndarray] = [turns.vectors[0]]
    for position, (index, kind) in enumerate(zip(turns.goals[1:], turns.kinds, strict=True), 1):
        vector = turns.vectors[position]
        boundary = kind == "new"
        if kind == "similarity":
            centroid = np.mean(members, axis=0)
            centroid /= np.linalg.norm(centroid) or 1.0
            boundary = float(vector @ centroid) < threshold
        if boundary:
            starts.append(index)
            members = [vector]
        else:
            members.append(vector)
    return starts


def goal_bounds(messages: list[Message], turns: GoalTurns, threshold: float | None = None) -> list[int]:
    """Where the segments of ``messages`` (whose ``goal_turns`` are ``turns``) start at ``threshold``
    (default: the embedding space's ``shift``), and their end: the user's own new goals, plus the
    agent's cuts that leave enough work on both sides."""
    starts = [0] if turns.vectors is None else goal_starts(turns, shift_threshold() if threshold is None else threshold)
    bounds = sorted(set(starts))
    for cut in turns.agent_cuts:
        before = max((b for b in bounds if b <= cut), default=0)
        after = min((b for b in bounds if b > cut), default=len(messages))
        if cut - before >= MIN_AGENT_SEGMENT and after - cut >= MIN_AGENT_SEGMENT:
            bounds.append(cut)
            bounds.sort()
    return bounds + [len(messages)]


def segment_offline(messages: list[Message], *, threshold: float | None = None,
                    embed: Callable[[list[str]], np.ndarray] | None = None) -> list[Span]:
    """The offline segmenter. ``threshold`` and ``embed`` default to the configured ones."""
    if not messages:
        return []
    bounds = goal_bounds(messages, goal_turns(messages, embed=embed), threshold)
    return [Span(a, b, topic_of(messages[a:b])) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


# --- with an LLM ---------------------------------------------------------------------------


def _line(index: int, message: Message) -> str:
    return f"[{index}] {message.role.upper()}: {truncate_tokens(message.text, 80)}"


def _windows(messages: list[Message]) -> list[tuple[int, int]]:
    """Message ranges whose listing fits the model's input budget."""
    # 500 tokens are left for the instructions (flow.md#segmentation).
    budget = settings.ULTRON_LLM_MAX_INPUT_TOKENS - settings.ULTRON_LLM_PROMPT_RESERVE_TOKENS - 500
    windows: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, message in enumerate(messages):
        cost = estimate_tokens(_line(index, message)) + 2
        if used + cost > budget and index > start:
            windows.append((start, index))
            start, used = index, 0
        used += cost
    windows.append((start, len(messages)))
    return windows


def _validate_window(data: Any, *, first: int, end: int) -> list[Span]:
    return validate_spans(data, first, end)


def validate_spans(data: Any, start: int, end: int) -> list[Span]:
    """The model's answer must cover [start, end) with contiguous, in-bounds segments."""
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list) or not data["segments"]:
        raise InvalidReply("no segments list")
    spans: list[Span] = []
    expected = start
    for item in data["segments"]:
        if not isinstance(item, dict):
            raise InvalidReply("segment is not an object")
        first, last = item.get("start"), item.get("end")
        # bool is an int in Python: `true` is no message index.
        if not isinstance(first, int) or not isinstance(last, int) or isinstance(first, bool):
            raise InvalidReply("start/end are not integers")
        if first != expected:
            raise InvalidReply(f"segments are not contiguous at {first} (expected {expected})")
        if last < first or last >= end:
            raise InvalidReply(f"segment {first}-{last} is out of bounds")
        topic = item.get("topic")
        # A missing topic costs no attempt: segment_with_llm falls back to the first goal turn's sentence.
        if not isinstance(topic, str):
            topic = ""
        spans.append(Span(first, last + 1, topic.strip()[:200]))
        expected = last + 1
    if expected != end:
        raise InvalidReply(f"segments stop at {expected}, not at {end}")
    return spans


SYSTEM_PROMPT = (
    "You split an agent's conversation into independent task segments. A new segment starts only "
    "where the user turns to a clearly different goal; follow-ups, retries and clarifications stay in "
    "the current segment. Messages are numbered. Reply with JSON only: "
    '{"segments": [{"start": <first index>, "end": <last index, inclusive>, "topic": "<3-8 words>"}]} '
    "covering every message from the first to the last index shown, in order, without gaps or overlaps."
    + DATA_NOTE
)


def segment_with_llm(messages: list[Message]) -> list[Span]:
    llm = get_llm()
    spans: list[Span] = []
    # Each window is split on its own: a segment never spans two windows (flow.md#segmentation).
    for start, end in _windows(messages):
        listing = "\n".join(_line(i, messages[i]) for i in range(start, end))
        window_spans = llm.ask_json(
            system=SYSTEM_PROMPT,
            user=f"Messages {start} to {end - 1}:\n{fence(listing)}",
            validate=functools.partial(_validate_window, first=start, end=end),
            max_tokens=1500,
            purpose="segment",
        )
        spans.extend(Span(s.start, s.end, s.topic or topic_of(messages[s.start : s.end])) for s in window_spans)
    return spans


def segment(messages: list[Message]) -> list[Span]:
    """Segments for ``messages`` (already redacted). Raises LLMError if the LLM keeps failing."""
    if not messages:
        return []
    if get_llm().available:
        return segment_with_llm(messages)
    return segment_offline(messages)


__all__ = ["GoalTurns", "LLMError", "Span", "fingerprint", "goal_bounds", "goal_texts", "goal_turns", "segment",
           "segment_offline", "validate_spans"]
