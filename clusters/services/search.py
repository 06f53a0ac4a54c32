"""Skill search for agents: the query is redacted and embedded like a memory search's."""

from __future__ import annotations

from typing import Any

from clusters import selectors
from clusters.models import Skill
from memories.redaction.policy import Occasion, redact_one_for
from memories.services import embed_texts


def skills_search(*, query: str, limit: int, space_ids: list[int] | None = None) -> list[tuple[Skill, float]]:
    """Published skills of ``space_ids`` nearest to ``query``, with their cosine similarity."""
    vector = embed_texts([redact_one_for(Occasion.QUERY, query).text])[0]
    return selectors.skill_search(vector=vector, limit=limit, space_ids=space_ids)


def skill_search_text(version: Any) -> str:
    """What a published skill version is embedded as for skill search: name, description and
    the body's first 2,000 characters. ``version``: a ``SkillVersion``, or an imported version's
    data with those three attributes."""
    return f"{version.name}\n{version.description}\n{version.body[:2000]}"
