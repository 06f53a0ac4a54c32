"""Reads of agents."""

from __future__ import annotations

from agents.models import Agent


def agent_by_name(*, name: str) -> Agent | None:
    return Agent.objects.select_related("user").filter(name=name).first()
