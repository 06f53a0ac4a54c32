"""The database going away under a request (restarting, killed, the network between them
broken) is an answer the client can act on, not a 500: 503 database_unavailable with
Retry-After, in the API's error shape."""

from __future__ import annotations

import pytest
from django.db import InterfaceError, OperationalError
from django.urls import reverse


@pytest.mark.parametrize("error", [OperationalError("connection to server on socket failed: Connection refused"),
                                   InterfaceError("connection already closed")])
def test_a_lost_database_connection_is_a_503_to_retry(api, monkeypatch, error):
    def lost(**kwargs):
        raise error

    monkeypatch.setattr("memories.services.memories_search", lost)
    response = api.post(reverse("memory-search"), {"query": "docker build"}, format="json")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body["error"] == "database_unavailable" and "Retry" in body["message"]
    assert "socket" not in body["message"]  # the server's details stay in its log
