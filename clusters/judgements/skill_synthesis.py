"""The offline path of ``skill_draft.skill_draft``: a skill written from a cluster's members
without an LLM (docs/flow.md#crystallization).

The members' resolutions (and the instructions their contents state) are cut into sentences;
those that are instructions become candidate steps, conditions and disagreements become edge
cases. Steps that say the same thing — close embeddings, or the same command or setting — are
one step, with the other wordings noted as variants; the steps are ordered as a procedure
(check → fix → verify, then by how many members give them). The name is the most central
member's one-line summary in the imperative; *when to use* is the symptom the members share.
Every line cites the members it came from.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from clusters.judgements import skill_text as shape
from clusters.judgements.skill_types import Embed, MemoryFacts, SkillDraft
from memories.text import first_sentence, truncate_tokens

# Fewer than three distinct steps is a tip, not a procedure: the draft is insufficient.
MIN_STEPS = 3
# A skill is a procedure followed in one go: it keeps its first eight steps in procedure order
# (and six edge cases); the cut ones are the fewest members' advice within the last phase.
MAX_STEPS = 8
MAX_EDGES = 6
# Two steps with different code (``pip install -e`` / ``pythonpath``) are different actions
# even when their words are close: their similarity counts this much less.
DIFFERENT_CODE_PENALTY = 0.1
_LEANS_RE = re.compile(r"^\S+\s+(?:it|them|this|that|those|these)\b", re.I)
_PURPOSE_RE = re.compile(r",?\s+(?:so that|so the|so it|so|because|which|otherwise)\b.*$", re.I)


@dataclass
class Unit:
    text: str
    member: MemoryFacts
    rank: int
    heads: set[str] = field(default_factory=set)


@dataclass
class Step:
    units: list[Unit]
    rep: Unit

    @property
    def members(self) -> list[MemoryFacts]:
        return list({u.member.id: u.member for u in self.units}.values())


def cite(members: list[MemoryFacts]) -> str:
    return " ".join(f"[m:{short}]" for short in dict.fromkeys(m.short for m in members))


def centrality(members: list[MemoryFacts], embed: Embed) -> list[MemoryFacts]:
    """Members from the most central (highest mean cosine to the others) to the least."""
    missing = [m for m in members if m.embedding is None]
    if missing:
        for m, v in zip(missing, embed([f"{m.content}\n{m.context}\n{m.resolution}" for m in missing]), strict=True):
            m.embedding = [float(x) for x in v]
    matrix = np.asarray([m.embedding for m in members], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True) + 1e-9
    mean = (matrix @ matrix.T).sum(axis=1) / max(len(members) - 1, 1)
    # Rounded, so float noise between runs never reorders near ties: hits, then the id, decide them.
    order = sorted(range(len(members)), key=lambda i: (-round(float(mean[i]), 4), -members[i].hit_count, members[i].id))
    return [members[i] for i in order]


def units_of(member: MemoryFacts, rank: int) -> tuple[list[Unit], list[Unit]]:
    """A member's instructions (candidate steps) and caveats (candidate edge cases). A step that
    leans on the sentence before it ("That's the AirPlay receiver. Disable it …") is a caveat
    of its own situation, told with that sentence and the member's setting."""
    said = [(s, True) for s in shape.sentences(member.resolution)]
    opening = shape.sentences(member.content)
    if opening and shape.instruction(opening[0], reported=False):
        said = [(s, False) for s in opening] + said  # a rule or pattern states its instruction in the content
    elif len(opening) > 1:
        said += [(s, False) for s in opening[1:] if shape.is_caveat(s)]
    steps, caveats = [], []
    for index, (sentence, reported) in enumerate(said):
        told = shape.instruction(sentence, reported=reported)
        if told and _LEANS_RE.match(told) and index and said[index - 1][1] == reported:
            setting = f"{shape.first_clause(member.context, 12)}: " if member.context else ""
            caveats.append(Unit(truncate_tokens(f"{setting}{said[index - 1][0]}; {told[0].lower()}{told[1:]}", 60),
                                member, rank))
        elif told and not re.match(r"(?i)(if|when|unless)\b", sentence):
            text = truncate_tokens(told, 60)
            steps.append(Unit(text, member, rank, shape.code_heads(text)))
        elif told or shape.is_caveat(sentence):
            caveats.append(Unit(truncate_tokens(sentence, 50), member, rank))
    return steps, caveats


