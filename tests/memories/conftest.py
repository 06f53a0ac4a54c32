"""Fixtures of the memory service's review tests: thresholds under which nothing merges or is
proposed by itself, and a curator of the shared space logged in."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.test import Client

from tests.spaces import curate_shared
from ultron_site.people import person_create


@pytest.fixture
def apart(settings):
    """Thresholds that neither merge nor propose anything by themselves: the candidates are made here."""
    settings.ULTRON_DUPLICATE_THRESHOLD = settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.9999


@pytest.fixture
def quinn(db):
    person = person_create(username="quinn", role="curator", password_once=False)
    curate_shared(get_user_model().objects.get(username="quinn"))
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client
