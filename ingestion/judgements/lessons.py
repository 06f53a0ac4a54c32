"""What the user teaches in a transcript, found without an LLM: a fix the user confirmed (an
``error``: the failure the user reported, and the answer that fixed it), a how-to task the user
confirmed (a ``pattern``: the goal and the steps that worked), a correction of the agent
(``correction``: what to do instead), and a stated rule or preference (``preference``).

Only the user's own turns count as confirmation, correction or rule: an agent praising its own
work proves nothing. Steps come from the agent's final answer when it lists them, otherwise from
the actions that changed something and did not fail, otherwise (a chat without tools) from the
answer that told the user what to do.

Each finder can say why it refused a candidate (``notes``): a curator reading a segment that gave
no memory sees what was considered and why it was not kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.judgements.chains import chains_find, edit_gist, error_line, not_done, note, steps_of
from ingestion.judgements.commands import is_look, short_command
from ingestion.judgements.cues import (
    ACKNOWLEDGED_RE,
    CORRECTION_RE,
    ERROR_RE,
    EXPLAIN_RE,
    PROBLEM_RE,
    REJECTED_RE,
    STILL_FAILING_RE,
    confirms,
    confirms_success,
    is_error,
    reports_problem,
    sentences,
    states_rule,
)
from ingestion.judgements.segmentation import is_goal, said_aloud
from ingestion.parsing import Message
from memories.models import MemoryType
from memories.text import normalise_space, truncate_tokens

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
    return sentences(text)


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
        # Only actions that ran and did not fail are steps that worked; a rejected call or the file tool's
        # own mechanics changed nothing (module docstring).
        if step.failed or step.result is None or not step.target or not_done(step):
            continue
        if step.is_edit:
            gist = edit_gist(messages[start + step.call].text)
            label = f"edit {step.target.rstrip('/').rsplit('/', 1)[-1]}" + (f" (`{gist}`)" if gist else "")
        # A look (ls, cat, git status) changed nothing: it is no step.
        elif step.is_shell and not is_look(step.target):
            label = f"run `{short_command(step.target, 100)}`"
        else:
            continue
        if label not in found:
            found.append(label)
    return found


# A question about how something is, not about how to get something done: "what does `set -e` do?",
# "why does git rebase…", "what's the difference between…".
_KNOWLEDGE_QUESTION = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|hey|quick question)\W+)?(?:what(?:'s| is| are| does| do)|why|which|who|when|where"
    r"|is (?:it|there|this|that)|are there|does|do (?:i|you) (?:need|have)|explain|what'?s the difference)\b",
    re.I,
)
# An answer that tells the user what to do: inline code or a code block, an instruction verb, a
# stated cause. Of several answers, the one that says most of this is the fix.
_INSTRUCTION_RE = re.compile(
    r"\b(?:use|set|add|cap|install|run|change|switch|upgrade|downgrade|pin|put|remove|replace|raise|lower"
    r"|increase|reduce|enable|disable|restart|rebuild|move|rename|export|configure|point|copy|delete|update)\b"
    r"|改成|设置|安装|使用|升级|删除|添加", re.I)


def _instructive(text: str) -> int:
    return (2 * len(re.findall(r"`[^`\n]+`|```", text)) + len(_INSTRUCTION_RE.findall(text))
            + 2 * len(EXPLAIN_RE.findall(text)) + len(_listed_steps(text)))


def _answer(messages: list[Message], start: int, end: int) -> str:
    """Of the agent's answers between ``start`` and ``end``, the one that tells most of what to do
    (the earliest of equals); "" when none says anything to do."""
    answers = [m.text for m in messages[start:end] if said_aloud(m) and len(m.text.split()) >= 6]
    best = max(answers, key=_instructive, default="")  # max keeps the first of equals
    return best if best and _instructive(best) else ""


def howto_find(messages: list[Message], goal: int, confirmation: int,
               notes: list[str] | None = None, *, said: str | None = None) -> Lesson | None:
    """The user's goal at ``goal``, confirmed at ``confirmation`` (in the words ``said``, by default
    the whole turn): the steps that got there."""
    said = messages[confirmation].text if said is None else said
    between = messages[goal + 1 : confirmation]
    if _KNOWLEDGE_QUESTION.match(messages[goal].text) and not confirms_success(said):
        note(notes, f"message {goal} asks a question and the user thanked for the answer: knowledge, not a task "
                     "done and confirmed")
        return None
    if any(is_error(m) for m in between[-4:]):
        note(notes, f"the how-to confirmed at message {confirmation} ended on a failing command")
        return None  # ended on a failure the confirmation does not cover
    answers = [m.text for m in between if said_aloud(m)]
    steps = next((items for items in (_listed_steps(t) for t in reversed(answers)) if len(items) >= 2), [])
    if not steps:
        if chains_find(messages[goal:confirmation]):
            note(notes, f"the how-to confirmed at message {confirmation} went through an error and its fix: "
                         "that error memory holds what it teaches")
            return None
        steps = _acted_steps(messages, goal + 1, confirmation)
    ask = truncate_tokens(normalise_space(messages[goal].text), 50)
    works = confirms_success(said)
    if steps:
        resolution = "Steps that worked: " + "; ".join(f"{n}. {s}" for n, s in enumerate(steps[:6], 1))
    elif works and (answer := _answer(messages, goal + 1, confirmation)):
        # A chat without tools: the answer the user followed, confirmed as working.
        resolution = "What worked: " + normalise_space(answer)
    else:
        note(notes, f"the confirmation at message {confirmation} follows no steps or instructions that worked"
             if works else f"message {confirmation} thanks the agent but does not say the result works")
        return None
    confirmed = truncate_tokens(normalise_space(said), 25)
    return Lesson(MemoryType.PATTERN, ask, f"confirmed by the user: {confirmed}", truncate_tokens(resolution, 220), 0.65)


def fix_find(messages: list[Message], problem: int, last_report: int, confirmation: int,
             notes: list[str] | None = None, *, said: str | None = None) -> Lesson | None:
    """A failure the user reported at ``problem`` (and last at ``last_report``), answered by the
    agent, then confirmed by the user as fixed at ``confirmation``: an ``error`` memory with the
    answer that fixed it and what the user did. A chat without tools has no error chain; this is
    its lesson."""
    said = messages[confirmation].text if said is None else said
    # A fix needs the user to say it works; thanks alone confirm only a how-to (flow.md).
    if not confirms_success(said):
        note(notes, f"message {confirmation} thanks the agent but does not say the problem is fixed")
        return None
    answer = _answer(messages, last_report + 1, confirmation)
    acted = _acted_steps(messages, last_report + 1, confirmation)
    if not answer and not acted:
        note(notes, f"no answer or action between the problem at message {last_report} and the "
                     f"confirmation at message {confirmation} says what fixed it")
        return None
    text = messages[problem].text
    content = truncate_tokens(normalise_space(re.sub(r"```\w*", " ", text)), 80)
    quoted = error_line(text)
    if quoted and quoted not in content:
        content = f"{content} ({quoted})"
    # What the user reported doing between the answer and the confirmation ("I set pool_size=5").
    done = [normalise_space(messages[t].text) for t in range(last_report + 1, confirmation)
            if is_goal(messages[t]) and not PROBLEM_RE.search(messages[t].text)]
    resolution = normalise_space(answer)
    if acted:
        steps = "Steps that worked: " + "; ".join(f"{n}. {step}" for n, step in enumerate(acted[:6], 1))
        resolution = f"{truncate_tokens(resolution, 120)} {steps}".strip()
    if done:
        resolution = f"{truncate_tokens(resolution, 170)} Applied: {truncate_tokens(' '.join(done), 40)}"
    confirmed = truncate_tokens(normalise_space(said), 25)
    return Lesson(MemoryType.ERROR, truncate_tokens(content, 120), f"confirmed by the user: {confirmed}",
                  truncate_tokens(resolution, 220), 0.7)




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
            # Picking an offered option, or a word or two ("yes"), is choosing, not steering: only an answer in
            # the user's own words is a correction (docstring).
            if answer.lower() in offered or len(answer.split()) < 3:
                continue
            question = truncate_tokens(normalise_space(pair.group("question")), 40)
            passed_over = f" (rather than: {'; '.join(labels[:4])})" if labels else ""
            found.append(Lesson(MemoryType.CORRECTION, f"Asked \"{question}\", the user answered: {answer}{passed_over}",
                                "", _after(messages, index), 0.6))
    return found


def _after_rejection(messages: list[Message], index: int) -> bool:
    """Whether the user's turn at ``index`` follows their rejecting the agent's last action (a
    refused tool call, an interruption): what they say next steers the work, a correction."""
    for message in reversed(messages[max(0, index - 3) : index]):
        if REJECTED_RE.search(message.text[:300]):
            return True
        # The agent spoke or acted after the rejection: the user's turn answers that, not the rejection.
        if said_aloud(message) or message.text.startswith("[tool call"):
            return False
    return False


_HOW_TO = re.compile(r"\bhow (?:do|can|should|would|could) (?:i|we|you)\b|\bhow to\b|怎么|如何", re.I)
# What a how-to question may say of its circumstances without reporting a failure: "the app keeps
# the file open and can't reopen it on a signal", "the dump is too large to mail".
_CONSTRAINT = re.compile(r"\b(?:can'?t|cannot|could ?n[o']t|won'?t|unable to)\s+\w+|\btoo (?:large|many|slow|big)\b", re.I)


def _reports_failure(text: str) -> bool:
    """A turn reporting that something failed; a how-to question that only states its constraints
    asks for a pattern, not a fix."""
    if not reports_problem(text):
        return False
    return not _HOW_TO.search(text) or reports_problem(_CONSTRAINT.sub(" ", text))


def _is_request(text: str) -> bool:
    """A turn that asks for something or reports a problem ("Thanks. Related: terraform plan now
    fails with …" does both: it closes one task and opens the next)."""
    if reports_problem(text):
        return True  # "nope, same error" too
    return bool(_REQUEST_RE.search(text)) and not confirms(text) and not _ANSWER_RE.match(text)


def lessons_find(messages: list[Message], notes: list[str] | None = None) -> list[Lesson]:
    """The lessons the user's turns teach; why a candidate was refused goes to ``notes``."""
    turns = _user_turns(messages)
    found: list[Lesson] = []
    task_start = 0  # the first user turn of the task the next confirmation closes
    for position, index in enumerate(turns):
        text = messages[index].text
        steered = position > 0 and _after_rejection(messages, index)
        # "No, same error" or a pasted traceback opens like a correction but reports a failure
        # (STILL_FAILING_RE); the first turn is the request, with nothing of the agent's to correct yet.
        if position > 0 and (CORRECTION_RE.search(text) or steered) and not ERROR_RE.search(text) \
                and not STILL_FAILING_RE.search(text):
            statement = " ".join(_sentences(text)[:2])
            found.append(Lesson(MemoryType.CORRECTION, truncate_tokens(statement, 60), "", _after(messages, index), 0.6))
            continue
        # A rule is stated in a turn of conversation; a turn of hundreds of words is a pasted
        # document or a command's prompt template, whose "always"/"never" are not the user's.
        rules = [s for s in _sentences(text) if states_rule(s)] if len(text.split()) <= 150 else []
        if rules:
            found.extend(Lesson(MemoryType.PREFERENCE, truncate_tokens(rule, 60), "", "", 0.6) for rule in rules[:2])
        # The first turn may state rules, but it cannot confirm: there is no earlier request in the segment.
        if position == 0:
            continue
        # A confirmation ("that fixed it"), or thanks that open a turn going on to something new
        # ("Great. How do I make it restart on its own?"): either closes the task before it.
        thanks = ACKNOWLEDGED_RE.match(text)
        said = text if confirms(text) else thanks.group(0) if thanks else ""
        if not said:
            continue
        rest = text[thanks.end():] if thanks else text
        task = turns[task_start:position]
        # A turn that reports a problem, or asks anew after its thanks ("Thanks. Related: terraform plan now
        # fails"), closes the task before it and opens the next one itself.
        task_start = position if reports_problem(text) or (thanks and _is_request(rest)) else position + 1
        requests = [t for t in task if _is_request(messages[t].text)]
        if not requests:
            note(notes, f"the confirmation at message {index} follows no request or reported problem")
            continue
        problems = [t for t in requests if _reports_failure(messages[t].text)]
        if problems and chains_find(messages[problems[0] : index]):
            continue  # a repair: its error chain is that memory
        # The first report says what the problem was; the fix is sought after the last one (flow.md: "counted
        # from the user's last report of the problem"), as the user reporting again means earlier answers failed.
        lesson = (fix_find(messages, problems[0], problems[-1], index, notes, said=said) if problems
                  else howto_find(messages, requests[-1], index, notes, said=said))
        if lesson is not None:
            found.append(lesson)
    found.extend(_question_answers(messages))
    return found
