"""A query parameter an operation does not declare is refused, naming it (core/query.py)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.query import _declared_parameters, operation_path

pytestmark = pytest.mark.django_db


def test_a_typo_in_a_query_parameter_is_a_400_naming_it(api):
    response = api.get("/api/memories/?space=shared")  # the parameter is "spaces"
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "space" and "spaces" in body["message"], body
    assert api.get("/api/memories/?spaces=shared&limit=2").status_code == 200
    assert api.get("/api/clusters?min_size=2&spaces=shared").status_code == 200


def test_every_operation_of_the_schema_is_known_to_the_check(api):
    """The check reads the same schema clients do: each GET of the schema has its entry."""
    from django.urls import get_resolver

    declared = _declared_parameters()
    assert ("/api/memories/", "GET") in declared and "tier" in declared[("/api/memories/", "GET")]
    assert operation_path("api/clusters/<int:cluster_id>") == "/api/clusters/{cluster_id}"
    assert get_resolver().resolve("/api/clusters/1").route == "api/clusters/<int:cluster_id>"


def test_without_a_token_the_answer_is_401_not_the_parameter_list(client):
    response = client.get("/api/memories/?nonsense=1")
    assert response.status_code == 401


def test_a_session_sent_as_a_form_field_is_ingested_like_a_file(api):
    """``curl -F "files=<run.jsonl"`` sends the file's text as a field, not a file part."""
    line = '{"role": "user", "content": "The build failed with ENOSPC until the cache was pruned."}'
    response = api.post("/api/ingest", {"files": line}, format="multipart")
    assert response.status_code == 202, response.content
    [result] = response.json()["files"]
    assert result["name"].startswith("upload-") and result["name"].endswith(".jsonl")
    again = api.post("/api/ingest", {"files": [SimpleUploadedFile(result["name"], line.encode())]}, format="multipart")
    assert again.json()["files"][0]["session_id"] == result["session_id"]


def test_a_batch_upload_ignores_keys_it_does_not_know_as_one_memory_does(api):
    body = {"memories": [{"content": "Pin the psycopg pool size below max_connections / workers."}], "extra": 1}
    assert api.post("/api/memories/upload", body, format="json").status_code == 200
    mixed = {"memories": body["memories"], "content": "one memory's field"}
    assert api.post("/api/memories/upload", mixed, format="json").status_code == 400
