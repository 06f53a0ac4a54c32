"""The per-token rate limit: counted in the database (shared by every web process), 429 with
Retry-After over it, a separate budget per token, off with 0."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from agents.services import token_issue
from ultron_site.models import RateWindow
from ultron_site.rates import parse_rate

pytestmark = pytest.mark.django_db


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_over_the_limit_is_429_with_retry_after(settings, agent):
    settings.ULTRON_API_RATE = "3/min"
    client = _client(token_issue(agent=agent).token)
    answers = [client.get(reverse("memory-stats")) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert refused.json()["error"] == "throttled"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # another token of the same agent has its own budget
    assert _client(token_issue(agent=agent).token).get(reverse("memory-stats")).status_code == 200


def test_the_count_lives_in_the_database_and_restarts_with_the_window(settings, agent):
    """Another process sees the same row; a row from an earlier window starts again at one."""
    settings.ULTRON_API_RATE = "2/hour"
    client = _client(token_issue(agent=agent).token)
    assert client.get(reverse("memory-stats")).status_code == 200
    row = RateWindow.objects.get()
    assert row.count == 1
    RateWindow.objects.filter(pk=row.pk).update(count=2)  # as if another worker had counted one
    assert client.get(reverse("memory-stats")).status_code == 429
    RateWindow.objects.filter(pk=row.pk).update(window=row.window - 1)
    assert client.get(reverse("memory-stats")).status_code == 200
    assert RateWindow.objects.get().count == 1


def test_health_is_not_counted_and_zero_turns_the_limit_off(settings, agent):
    settings.ULTRON_API_RATE = "0"
    client = _client(token_issue(agent=agent).token)
    for _ in range(5):
        assert client.get(reverse("memory-stats")).status_code == 200
    assert not RateWindow.objects.exists()
    settings.ULTRON_API_RATE = "1/min"
    for _ in range(3):
        APIClient().get(reverse("health"))
    assert not RateWindow.objects.exists()


def test_one_statement_per_request(settings, agent):
    from django.test.utils import CaptureQueriesContext

    settings.ULTRON_API_RATE = "100/min"
    client = _client(token_issue(agent=agent).token)
    client.get(reverse("memory-stats"))
    with CaptureQueriesContext(connection) as queries:
        client.get(reverse("memory-stats"))
    assert sum("rate" in q["sql"].lower() and "window" in q["sql"].lower() for q in queries) == 1


@pytest.mark.parametrize("rate,parsed", [("6000/min", (6000, 60)), ("10/s", (10, 1)), ("5/hour", (5, 3600)),
                                         ("100/day", (100, 86400)), ("0", None), ("", None)])
def test_rates_parse(rate, parsed):
    assert parse_rate(rate) == parsed


@pytest.mark.parametrize("rate", ["fast", "10/fortnight", "/min", "x/min"])
def test_bad_rates_are_refused(rate):
    with pytest.raises(ValueError, match="N/s, N/min"):
        parse_rate(rate)
