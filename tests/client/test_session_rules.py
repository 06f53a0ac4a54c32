"""The client decides on the agent's machine which files it sends; the hub decides again on
arrival. Both must say the same, or the client uploads files the hub skips (or leaves behind
files the hub would read). The client cannot import the server, so its rules are a copy: this
test keeps the copy in step."""

from __future__ import annotations

from pathlib import Path

import pytest
from ultron import sessions as client_rules

from ingestion import formats as server_rules

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_client_accepts_and_walks_the_same_extensions_as_the_hub():
    assert tuple(client_rules.SESSION_EXTENSIONS) == tuple(server_rules.SESSION_EXTENSIONS)
    assert client_rules.AIDER_HISTORY == server_rules.AIDER_HISTORY
    from ingestion.formats import detect

    # What marks a .json file as a session when a directory is walked.
    assert set(client_rules._SNIFF_MARKERS) == set(detect._SNIFF_MARKERS)


@pytest.mark.parametrize("name, head", [
    ("run.jsonl", b'{"type": "user"}'), ("RUN.JSONL", b""), ("t.traj", b"{}"), ("x.aider.chat.history.md", b"# aider"),
    ("notes.md", b"# notes"), ("data.json", b'{"sessionId": "1", "messages": []}'), ("package.json", b'{"name": "x"}'),
    ("list.json", b'[{"role": "user", "content": "hi"}]'), ("bom.json", b'\xef\xbb\xbf{"messages": []}'),
    ("image.png", b"\x89PNG"), ("empty.json", b""), ("text.json", b"not json"),
])
def test_the_client_walks_a_file_exactly_when_the_hub_would(tmp_path, name, head):
    path = tmp_path / name
    path.write_bytes(head)
    assert client_rules.walk_includes(path) == server_rules.walk_includes(path), name


def test_every_sample_session_of_every_format_is_walked_by_both():
    for path in sorted((DATA / "formats").iterdir()):
        assert client_rules.walk_includes(path) == server_rules.walk_includes(path), path.name


def test_the_clients_batches_fit_the_hubs_default_limits():
    """The client splits an upload into requests the hub takes as it is shipped: each within the
    default request size (``ULTRON_INGEST_MAX_REQUEST_BYTES``) and Django's file count per
    multipart request."""
    from django.conf import settings

    from ultron_site.env import REGISTRY

    assert client_rules.DEFAULT_BATCH_BYTES <= REGISTRY["ULTRON_INGEST_MAX_REQUEST_BYTES"].default
    assert client_rules.DEFAULT_BATCH_FILES <= settings.DATA_UPLOAD_MAX_NUMBER_FILES
