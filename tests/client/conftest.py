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


@pytest.fixture(autouse=True)
def _roles_back_after_flush(request):
    """A transactional test ends by emptying every table, the data migration's groups too;
    the tests after it expect them."""
    yield
    if "live_server" in request.fixturenames:
        from django.apps import apps

        from ultron_site.roles import groups_sync

        groups_sync(apps)


@pytest.fixture
def hub(live_server, agent_token, monkeypatch) -> Hub:
    """The live hub, with ULTRON_URL / ULTRON_TOKEN set for an ordinary agent."""
    monkeypatch.setenv("ULTRON_URL", live_server.url)
    monkeypatch.setenv("ULTRON_TOKEN", agent_token)
    return Hub(url=live_server.url, token=agent_token)
