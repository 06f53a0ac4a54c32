"""The hub needs pgvector 0.8 (filters applied during the index scan): an older one is refused
by `migrate` (so `make run` does not start) and by /api/health, with the versions named."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse

from ultron_site import health
from ultron_site.health import pgvector_refusal, pgvector_versions


def test_the_test_database_has_a_new_enough_pgvector(db):
    installed, available = pgvector_versions()
    assert pgvector_refusal(installed, available) is None
    assert health._version(installed) >= (0, 8, 0)


@pytest.mark.parametrize(("installed", "available", "said"), [
    ("0.6.2", "0.8.5", "pgvector 0.6.2 is installed in the database but the hub needs 0.8.0 or later; the server "
                       "has 0.8.5: run ALTER EXTENSION vector UPDATE"),
    ("0.7.4", "0.7.4", "pgvector 0.7.4 is installed but the hub needs 0.8.0 or later: upgrade the extension"),
    (None, "0.5.1", "the database server offers pgvector 0.5.1 but the hub needs 0.8.0 or later"),
    (None, None, "the database server has no pgvector extension"),
])
def test_an_old_or_missing_pgvector_is_refused_with_the_versions_named(installed, available, said):
    assert said in pgvector_refusal(installed, available)


@pytest.mark.parametrize(("installed", "available"), [("0.8.0", "0.8.0"), ("0.8.5", "0.9.1"), (None, "0.8.5"),
                                                       ("0.10.0", "0.10.0")])
def test_pgvector_from_0_8_is_accepted(installed, available):
    assert pgvector_refusal(installed, available) is None


def test_migrate_and_health_refuse_an_old_pgvector(db, client, monkeypatch):
    monkeypatch.setattr(health, "pgvector_versions", lambda: ("0.6.2", "0.6.2"))
    from ultron_site import checks

    monkeypatch.setattr(checks, "pgvector_versions", lambda: ("0.6.2", "0.6.2"))
    with pytest.raises(SystemCheckError, match=r"ultron\.E001.*pgvector 0\.6\.2 is installed but the hub needs 0\.8\.0"):
        call_command("check", databases=["default"])
    response = client.get(reverse("health"))
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded" and body["database"]["ok"] is False
    assert "pgvector 0.6.2 is installed but the hub needs 0.8.0 or later" in body["database"]["error"]
