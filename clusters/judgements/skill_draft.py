"""Judgement: the skill a cluster's memories make, and whether it may be published — the one
place how a skill is written is decided (docs/flow.md#crystallization).

``skill_draft`` drafts it (the LLM's draft when one is configured, else the offline synthesis of
``skill_synthesis``), renders it as SKILL.md, holds it to the quality bar, verifies every claim
against the members (by the LLM, or offline by citation and word overlap) and scores it. The
crystallization service files what it returns; the other functions here are its parts.

Everything here fails closed: a draft that misses the quality bar, a claim no member supports,
a contradiction, or an LLM error all leave the skill unpublished, with the reason recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusters.judgements import skill_text
from clusters.judgements.skill_synthesis import MIN_STEPS, synthesize
from clusters.judgements.skill_types import Check, Embed, MemoryFacts, SkillDraft
from memories.providers.llm import InvalidReply, LLMError, get_llm
from memories.text import truncate_tokens

__all__ = ["Check", "MemoryFacts", "SkillDraft", "WrittenSkill", "draft_offline", "quality", "render",
           "skill_draft", "slug_base", "verify_offline"]

# Front matter and headings take about 90 of a SKILL.md's characters: under 300, its sections
# hold little more than a sentence or two.
MIN_BODY_CHARS = 300
# Offline, a claim is supported when this share of its words is in a member it cites: a little
# rewording ("Run", a dropped article) passes, a sentence the member never said does not.
SUPPORTED_OVERLAP = 0.8
_CITE_RE = re.compile(r"\s*\[m:([0-9a-f]{8})\]")


@dataclass
class WrittenSkill:
    """What ``skill_draft`` decided. ``insufficient``: why no skill was written (nothing else is
    filled in then). Otherwise the SKILL.md ``body`` under ``slug``, both checks and the score;
    ``passed`` when both checks passed."""

    draft: SkillDraft
    slug: str = ""
    body: str = ""
    quality: Check = field(default_factory=lambda: Check(False, 0.0, {}, "not checked"))
    verification: Check = field(default_factory=lambda: Check(False, 0.0, {}, "not checked"))
    score: float = 0.0

    @property
    def insufficient(self) -> str:
        return self.draft.insufficient

    @property
    def passed(self) -> bool:
        return self.quality.passed and self.verification.passed

    @property
    def reason(self) -> str:
        return self.quality.reason or self.verification.reason


def skill_draft(topic: str, members: list[MemoryFacts], *, slug_for: Callable[[str], str]) -> WrittenSkill:
    """The skill ``members`` make, checked and scored. ``slug_for`` turns the slug the draft's
    name gives (``slug_base``) into the one the skill is filed under — a rewrite keeps its
    skill's, a new skill's is made unique — before rendering, since the SKILL.md's front matter
    names the skill by it. Raises ``LLMError`` when the configured LLM cannot write the draft
    (the caller records it: fail closed)."""
    draft = _draft(topic, members)
    if draft.insufficient:
        return WrittenSkill(draft)
    slug = slug_for(slug_base(draft.name))
    body = render(draft, {m.id: m for m in members}, slug=slug)
    checked = quality(draft, body)
    # A draft the bar fails is not verified: it cannot be published anyway (and an LLM is not asked).
    verification = _verify(draft, members) if checked.passed else Check(False, 0.0, {}, "not verified: quality bar not met")
    coverage = len(set(draft.cited) & {m.id for m in members}) / len(members)
    # Coverage weighs lightly (a factor from 0.8 to 1): the checks rank a version first, and
    # citing more of the cluster only tells near ties apart when a rewrite must beat the last.
    score = round(checked.score * verification.score * (0.8 + 0.2 * coverage), 4)
    return WrittenSkill(draft, slug, body, checked, verification, score)


def slug_base(name: str) -> str:
    """Lower-case, ``[a-z0-9-]`` and CJK, at most 50 characters, cut between words ("can't"
    gives "cant")."""
    text = re.sub(r"(?<=\w)['\u2019](?=\w)", "", name.lower())
    text = re.sub(r"[^a-z0-9\u3400-\u9fff]+", "-", text).strip("-")
    text = re.sub(r"-{2,}", "-", text)
    if len(text) > 50:
        head = text[:51].rsplit("-", 1)[0]
        text = head if len(head) <= 50 else text[:50]
        words = text.split("-")
        while len(words) > 2 and words[-1] in skill_text.FUNCTION_WORDS | skill_text.DETERMINERS:
            words.pop()  # "...-at-collection-with" ends on "collection"
        text = "-".join(words)
    return text.strip("-") or "skill"


def agent_name(slug: str) -> str:
    """The front matter's ``name``: what Claude Code accepts (lower-case letters, digits and
    hyphens, at most 64 characters), so a CJK slug keeps only its ASCII part."""
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "", slug.lower())).strip("-")[:64] or "hub-skill"


def render(draft: SkillDraft, members: dict[str, MemoryFacts], *, slug: str = "") -> str:
    """The skill as a SKILL.md document: YAML front matter (``name``, ``description``; the
    values JSON-quoted, which YAML reads as they are), then the sections."""
    def clean(line: str) -> str:
        return line.replace("\n", " ").strip()

    lines = ["---", f"name: {agent_name(slug or slug_base(draft.name))}",
             f"description: {json.dumps(clean(draft.description), ensure_ascii=False)}", "---", "",
             f"# {clean(draft.name)}", "", "## When to use", ""]
    lines += [f"- {clean(w)}" for w in draft.when_to_use] or ["- (not stated)"]
    lines += ["", "## Steps", ""]
    for i, step in enumerate(draft.steps, 1):
        lines.append(f"{i}. {clean(step)}")
        notes = draft.variants[i - 1] if i - 1 < len(draft.variants) else []
        lines += [f"    - Variant: {clean(v)}" for v in notes]  # four spaces: nested under the step everywhere
    lines += ["", "## Edge cases", ""]
    lines += [f"- {clean(e)}" for e in draft.edge_cases] or ["- (none known)"]
    cited = [members[c] for c in draft.cited if c in members]
    if cited:
        lines += ["", "## Sources", ""]
        lines += [f"- [m:{m.short}] {clean(m.summary)}" for m in cited]
    return "\n".join(lines) + "\n"


# --- offline draft -------------------------------------------------------------------------------


def draft_offline(topic: str, members: list[MemoryFacts], *, embed: Embed | None = None) -> SkillDraft:
    """Synthesised from the members (``skill_synthesis``), with the hub's embedding model
    grouping steps at its merge-candidate threshold."""
    from memories.thresholds import model_thresholds

    return synthesize(topic, members, embed=embed or _embed, group_at=model_thresholds().soft)


def _embed(texts: list[str]) -> np.ndarray:
    from memories.providers.embeddings import get_embedder

    return get_embedder().embed(texts)


# --- LLM draft -------------------------------------------------------------------------------------


def _member_listing(members: list[MemoryFacts]) -> str:
    """The members the LLM reads, most used first: 30 of them, cut to fit its context."""
    blocks = []
    for memory in sorted(members, key=lambda m: (-m.hit_count, m.id))[:30]:
        parts = [f"[m:{memory.short}] ({memory.memory_type}, used {memory.hit_count}x) {truncate_tokens(memory.content, 150)}"]
        if memory.context:
            parts.append(f"  context: {truncate_tokens(memory.context, 80)}")
        if memory.resolution:
            parts.append(f"  resolution: {truncate_tokens(memory.resolution, 150)}")
        blocks.append("\n".join(parts))
    return "\n".join(blocks)


def _strings(data: dict, key: str) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidReply(f"{key} must be a list of strings")
    return [v.strip() for v in value if v.strip()]


def _validate_draft(data: Any) -> SkillDraft:
    if not isinstance(data, dict):
        raise InvalidReply("not an object")
    if data.get("insufficient"):
        reason = data.get("reason") if isinstance(data.get("reason"), str) else "the model found too little to go on"
        return SkillDraft("", "", [], [], [], author="llm", insufficient=str(reason)[:500])
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not name.strip() or not isinstance(description, str):
        raise InvalidReply("name and description are required strings")
    return SkillDraft(name.strip()[:200], description.strip()[:1000], _strings(data, "when_to_use"),
                      _strings(data, "steps"), _strings(data, "edge_cases"), author="llm")


DRAFT_PROMPT = (
    "Write a reusable skill for AI agents from the related memories below, grounded ONLY in them. "
    "Cite the memories each line relies on with their tags, e.g. [m:1a2b3c4d]. Reply with JSON only: "
    '{"name": "...", "description": "one sentence", "when_to_use": ["..."], "steps": ["...", "...", "..."], '
    '"edge_cases": ["..."]} — or {"insufficient": true, "reason": "..."} if the memories do not support '
    "at least three concrete steps. Write in the memories' language."
)


def _draft_with_llm(topic: str, members: list[MemoryFacts]) -> SkillDraft:
    llm = get_llm()
    draft = llm.ask_json(system=DRAFT_PROMPT, user=f"Topic: {topic}\n\n{_member_listing(members)}",
                         validate=_validate_draft, max_tokens=2000, purpose="crystallize")
    draft.author = llm.model
    text = " ".join(draft.when_to_use + draft.steps + draft.edge_cases)
    by_short = {m.short: m.id for m in members}
    draft.cited = list(dict.fromkeys(by_short[s] for s in _CITE_RE.findall(text) if s in by_short))
    return draft


def _draft(topic: str, members: list[MemoryFacts]) -> SkillDraft:
    """Raises LLMError when the configured LLM fails: no offline draft stands in for it."""
    if get_llm().available:
        return _draft_with_llm(topic, members)
    return draft_offline(topic, members)


# --- checks ------------------------------------------------------------------------------------------


def _redundant_pairs(steps: list[str], embed: Embed, threshold: float) -> list[tuple[int, int, float]]:
    """Pairs of steps (1-based) more similar than ``threshold``: one step said twice."""
    if len(steps) < 2:
        return []
    # Compared as said: citations, case and end punctuation are not a difference.
    vectors = np.asarray(embed([_CITE_RE.sub("", s).strip(" .;:").casefold() for s in steps]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    sim = vectors @ vectors.T
    return [(i + 1, j + 1, round(float(sim[i, j]), 3)) for i in range(len(steps)) for j in range(i + 1, len(steps))
            if sim[i, j] > threshold]


def quality(draft: SkillDraft, body: str, *, embed: Embed | None = None) -> Check:
    """The bar: long enough, at least 3 distinct steps (no two more similar than the duplicate
    threshold), a name that is a phrase and not a keyword list, when to use, edge cases, a
    description."""
    from memories.thresholds import model_thresholds

    # Two steps as close as two duplicate memories are one step said twice (the synthesis
    # already joined those at the looser merge-candidate threshold; an LLM draft may not have).
    redundant = _redundant_pairs(draft.steps, embed or _embed, model_thresholds().duplicate)
    criteria = {
        "length": len(body) >= MIN_BODY_CHARS,
        "steps": len(draft.steps) >= MIN_STEPS,
        "distinct_steps": not redundant,
        "name": bool(draft.name.strip()) and not skill_text.is_keyword_list(draft.name),
        "when_to_use": bool(draft.when_to_use),
        "edge_cases": bool(draft.edge_cases),
        "description": bool(draft.description.strip()),
    }
    score = sum(criteria.values()) / len(criteria)
    missing = [k for k, ok in criteria.items() if not ok]
    details = {"criteria": criteria, "body_chars": len(body), "steps": len(draft.steps),
               "redundant_steps": [list(p) for p in redundant], "name_words": len(draft.name.split())}
    return Check(not missing, score, details, f"quality bar not met: {', '.join(missing)}" if missing else "")


def _claims(draft: SkillDraft) -> list[str]:
    return draft.steps + [v for notes in draft.variants for v in notes] + draft.edge_cases


# Words offline synthesis writes itself around the members' words ("Run `…`", "Also seen as").
_SCAFFOLD = {"run", "fix", "apply", "also", "seen", "variant", "setting", "error", "reads"}


def _stems(text: str, *, drop: set[str] | frozenset[str] = frozenset()) -> set[str]:
    return {skill_text.base_verb(w) or w for w in re.findall(r"\w+", text.lower()) if len(w) > 2 and w not in drop}


def _overlap(claim: str, source: str) -> float:
    """Share of the claim's words found in the source, inflections aside ("Added" in a member
    supports "Add")."""
    words = _stems(claim, drop=_SCAFFOLD)
    if not words:
        return 1.0  # only scaffold and short words: the claim asserts nothing a member must hold
    return len(words & _stems(source)) / len(words)


def verify_offline(draft: SkillDraft, members: list[MemoryFacts]) -> Check:
    """Every claim must cite a member of the cluster and its words must come from that member."""
    by_short = {m.short: m for m in members}
    results = []
    for claim in _claims(draft):
        cites = _CITE_RE.findall(claim)
        text = _CITE_RE.sub("", claim)
        sources = [by_short[c] for c in cites if c in by_short]
        support = max((_overlap(text, f"{m.content} {m.context} {m.resolution}") for m in sources), default=0.0)
        results.append({"claim": text[:200], "memory_ids": [m.id for m in sources], "supported": support >= SUPPORTED_OVERLAP,
                        "overlap": round(support, 2)})
    return _verdict(results, contradiction=False, method="offline")


def _verdict(results: list[dict], *, contradiction: bool, method: str) -> Check:
    supported = sum(1 for r in results if r["supported"])
    fraction = supported / len(results) if results else 0.0
    failed = [r["claim"][:80] for r in results if not r["supported"]]
    passed = bool(results) and not failed and not contradiction
    reason = ""
    if contradiction:
        reason = "the verifier found a contradiction between the skill and its memories"
    elif failed:
        reason = f"{len(failed)} claim(s) not supported by the memories: {'; '.join(failed[:3])}"
    elif not results:
        reason = "nothing to verify"
    return Check(passed, fraction, {"method": method, "claims": results, "contradiction": contradiction}, reason)


def _validate_verification(data: Any, count: int) -> tuple[list[dict], bool]:
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise InvalidReply("no claims list")
    if not isinstance(data.get("contradiction", False), bool):
        raise InvalidReply("contradiction must be a boolean")
    verdicts: dict[int, dict] = {}
    for item in data["claims"]:
        if not isinstance(item, dict) or not isinstance(item.get("index"), int) or not isinstance(item.get("supported"), bool):
            raise InvalidReply("each claim needs an integer index and a boolean supported")
        verdicts[item["index"]] = item
    if set(verdicts) != set(range(count)):
        raise InvalidReply("the verdicts do not cover every claim exactly")
    return [verdicts[i] for i in range(count)], bool(data.get("contradiction", False))


def _verify_with_llm(draft: SkillDraft, members: list[MemoryFacts]) -> Check:
    claims = _claims(draft)
    listing = "\n".join(f"{i}. {_CITE_RE.sub('', c)}" for i, c in enumerate(claims))
    try:
        verdicts, contradiction = get_llm().ask_json(
            system="Check each numbered claim of a skill against the memories it was written from. A claim is "
                   "supported only if the memories state it. Also say whether anything contradicts them. Reply "
                   'with JSON only: {"claims": [{"index": 0, "supported": true}], "contradiction": false}',
            user=f"Memories:\n{_member_listing(members)}\n\nClaims:\n{listing}",
            validate=lambda data: _validate_verification(data, len(claims)), max_tokens=1500, purpose="verify",
        )
    except LLMError as exc:
        # Unlike drafting, an LLM failure here is a verdict: unverified, so not published.
        return Check(False, 0.0, {"method": "llm", "error": str(exc)[:300]}, f"verification failed: {exc}"[:500])
    results = [{"claim": _CITE_RE.sub("", c)[:200], "supported": bool(v["supported"])} for c, v in zip(claims, verdicts, strict=True)]
    return _verdict(results, contradiction=contradiction, method="llm")


def _verify(draft: SkillDraft, members: list[MemoryFacts]) -> Check:
    """The LLM's claim-by-claim verdict when one is configured, else the offline check."""
    if get_llm().available:
        return _verify_with_llm(draft, members)
    return verify_offline(draft, members)