def similarity(units: list[Unit], embed: Embed) -> np.ndarray:
    """Cosine of the steps' cores (purpose clauses cut), raised to 1 for a shared command or
    setting and lowered when both carry code and none of it is shared."""
    vectors = np.asarray(embed([_PURPOSE_RE.sub("", u.text) or u.text for u in units]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    sim = vectors @ vectors.T
    for i, a in enumerate(units):
        for j in range(i + 1, len(units)):
            b = units[j]
            shared = a.heads & b.heads
            # The same tool alone (``pip``) is not the same action; the same sub-command or key is.
            if any(not h.startswith("tool:") for h in shared):
                sim[i, j] = sim[j, i] = 1.0
            elif a.heads and b.heads and not shared:
                sim[i, j] = sim[j, i] = sim[i, j] - DIFFERENT_CODE_PENALTY
    return sim


def group(units: list[Unit], sim: np.ndarray, threshold: float) -> list[list[int]]:
    """Complete-linkage grouping: two groups join while every pair across them is at least
    ``threshold`` similar, closest groups first (so a chain of loosely related steps never
    collapses into one)."""
    groups = [[i] for i in range(len(units))]
    while len(groups) > 1:
        best, pair = threshold, None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                link = min(float(sim[i, j]) for i in groups[a] for j in groups[b])
                if link >= best:
                    best, pair = link, (a, b)
        if pair is None:
            break
        a, b = pair
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    return groups


def steps_of(units: list[Unit], embed: Embed, threshold: float) -> list[Step]:
    if not units:
        return []
    sim = similarity(units, embed)
    steps = []
    for indices in group(units, sim, threshold):
        # The wording closest to all the others stands for the step; ties go to the more central member.
        rep = max(indices, key=lambda i: (round(float(np.mean(sim[i, indices])), 3), -units[i].rank))
        steps.append(Step([units[i] for i in indices], units[rep]))
    return sorted(steps, key=lambda s: (shape.phase(s.rep.text), -len(s.members), min(u.rank for u in s.units)))


def step_lines(steps: list[Step]) -> tuple[list[str], list[list[str]]]:
    lines, variants = [], []
    for step in steps:
        lines.append(f"{step.rep.text} {cite(step.members)}")
        notes, seen = [], set(step.rep.heads)
        for unit in step.units:
            if unit is step.rep or unit.member.id == step.rep.member.id:
                continue
            new = unit.heads - seen
            # A wording is worth noting when it shows code the step does not, or has no code to compare.
            if new or not unit.heads:
                notes.append(f"{unit.text} {cite([unit.member])}")
                seen |= unit.heads
        variants.append(notes[:3])
    return lines, variants


def edge_lines(caveats: list[Unit], ordered: list[MemoryFacts], cited_ids: set[str], embed: Embed,
               threshold: float) -> list[str]:
    """Conditions and disagreements, one per kind; failing those, how the least typical members
    saw the problem (the rarer shapes of the same symptom)."""
    lines = [f"{s.rep.text} {cite(s.members)}" for s in steps_of(caveats, embed, threshold)[:MAX_EDGES]]
    if not lines:
        # Members no step cites show the symptom's other shapes; with every member cited, the two least central.
        rare = [m for m in reversed(ordered) if m.id not in cited_ids][:3] or list(reversed(ordered))[:2]
        lines = [f"Also seen as: {shape.first_clause(first_sentence(m.content), 30)} {cite([m])}" for m in rare]
    return lines


def symptom_lines(ordered: list[MemoryFacts]) -> tuple[list[str], str, str]:
    """*When to use*: the shared symptom (the central report's, with every member that quotes
    the same error), the error line as written, and a setting several members share."""
    keys: Counter = Counter()
    written: dict[str, str] = {}
    having: dict[str, list[MemoryFacts]] = {}
    for m in ordered:
        for key, text in dict(shape.error_signatures(f"{m.content} {m.context}")).items():
            keys[key] += 1
            having.setdefault(key, []).append(m)
            if key not in written or len(text) < len(written[key]):
                written[key] = text
    # An error one member quotes is that member's; two quoting it make it the shared symptom.
    error_key = next((k for k, n in keys.most_common() if n >= 2), "")
    told = [m for m in ordered if not shape.instruction(first_sentence(m.content), reported=False)]
    failing = [m for m in told if shape.FAILURE_WORDS.search(first_sentence(m.content))
               or shape.error_signatures(m.content)]
    reporter: MemoryFacts | None = (failing or told)[0] if failing or told else None
    lines: list[str] = []
    symptom = ""
    if reporter is not None:
        symptom = shape.first_clause(first_sentence(reporter.content), 25)
        same = [reporter] + [m for m in having.get(error_key, []) if m is not reporter]
        lines.append(f"{symptom} {cite(same)}")
    error = written.get(error_key, "")
    if error and error.lower() not in symptom.lower():
        lines.append(f"The error reads `{error}` {cite(having[error_key])}")
    contexts: dict[str, list[MemoryFacts]] = {}
    for m in ordered:
        for part in re.split(r",\s*|;\s*", m.context):
            if len(part.split()) >= 1 and part.strip():
                contexts.setdefault(part.strip().lower(), []).append(m)
    shared = sorted(((len(ms), c) for c, ms in contexts.items() if len(ms) >= 2), reverse=True)
    if shared:
        lines.append(f"Setting: {shared[0][1]} {cite(contexts[shared[0][1]])}")
    if not lines:
        lines = [f"{shape.first_clause(m.context or first_sentence(m.content), 25)} {cite([m])}" for m in ordered[:2]]
    return lines, symptom, error


def name_of(topic: str, ordered: list[MemoryFacts]) -> str:
    """The most central member's summary in the imperative, unless one of the next two
    gives a plainer shape (an instruction, then a symptom, then a report: ``skill_text.named``)."""
    shapes = [shape.named(m.summary or first_sentence(m.content)) for m in ordered[:3]]
    found = [(rank, i, n) for i, (n, rank) in enumerate(shapes) if n and not shape.is_keyword_list(n)]
    name = min(found)[2] if found else topic
    return name[:80].rsplit(" ", 1)[0] if len(name) > 80 else name


def _sentence_inner(text: str) -> str:
    """A sentence put inside another: its first letter lower-cased only when the first word is a
    function word ("The build fails" → "the build fails"); a name keeps its capitals (Docker,
    TypeError, README)."""
    first = text.split(maxsplit=1)[0] if text.strip() else ""
    if first.lower() in shape.FUNCTION_WORDS | shape.DETERMINERS:
        return text[:1].lower() + text[1:]
    return text


def describe(name: str, symptom: str, error: str, steps: int, members: int) -> str:
    """What Claude Code reads to decide when to load the skill: what it does, then when."""
    when = _sentence_inner(symptom or name)
    if error and error.lower() not in when.lower():
        when += f" ({error})"
    return f"{name}: {steps} steps from {members} shared memories. Use when {when}."[:1000]


def synthesize(topic: str, members: list[MemoryFacts], *, embed: Embed, group_at: float) -> SkillDraft:
    """The offline draft; ``group_at`` is the similarity from which two steps are one (the
    embedding model's merge-candidate threshold)."""
    ordered = centrality(members, embed)
    units, caveats = [], []
    for rank, member in enumerate(ordered):
        found, doubts = units_of(member, rank)
        units += found
        caveats += doubts
    steps = steps_of(units, embed, group_at)[:MAX_STEPS]
    lines, variants = step_lines(steps)
    when, symptom, error = symptom_lines(ordered)
    cited = {m.id for s in steps for m in s.members}
    edges = edge_lines(caveats, ordered, cited, embed, group_at)
    name = name_of(topic, ordered)
    text = " ".join(when + lines + [v for vs in variants for v in vs] + edges)
    by_short = {m.short: m.id for m in members}
    draft = SkillDraft(
        name=name, description=describe(name, symptom, error, len(lines), len(members)), when_to_use=when,
        steps=lines, edge_cases=edges, author="offline", variants=variants,
        cited=list(dict.fromkeys(by_short[s] for s in re.findall(r"\[m:([0-9a-f]{8})\]", text) if s in by_short)),
    )
    if len(lines) < MIN_STEPS:
        draft.insufficient = (f"only {len(lines)} distinct steps among {len(members)} members "
                              f"({len(units)} instructions); a skill needs at least {MIN_STEPS}")
    return draft
