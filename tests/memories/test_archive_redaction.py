"""The raw archive's redaction (memories/redaction/archive.py): each JSON string read as the text it
decodes to, then each object or array whose names give its values a context read as one text."""

from __future__ import annotations

import json

import pytest

from memories.redaction.archive import archive_redact

pytestmark = pytest.mark.django_db

PASSWORD = "Tr0ub4dor&3xyz"
TOKEN = "q8ZkP2vN7wLx4RtY9sJd"


def _lines(*rows: dict) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


def _archived(*rows: dict) -> list:
    return [json.loads(line) for line in archive_redact(_lines(*rows)).split("\n")]


def test_a_value_is_read_beside_the_key_that_names_it():
    rows = _archived({"type": "tool_use", "input": {"env": {"DB_PASSWORD": PASSWORD, "DB_HOST": "db.internal"}}},
                     {"cwd": "/srv/app", "settings": {"password": PASSWORD}})
    text = json.dumps(rows)
    assert PASSWORD not in text
    assert rows[0]["input"]["env"]["DB_HOST"] == "db.internal" and rows[1]["cwd"] == "/srv/app"


def test_a_value_is_read_beside_the_neighbour_that_names_it():
    [row] = _archived({"env": [{"name": "API_TOKEN", "value": TOKEN}, {"name": "REGION", "value": "eu-west-1"}]})
    assert TOKEN not in json.dumps(row) and row["env"][0]["name"] == "API_TOKEN"
    assert row["env"][1] == {"name": "REGION", "value": "eu-west-1"}


def test_a_command_given_as_an_array_is_read_as_its_command_line():
    [row] = _archived({"argv": ["mysql", "-u", "root", f"-p{PASSWORD}", "appdb"]})
    assert PASSWORD not in json.dumps(row)
    assert row["argv"][:3] == ["mysql", "-u", "root"] and row["argv"][-1] == "appdb"


def test_a_long_value_under_a_key_that_names_a_secret_is_read_with_its_key():
    key = "".join(f"Zq{i}x" for i in range(60))  # 240+ characters: longer than a value read beside its key
    [row] = _archived({"private_key": key, "note": "rotated"})
    assert key[:40] not in json.dumps(row) and row["note"] == "rotated"


def test_keys_are_redacted_too_and_two_that_redact_alike_both_stay():
    first, second = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    [row] = _archived({first: 1, second: 2, "plain": 3})
    text = json.dumps(row)
    assert first not in text and second not in text
    assert sorted(row.values()) == [1, 2, 3]


def test_ordinary_session_metadata_is_left_as_it_is():
    """Usage counters named ``…_tokens`` and the session's own id are no credentials."""
    rows = [{"sessionId": "55604662-cf2a-4331-851a-ec234028f8ca", "version": "2.1.38", "cwd": "/srv/app",
             "message": {"usage": {"input_tokens": 3, "cache_creation_input_tokens": 13835,
                                   "cache_read_input_tokens": 11515}}}]
    [row] = _archived(*rows)
    assert row["message"] == rows[0]["message"] and row["version"] == "2.1.38" and row["cwd"] == "/srv/app"


def test_lines_that_are_not_json_are_read_as_they_are():
    text = archive_redact(f"export DB_PASSWORD={PASSWORD}\n{{\"ok\": true}}\nplain line".encode())
    assert PASSWORD not in text and text.split("\n")[1:] == ['{"ok": true}', "plain line"]
