"""The plainest lessons, learned offline end to end: a fix the user confirmed (in plain chat, or by
a passing rerun), a how-to the user confirmed, a preference stated as lasting — and nothing from
a fix that did not work, a success only claimed, a thanked explanation, or "always" that only
describes something.

Each session of tests/data/sessions_plain (OpenAI chat, Anthropic Messages and Claude Code
shapes; labels in its labels.json, written without reading the extractor) goes through
``POST /api/ingest`` and the worker (the queue runs inline in tests), with no LLM configured;
the memories are then read back through the API. Pairs ``X.v1.jsonl`` / ``X.v2.jsonl`` are
uploaded one after the other under the same name, as a client re-sending a session that grew.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ingestion.models import TaskSegment

pytestmark = pytest.mark.django_db

PLAIN = Path(__file__).resolve().parent.parent / "data" / "sessions_plain"
LABELS = json.loads((PLAIN / "labels.json").read_text())


def _sessions() -> dict[str, list[dict]]:
    """Labels by session name, each session's parts in upload order (v1 before v2)."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for label in LABELS:
        grouped[re.sub(r"\.v\d+(?=\.jsonl$)", "", label["file"])].append(label)
    return {name: sorted(parts, key=lambda part: part["file"]) for name, parts in sorted(grouped.items())}


SESSIONS = _sessions()


def _ingest(api, name: str, data: bytes, capture) -> dict:
    with capture(execute=True):  # the queued pipeline task runs when the upload commits
        response = api.post(reverse("ingest"), {
            "files": [SimpleUploadedFile(Path(name).name, data, content_type="application/x-ndjson")],
            "names": [f"~/sessions/{name}"],
        }, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()


def _memories(api) -> list[dict]:
    listed = api.get(reverse("memory-list"), {"limit": 200}).json()["results"]
    if not listed:
        return []
    response = api.post(reverse("memory-details"), {"ids": [m["id"] for m in listed]}, format="json")
    assert response.status_code == 200, response.content
    return [m for m in response.json()["memories"] if m["status"] == "active"]


def _types(value: str | list[str]) -> set[str]:
    return {value} if isinstance(value, str) else set(value)


def _text(memory: dict) -> str:
    return f"{memory['content']} {memory['context']} {memory['resolution']}".lower()


def _check(label: dict, memories: list[dict]) -> list[str]:
    problems = []
    for expected in label["expected"]:
        if not any(m["memory_type"] in _types(expected["type"])
                   and all(any(word in _text(m) for word in group) for group in expected["any_of_keywords"])
                   for m in memories):
            problems.append(f"{label['file']}: no {expected['type']} memory saying {expected['any_of_keywords']}")
    for forbidden in label["forbidden"]:
        for memory in memories:
            if memory["memory_type"] in _types(forbidden["type"]) and all(w in _text(memory) for w in forbidden["keywords"]):
                problems.append(f"{label['file']}: learned what it should not ({forbidden['why']}): {memory['content'][:120]}")
    return problems


@pytest.mark.parametrize("name", list(SESSIONS))
def test_plain_lessons_are_learned_offline_through_the_api(api, django_capture_on_commit_callbacks, name):
    problems = []
    for part in SESSIONS[name]:
        body = _ingest(api, name, (PLAIN / part["file"]).read_bytes(), django_capture_on_commit_callbacks)
        assert body["files"][0]["status"] in ("new", "changed"), body
        progress = api.get(reverse("ingest-job", args=[body["job_id"]])).json()
        assert progress["done"] and progress["errors"] == 0, progress
        problems += _check(part, _memories(api))
    assert not problems, "\n".join(problems)


def test_the_plain_set_holds_every_shape_in_every_format():
    """The set is what the tests above claim to cover: each shape in at least two formats, several
    wordings each, appended parts in every format."""
    formats_by_shape: dict[str, set[str]] = defaultdict(set)
    for label in LABELS:
        for shape in label["shapes"]:
            formats_by_shape[shape].add(label["format"])
    assert set(formats_by_shape) >= set("ABCDEFG")
    assert all(len(formats) >= 2 for formats in formats_by_shape.values()), formats_by_shape
    assert formats_by_shape["F"] == {"openai", "anthropic", "claude_code"}
    preferences = [e for label in LABELS for e in label["expected"] if e["type"] == "preference"]
    assert len({json.dumps(e["any_of_keywords"]) for e in preferences}) >= 8


def test_a_segment_that_gives_no_memory_says_why_on_its_page_and_on_the_job_page(
        api, django_capture_on_commit_callbacks, admin_client):
    """A fix the user says did not work: nothing is learned, and a curator can read why."""
    body = _ingest(api, "oa08_ssh_port22_still_failing.jsonl",
                   (PLAIN / "oa08_ssh_port22_still_failing.jsonl").read_bytes(), django_capture_on_commit_callbacks)
    assert _memories(api) == []
    segments = list(TaskSegment.objects.all())
    assert segments and all(segment.notes for segment in segments)
    assert any("not eligible" in segment.notes[0] or "nothing extracted" in segment.notes[0] for segment in segments)
    job_page = admin_client.get(reverse("admin:ingestion_ingestjob_change", args=[body["job_id"]]))
    assert job_page.status_code == 200
    page = job_page.content.decode()
    assert "gave no memory" in page and segments[0].notes[0].split(":")[0] in page
    segment_page = admin_client.get(reverse("admin:ingestion_tasksegment_change", args=[segments[0].pk]))
    assert segment_page.status_code == 200
    assert "No memory came from this segment" in segment_page.content.decode()


def test_a_segment_page_lists_the_memories_it_gave(api, django_capture_on_commit_callbacks, admin_client):
    _ingest(api, "oa01_pg_too_many_connections.jsonl", (PLAIN / "oa01_pg_too_many_connections.jsonl").read_bytes(),
            django_capture_on_commit_callbacks)
    [memory] = [m for m in _memories(api) if m["memory_type"] == "error"]
    segment = TaskSegment.objects.get(memory_links__memory_id=memory["id"])
    page = admin_client.get(reverse("admin:ingestion_tasksegment_change", args=[segment.pk])).content.decode()
    assert reverse("admin:memories_memory_change", args=[memory["id"]]) in page
    assert "a fix the user confirmed" in page  # the evidence the score rests on
