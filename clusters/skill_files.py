"""A skill as files an agent installs (docs/api.md#download-a-skill): its SKILL.md alone, or a
folder — ``<slug>/SKILL.md`` and ``<slug>/references/memories.md`` with the full text of
every memory the skill cites — as a zip. Claude Code reads such a folder from
``~/.claude/skills/<slug>/`` or ``.claude/skills/<slug>/``."""

from __future__ import annotations

import io
import re
import zipfile

from clusters.models import Skill, SkillVersion
from memories.models import Memory

_CITE_RE = re.compile(r"\[m:([0-9a-f]{8})\]")
REFERENCES = "references/memories.md"


def skill_version_for_download(skill: Skill, *, include_unpublished: bool) -> SkillVersion | None:
    """The published version; a curator also gets the newest one of a skill never published."""
    if skill.current_version_id is not None:
        return skill.current_version
    if include_unpublished:
        return skill.versions.order_by("-version").first()
    return None


def cited_memories(version: SkillVersion) -> list[Memory]:
    """The memories the version's lines cite, in the order they are first cited (archived ones
    too: the skill was written from them)."""
    shorts = list(dict.fromkeys(_CITE_RE.findall(version.body)))
    ids = [m for m in version.memory_ids if str(m)[:8] in shorts]
    found = {str(m.pk)[:8]: m for m in Memory.objects.filter(pk__in=ids).defer("embedding", "search_vector")}
    return [found[s] for s in shorts if s in found]


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines()) or "> (empty)"


def memories_markdown(version: SkillVersion, memories: list[Memory]) -> str:
    """The cited memories in full, each under the tag the skill cites it by."""
    lines = [f"# Memories cited by {version.skill.slug} (version {version.version})", "",
             "Each skill line cites the memories it came from as `[m:<first 8 hex digits of the id>]`.", ""]
    for memory in memories:
        lines += [f"## m:{str(memory.pk)[:8]}", "",
                  f"- id: `{memory.pk}`", f"- type: {memory.memory_type}; status: {memory.status}; "
                  f"used {memory.hit_count} times", "", "**Content**", "", _quoted(memory.content), ""]
        for title, text in (("Context", memory.context), ("Resolution", memory.resolution)):
            if text.strip():
                lines += [f"**{title}**", "", _quoted(text), ""]
    return "\n".join(lines).rstrip() + "\n"


def skill_package(version: SkillVersion) -> bytes:
    """The skill as a folder in a zip: SKILL.md (pointing to its references) and the cited
    memories."""
    slug = version.skill.slug
    body = version.body.rstrip("\n") + f"\n\nThe cited memories in full: [{REFERENCES}]({REFERENCES}).\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{slug}/SKILL.md", body)
        archive.writestr(f"{slug}/{REFERENCES}", memories_markdown(version, cited_memories(version)))
    return buffer.getvalue()
