"""MEMORY.md: a space's current knowledge as one Markdown file people and agents read.

Grouped by cluster topic (the largest topics first; a topic's skill linked beside it), then by
memory type; each memory as its one-line summary with its writer, date and verified mark (and
what the poisoning screen noted), its overview (L1) and its resolution. Only current knowledge:
archived, superseded, held and rejected memories are left out. Agents drop the file into a
repository the way people keep a ``CLAUDE.md`` or ``AGENTS.md``; ``ultron search`` finds the rest.

An agent reads the file into its prompt, so the memories are framed as ``/api/context`` frames
them (``memories.evidence``): one delimited block, headed by the preface that says they are notes
to weigh, not orders; every text inside is one line with the block's delimiter defused and no
Markdown structure of its own (a leading '#', '-', '>' … escaped).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import F
from django.utils import timezone

from clusters.models import ClusterMember, KnowledgeCluster, SkillStatus
from memories.evidence import BLOCK_CLOSE, BLOCK_OPEN, PREFACE, defuse, provenance
from memories.models import Memory, Status

# The file stays readable: the most useful memories (hot first, then by hits) up to this many.
MAX_MEMORIES = 2000
TEXT_CHARS = 400

_TYPE_HEADINGS = {
    "error": "Errors and fixes", "security": "Security", "correction": "Corrections", "pattern": "Patterns",
    "preference": "Preferences", "life": "Other knowledge",
}
_TIER_ORDER = {"hot": 0, "warm": 1, "cold": 2}


def _line(text: str, limit: int = TEXT_CHARS) -> str:
    """One line of Markdown inside the evidence block: newlines folded, the block's delimiter
    defused, cut at ``limit``, a leading '#' or '-' kept as text."""
    flat = defuse(text)
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return "\\" + flat if flat[:1] in "#-*>|" and flat else flat


def _entry(memory: Memory) -> list[str]:
    """A memory's lines: its summary in bold; its overview when it says more than the summary
    and the content (an LLM's, not the extract cut from the text); its resolution."""
    summary = " ".join((memory.summary_l0 or memory.content).split())
    writer = memory.agent.name if memory.agent is not None else None
    source = provenance(writer=writer, created=memory.created_at, verified=memory.verified_at is not None,
                        flags=memory.screen_flags or [])
    lines = [f"- **{_line(summary, 200)}**{source}"]
    overview = " ".join(memory.overview_l1.split())
    content = " ".join(memory.content.split())
    resolution = " ".join(memory.resolution.split())
    if overview and not overview.startswith(content[:80]) and overview != summary:
        lines.append(f"  {_line(overview)}")
    elif content != summary:
        lines.append(f"  {_line(content)}")
    if resolution:
        lines.append(f"  Resolution: {_line(resolution)}")
    hits = f"{memory.hit_count} hit" + ("" if memory.hit_count == 1 else "s")
    lines.append(f"  <sub>{memory.tier} · {hits} · id {memory.pk}</sub>")
    return lines


def knowledge_markdown(*, space_ids: list[int], space_slugs: list[str], skill_url: Any = None) -> str:
    """The MEMORY.md of the active memories of ``space_ids`` (named ``space_slugs`` in its
    header). ``skill_url(slug)``: where a topic's skill is read (None: its slug only)."""
    memories = list(
        Memory.objects.filter(space_id__in=space_ids, status=Status.ACTIVE)
        .select_related("agent")
        .only("pk", "memory_type", "tier", "hit_count", "summary_l0", "overview_l1", "content", "resolution",
              "created_at", "verified_at", "screen_flags", "agent__name")
        .order_by("-hit_count", "-created_at")[:MAX_MEMORIES]
    )
    total = Memory.objects.filter(space_id__in=space_ids, status=Status.ACTIVE).count()
    placed = dict(ClusterMember.objects.filter(memory_id__in=[m.pk for m in memories])
                  .values_list("memory_id", "cluster_id"))
    clusters = {c.pk: c for c in KnowledgeCluster.objects.filter(pk__in=set(placed.values()))
                .select_related("skill").defer("centroid", "direction").order_by(F("member_count").desc(), "pk")}
    groups: dict[int | None, list[Memory]] = defaultdict(list)
    for memory in memories:
        groups[placed.get(memory.pk)].append(memory)
    order = sorted((key for key in groups if key is not None),
                   key=lambda key: (-len(groups[key]), clusters[key].topic or "", key))
    now = timezone.now().strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# MEMORY.md — shared knowledge from Ultron Hub",
        "",
        f"Exported {now} from {', '.join(space_slugs) or 'no space'}: {len(memories)} current memories"
        + (f" (the {len(memories)} most used of {total})" if total > len(memories) else "")
        + f" in {len(order)} topics. Superseded, archived and held memories are left out.",
        "",
    ]
    if not memories:
        return "\n".join(out).rstrip() + "\n"
    out += [BLOCK_OPEN, "", PREFACE, ""]
    for key in [*order, None]:
        if key not in groups:
            continue
        cluster = clusters.get(key) if key is not None else None
        out.append(f"## {_line(cluster.topic or f'Topic {cluster.pk}', 120) if cluster else 'Not yet in a topic'}")
        out.append("")
        skill = cluster.skill if cluster is not None else None
        if skill is not None and skill.status == SkillStatus.PUBLISHED:
            where = f" — {skill_url(skill.slug)}" if skill_url else ""
            out += [f"Skill: **{skill.slug}** ({_line(skill.name, 120)}){where}", ""]
        by_type: dict[str, list[Memory]] = defaultdict(list)
        for memory in groups[key]:
            by_type[memory.memory_type].append(memory)
        for memory_type, heading in _TYPE_HEADINGS.items():
            if memory_type not in by_type:
                continue
            out += [f"### {heading}", ""]
            for memory in sorted(by_type[memory_type], key=lambda m: (_TIER_ORDER.get(m.tier, 3), -m.hit_count)):
                out += _entry(memory)
            out.append("")
    out.append(BLOCK_CLOSE)
    return "\n".join(out).rstrip() + "\n"
