"""A retried POST is not a second request: uploads and ingests sent with an ``Idempotency-Key``
run once per key and account; a repeat within a day gets the first answer back."""

from __future__ import annotations

import datetime

import pytest
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from core.models import IdempotentRequest
from ingestion.models import IngestJob
from memories.models import Memory, MemoryContribution

pytestmark = pytest.mark.django_db

UPLOAD = "/api/memories/upload"
BODY = {"content": "pip install fails behind the proxy: set HTTPS_PROXY for pip as well"}


def _post(api, body, key, path=UPLOAD):
    return api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_a_repeated_upload_answers_the_first_answer_and_changes_nothing(api):
    first = _post(api, BODY, "upload-1")
    again = _post(api, BODY, "upload-1")
    assert first.status_code == 201 and again.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    memory = Memory.objects.get()
    assert memory.hit_count == 1 and not MemoryContribution.objects.exists()
    # Without the key (or with a new one) the same body is a new request: it merges as before.
    assert _post(api, BODY, "upload-2").json()["merged"] is True
    assert MemoryContribution.objects.count() == 1  # (its writer's own repeat counts no use: hit_count stays 1)


def test_a_repeated_batch_merges_nothing_again(api):
    batch = {"memories": [BODY, {"content": "docker compose v2 reads compose.yaml before docker-compose.yml"}]}
    first = _post(api, batch, "batch-1")
    again = _post(api, batch, "batch-1")
    assert first.status_code == again.status_code == 200 and again.json() == first.json()
    assert first.json()["created"] == 2
    assert sorted(Memory.objects.values_list("hit_count", flat=True)) == [1, 1]


def test_the_same_key_with_another_request_is_refused(api):
    _post(api, BODY, "reused")
    response = _post(api, {"content": "a different memory altogether, about TLS certificates"}, "reused")
    assert response.status_code == 422 and response.json()["error"] == "idempotency_key_reused"
    assert Memory.objects.count() == 1


def test_a_repeat_while_the_first_runs_is_told_to_wait_and_a_dead_claim_is_taken_over(api, agent):
    first = _post(api, BODY, "busy")
    row = IdempotentRequest.objects.get(key="busy")
    IdempotentRequest.objects.filter(pk=row.pk).update(status=None, response=None)  # as if still running
    waiting = _post(api, BODY, "busy")
    assert waiting.status_code == 409 and waiting.json()["error"] == "idempotency_in_progress"
    assert int(waiting["Retry-After"]) > 0
    # A claim older than any request runs belongs to a process that died: the repeat runs.
    IdempotentRequest.objects.filter(pk=row.pk).update(created_at=timezone.now() - datetime.timedelta(minutes=11))
    taken = _post(api, BODY, "busy")
    assert taken.status_code == 200 and taken.json()["merged"] is True and first.status_code == 201


def test_keys_belong_to_one_account_and_last_a_day(api, curator_api):
    _post(api, BODY, "shared")
    assert _post(curator_api, BODY, "shared").json()["merged"] is True  # another account's key
    IdempotentRequest.objects.update(created_at=timezone.now() - datetime.timedelta(hours=25))
    assert "Idempotent-Replayed" not in _post(api, BODY, "shared")
    assert MemoryContribution.objects.count() == 2
    assert Memory.objects.get().hit_count == 2  # the other account's use; the writer's repeat counts none


def test_a_failed_request_frees_its_key(api, monkeypatch):
    from memories import services

    def down(**kwargs):
        raise OperationalError("connection lost")

    monkeypatch.setattr(services, "memory_upload", down)
    assert _post(api, BODY, "flaky").status_code == 503
    assert not IdempotentRequest.objects.filter(key="flaky").exists()
    monkeypatch.undo()
    assert _post(api, BODY, "flaky").status_code == 201


def test_a_key_must_be_short_and_not_blank(api):
    response = _post(api, BODY, "k" * 201)
    assert response.status_code == 400 and response.json()["field"] == "Idempotency-Key"
    assert not Memory.objects.exists()


def test_a_repeated_session_upload_makes_one_job(api):
    session = b'{"role": "user", "content": "hello"}\n{"role": "assistant", "content": "hi"}\n'

    def send():
        from django.core.files.uploadedfile import SimpleUploadedFile

        return api.post(reverse("ingest"), {"files": [SimpleUploadedFile("a.jsonl", session)]},
                        format="multipart", HTTP_IDEMPOTENCY_KEY="ingest-1")

    first, again = send(), send()
    assert first.status_code == again.status_code == 202
    assert again.json()["job_id"] == first.json()["job_id"] and IngestJob.objects.count() == 1


def test_text_ingest_repeated_with_its_key_stores_once(api):
    text = "Lesson: when pytest cannot import the package, set pythonpath = src in pytest.ini."
    first = _post(api, {"text": text}, "text-1", path="/api/ingest/text")
    again = _post(api, {"text": text}, "text-1", path="/api/ingest/text")
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert all(m.hit_count == 1 for m in Memory.objects.all())
