"""What the user teaches in a transcript, found without an LLM: a how-to task the user confirmed
(a ``pattern``: the goal and the steps that worked), a correction of the agent (``correction``:
what to do instead), and a stated rule or preference (``preference``).

Only the user's own turns count as confirmation, correction or rule: an agent praising its own
work proves nothing. Steps come from the agent's final answer when it lists them, otherwise from
the actions that changed something and did not fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.judgements.chains import chains_find, edit_gist, steps_of
from ingestion.judgements.commands import is_look, short_command
from ingestion.judgements.cues import CORRECTION_RE, ERROR_RE, is_error, states_rule
from ingestion.parsing import Message
from ingestion.segmentation import is_goal, said_aloud
from memories.text import normalise_space, truncate_tokens

CONFIRM_RE = re.compile(
    r"^\W*(?:thanks|thank you|thx|great|perfect|awesome|excellent|nice|cool|lgtm|looks good|works|worked|it works"
    r"|that (?:works|worked|did it|fixed it)|that'?s (?:it|great|perfect|much better)|solved|fixed|brilliant"
    r"|好的|谢谢|可以了|好了|成功了|完美)",
    re.IGNORECASE,
)
NOT_DONE_RE = re.compile(r"\b(?:still|doesn'?t|does not|didn'?t|did not|not working|fails?|failed|broken|error|but)\b"
                         r"|还是|不行|报错", re.I)
_ANSWERED = re.compile(r'User has answered your questions?:\s*(?P<pairs>.+)', re.S)
_PAIR = re.compile(r'"(?P<question>[^"]{3,400})"\s*=\s*"(?P<answer>[^"]{1,400})"')
_REQUEST_RE = re.compile(r"\?|^\W*(?:can|could|would|will) you\b|\b(?:please|how (?:do|can|to)|i want|i need|let'?s|make|"
                         r"add|set up|setup|fix|shrink|speed up|create|write|configure|migrate|upgrade)\b", re.I)
_BROKEN_RE = re.compile(r"\b(?:fail\w*|error\w*|broken|crash\w*|doesn'?t work|not working|won'?t|can'?t)\b", re.I)
_ANSWER_RE = re.compile(r"^\W*(?:yes|yeah|yep|no|nope|sure|go ahead|do it|option|the (?:first|second))\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(?P<item>.+)$")


@dataclass
class Lesson:
    memory_type: str
    content: str
    context: str = ""
    resolution: str = ""
    confidence: float = 0.6


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s+|\n+", text) if s.strip()]


def _user_turns(messages: list[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if is_goal(m)]


def _listed_steps(text: str) -> list[str]:
    items = []
    for line in text.splitlines():
        match = _LIST_ITEM.match(line)
        if match:
            item = re.sub(r"\*\*|__", "", match.group("item")).strip()
            if len(item.split()) >= 2:
                items.append(truncate_tokens(normalise_space(item), 60))
    return items


def _acted_steps(messages: list[Message], start: int, end: int) -> list[str]:
    found: list[str] = []
    for step in steps_of(messages[start:end]):
        if step.failed or step.result is None or not step.target:
            continue
        if step.is_edit:
            gist = edit_gist(messages[start + step.call].text)
            label = f"edit {step.target.rstrip('/').rsplit('/', 1)[-1]}" + (f" (`{gist}`)" if gist else "")
        elif step.is_shell and not is_look(step.target):
            label = f"run `{short_command(step.target, 100)}`"
        else:
            continue
        if label not in found:
            found.append(label)
    return found


def howto_find(messages: list[Message], goal: int, confirmation: int) -> Lesson | None:
    """The user's goal at ``goal``, confirmed at ``confirmation``: the steps that got there."""
    between = messages[goal + 1 : confirmation]
    if any(is_error(m) for m in between[-4:]):
        return None  # ended on a failure the confirmation does not cover
    answers = [m.text for m in between if said_aloud(m)]
    steps = next((items for items in (_listed_steps(t) for t in reversed(answers)) if len(items) >= 2), [])
    if not steps:
        steps = _acted_steps(messages, goal + 1, confirmation)
    if not steps:
        return None
    ask = truncate_tokens(normalise_space(messages[goal].text), 50)
    said = truncate_tokens(normalise_space(messages[confirmation].text), 25)
    resolution = "Steps that worked: " + "; ".join(f"{n}. {s}" for n, s in enumerate(steps[:6], 1))
    return Lesson("pattern", ask, f"confirmed by the user: {said}", truncate_tokens(resolution, 220), 0.65)


def _after(messages: list[Message], index: int) -> str:
    for message in messages[index + 1 : index + 8]:
        if said_aloud(message):
            sentences = _sentences(message.text)
            return truncate_tokens(sentences[0], 50) if sentences else ""
    return ""


def _question_answers(messages: list[Message]) -> list[Lesson]:
    """Answers to the agent's own questions (a choice dialog): an answer in the user's own words,
    not one of the offered options, is the user steering the work — a correction."""
    found = []
    for index, message in enumerate(messages):
        match = _ANSWERED.search(message.text) if message.is_tool_result else None
        if not match:
            continue
        labels: list[str] = []
        for earlier in reversed(messages[max(0, index - 4) : index]):
            if "[tool call AskUserQuestion]" in earlier.text:
                labels = re.findall(r'"label":\s*"([^"]+)"', earlier.text)
                break
        offered = {label.lower() for label in labels}
        for pair in _PAIR.finditer(match.group("pairs")):
            answer = pair.group("answer").strip()
            if answer.lower() in offered or len(answer.split()) < 3:
                continue
            question = truncate_tokens(normalise_space(pair.group("question")), 40)
            passed_over = f" (rather than: {'; '.join(labels[:4])})" if labels else ""
            found.append(Lesson("correction", f"Asked \"{question}\", the user answered: {answer}{passed_over}",
                                "", _after(messages, index), 0.6))
    return found


def lessons_find(messages: list[Message]) -> list[Lesson]:
    turns = _user_turns(messages)
    found: list[Lesson] = []
    for position, index in enumerate(turns):
        text = messages[index].text
        if position > 0 and CORRECTION_RE.search(text) and not ERROR_RE.search(text):
            statement = " ".join(_sentences(text)[:2])
            found.append(Lesson("correction", truncate_tokens(statement, 60), "", _after(messages, index), 0.6))
            continue
        # A rule is stated in a turn of conversation; a turn of hundreds of words is a pasted
        # document or a command's prompt template, whose "always"/"never" are not the user's.
        rules = [s for s in _sentences(text) if states_rule(s)] if len(text.split()) <= 150 else []
        if rules:
            found.extend(Lesson("preference", truncate_tokens(rule, 60), "", "", 0.6) for rule in rules[:2])
        if position > 0 and CONFIRM_RE.match(text) and not NOT_DONE_RE.search(text[:80]):
            requests = [t for t in turns[:position] if _REQUEST_RE.search(messages[t].text)
                        and not CONFIRM_RE.match(messages[t].text) and not _ANSWER_RE.match(messages[t].text)]
            if not requests or (_BROKEN_RE.search(messages[requests[-1]].text)
                                and chains_find(messages[requests[-1] : index])):
                continue  # no request to confirm, or a repair (its error chain is that memory)
            lesson = howto_find(messages, requests[-1], index)
            if lesson is not None:
                found.append(lesson)
    found.extend(_question_answers(messages))
    return found

