"""Ready means ready: /api/health says `warming` (503) until the process has loaded its models,
then `ok`; a warm-up that fails makes it `degraded`, with the reason."""

from __future__ import annotations

import threading
import time

import pytest
from django.urls import reverse

from ultron_site import warmup


def _wait_for(state: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while warmup.warm_state()[0] != state:
        assert time.monotonic() < deadline, warmup.warm_state()
        time.sleep(0.02)


@pytest.fixture
def cold(monkeypatch):
    """This process as if nothing had warmed it (the real state comes back afterwards)."""
    monkeypatch.setattr(warmup, "_state", warmup.COLD)
    monkeypatch.setattr(warmup, "_error", "")


def test_health_says_warming_until_the_models_are_loaded(db, client, cold, monkeypatch):
    release = threading.Event()
    loaded = []
    monkeypatch.setattr(warmup, "_load", lambda: (release.wait(10), loaded.append(True)))
    response = client.get(reverse("health"))  # the first check starts the warm-up
    assert response.status_code == 503
    assert response.json()["status"] == "warming" and response.json()["warm"] == {"state": "warming"}
    assert client.get(reverse("health")).json()["status"] == "warming"  # one warm-up, not one per check
    release.set()
    _wait_for(warmup.READY)
    response = client.get(reverse("health"))
    assert response.status_code == 200 and response.json()["status"] == "ok" and loaded == [True]
    assert response.json()["warm"] == {"state": "ready"}


def test_a_failed_warm_up_is_degraded_with_its_reason(db, client, cold, monkeypatch):
    def broken() -> None:
        raise OSError("the model file is unreadable")

    monkeypatch.setattr(warmup, "_load", broken)
    client.get(reverse("health"))
    _wait_for(warmup.FAILED)
    response = client.get(reverse("health"))
    assert response.status_code == 503 and response.json()["status"] == "degraded"
    assert response.json()["warm"] == {"state": "failed", "error": "OSError: the model file is unreadable"}


def test_warm_up_loads_what_a_first_request_needs(cold):
    from memories.judgements import prototypes
    from memories.redaction import presidio_engine

    seconds = warmup.warm_up()
    assert warmup.warm_state() == (warmup.READY, "") and seconds >= 0
    assert presidio_engine._analyzer is not None and prototypes._cache
