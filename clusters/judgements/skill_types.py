"""The values skill writing passes around: a member's facts, a draft, a check's outcome."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Texts in, one unit-normalisable vector per text out: the hub's embedding model, or a test's.
Embed = Callable[[list[str]], np.ndarray]


@dataclass
class MemoryFacts:
    id: str
    content: str
    context: str
    resolution: str
    hit_count: int
    memory_type: str
    summary: str
    embedding: list[float] | None = None

    @property
    def short(self) -> str:
        return self.id[:8]


@dataclass
class SkillDraft:
    name: str
    description: str
    when_to_use: list[str]
    steps: list[str]
    edge_cases: list[str]
    author: str
    insufficient: str = ""
    cited: list[str] = field(default_factory=list)
    # Other members' wordings of a step, one list per step (offline synthesis notes them).
    variants: list[list[str]] = field(default_factory=list)


@dataclass
class Check:
    passed: bool
    score: float
    details: dict[str, Any]
    reason: str = ""
