from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents.services import agent_create
from ingestion.models import RawUpload, SessionRecord
from memories.models import Memory
from tests.ingestion.test_services import DOCKER_TASK, jsonl

pytestmark = pytest.mark.django_db


def upload(client, *files, **extra):
    data = {"files": [SimpleUploadedFile(name, content, content_type="application/x-ndjson") for name, content in files]}
    data.update(extra)
    return client.post(reverse("ingest"), data, format="multipart")


def test_ingest_needs_a_token(outsider_api):
    assert upload(outsider_api, ("a.jsonl", jsonl(DOCKER_TASK))).status_code == 401


def test_multipart_upload_returns_at_once_with_a_job_to_follow(api, agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api, ("run-1.jsonl", jsonl(DOCKER_TASK)), ("broken.jsonl", b"{nope\n"),
                          names=["~/sessions/run-1.jsonl", "~/sessions/broken.jsonl"])
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["total_files"] == 2
    first, second = body["files"]
    assert first["name"] == "~/sessions/run-1.jsonl" and first["status"] == "new" and first["messages"] == 8
    assert second["status"] == "skipped" and second["malformed"] == {"bad JSON": 1}
    assert SessionRecord.objects.get().identity == "~/sessions/run-1.jsonl"
    progress = api.get(reverse("ingest-job", args=[body["job_id"]])).json()
    assert progress["done"] and progress["segments"] == 1 and progress["extracted"] == 1
    assert progress["memories"] >= 1 and progress["errors"] == 0
    again = upload(api, ("run-1.jsonl", jsonl(DOCKER_TASK)), names=["~/sessions/run-1.jsonl"]).json()
    assert again["files"][0]["status"] == "unchanged"


def test_other_agents_jobs_are_not_visible(api, curator_api):
    job_id = upload(curator_api, ("x.jsonl", jsonl(DOCKER_TASK))).json()["job_id"]
    assert api.get(reverse("ingest-job", args=[job_id])).status_code == 404
    assert curator_api.get(reverse("ingest-job", args=[job_id])).status_code == 200


def test_only_staff_may_ingest_for_another_agent(api, curator_api):
    other = agent_create(name="other-bot")
    refused = upload(api, ("a.jsonl", jsonl(DOCKER_TASK)), agent="other-bot")
    assert refused.status_code == 403 and refused.json()["field"] == "agent"
    response = upload(curator_api, ("a.jsonl", jsonl(DOCKER_TASK)), agent="other-bot")
    assert response.status_code == 202
    assert SessionRecord.objects.get().agent == other


def test_non_jsonl_and_oversized_uploads(api, settings):
    assert upload(api, ("notes.txt", b"hello")).status_code == 400
    settings.ULTRON_INGEST_MAX_FILE_BYTES = 2000
    assert upload(api, ("big.jsonl", b'{"role": "user", "content": "' + b"x" * 5000 + b'"}')).status_code == 413
    assert RawUpload.objects.count() == 0


def test_request_size_limit_is_checked_before_reading(api, settings):
    settings.ULTRON_INGEST_MAX_REQUEST_BYTES = 1024
    response = upload(api, ("big.jsonl", b"x" * 4096))
    assert response.status_code == 413 and response.json()["error"] == "too_large"


def test_paths_are_refused_without_ingest_roots(api, settings):
    settings.ULTRON_INGEST_ROOTS = []
    response = api.post(reverse("ingest"), {"paths": ["/etc/passwd"]}, format="json")
    assert response.status_code == 403 and "ULTRON_INGEST_ROOTS" in response.json()["message"]


def test_paths_inside_the_roots_are_ingested_and_escapes_refused(api, settings, tmp_path):
    root = tmp_path / "sessions"
    root.mkdir()
    (root / "a.jsonl").write_bytes(jsonl(DOCKER_TASK))
    (tmp_path / "outside.jsonl").write_bytes(jsonl(DOCKER_TASK))
    settings.ULTRON_INGEST_ROOTS = [str(root)]
    ok = api.post(reverse("ingest"), {"paths": [str(root)]}, format="json")
    assert ok.status_code == 202 and ok.json()["files"][0]["status"] == "new"
    for hostile in [str(tmp_path / "outside.jsonl"), str(root / ".." / "outside.jsonl"), "/etc/passwd"]:
        response = api.post(reverse("ingest"), {"paths": [hostile]}, format="json")
        assert response.status_code == 403 and response.json()["field"] == "paths", hostile
    assert api.post(reverse("ingest"), {"paths": "not-a-list"}, format="json").status_code == 400


def test_ingest_text_extracts_and_uploads(api):
    response = api.post(reverse("ingest-text"), {"text": (
        "Error: psql could not connect to server: No such file or directory\n"
        "Cause: the socket lives in the data directory, not /var/run\nFix: pass -h <data dir> to psql"
    )}, format="json")
    assert response.status_code == 201, response.content
    memories = response.json()["memories"]
    assert len(memories) == 1 and memories[0]["merged"] is False
    assert Memory.objects.get(pk=memories[0]["id"]).resolution.startswith("pass -h")
    assert RawUpload.objects.filter(kind="text").count() == 1


@pytest.mark.parametrize("payload", [{}, {"text": ""}, {"text": "   "}, {"text": 12}, {"text": ["a"]}])
def test_bad_ingest_text_is_a_400(api, payload):
    response = api.post(reverse("ingest-text"), payload, format="json")
    assert response.status_code == 400 and response.json()["field"] == "text"


def test_ingest_text_too_long_is_413(api, settings):
    settings.ULTRON_INGEST_MAX_TEXT_CHARS = 100
    assert api.post(reverse("ingest-text"), {"text": "x" * 200}, format="json").status_code == 413


def test_malformed_json_bodies_never_500(api):
    for raw in (b"{bad", b"[]", b"null"):
        response = api.generic("POST", reverse("ingest"), raw, content_type="application/json")
        assert response.status_code == 400, raw  # refused as a bad body, before the roots are looked at
    response = api.generic("POST", reverse("ingest-text"), json.dumps({"text": None}), content_type="application/json")
    assert response.status_code == 400
