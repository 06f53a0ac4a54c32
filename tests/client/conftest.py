"""The client, CLI and MCP server against a live hub: pytest-django's ``live_server`` serves the
real Django application over loopback in a thread, with its own database connections, so the
tests that use it run in transactions that are really committed (``transaction=True``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass
class Hub:
    url: str
    token: str


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    """No test reads the person's own login or environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ULTRON_URL", raising=False)
    monkeypatch.delenv("ULTRON_TOKEN", raising=False)


@pytest.fixture
def hub(live_server, agent_token, monkeypatch) -> Hub:
    """The live hub, with ULTRON_URL / ULTRON_TOKEN set for an ordinary agent; warm, as
    ``make run`` serves it."""
    from ultron_site.warmup import warm_up

    warm_up()
    monkeypatch.setenv("ULTRON_URL", live_server.url)
    monkeypatch.setenv("ULTRON_TOKEN", agent_token)
    return Hub(url=live_server.url, token=agent_token)


@pytest.fixture
def skill(hub) -> str:
    """A skill published from a cluster of six memories, as the pipeline's crystallization does
    it offline; its slug."""
    from clusters.services import cluster_crystallize
    from memories.services import embedding_space_ensure
    from tests.clusters.test_services import _fill

    embedding_space_ensure()
    members = _fill(6)
    version = cluster_crystallize(cluster_id=members[0].cluster_member.cluster_id)
    assert version is not None and version.status == "published"
    return version.skill.slug
