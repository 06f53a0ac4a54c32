"""Training data export: ``GET /api/trajectories/export`` and ``manage.py export_sft``."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from ingestion import services
from ingestion.models import SessionRecord, TaskSegment, WorkState
from ingestion.parsing import parse_jsonl
from ingestion.training import chat_messages

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAZ7Q2XKLMN3PRST4V"
GITHUB_TOKEN = "ghp_" + "Xq7Rm2Kp9Lw4Tz8Bn5Vc1Hd6Jf3Gs0Ya2Ue7"
SECRETS = (AWS_KEY, GITHUB_TOKEN)

DEPLOY_TASK = [
    {"role": "user", "content": f"The deploy job fails. CI prints AWS_ACCESS_KEY_ID={AWS_KEY}; please fix the push."},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "Check the remote first."}]},
    {"role": "assistant", "content": "Let me look at the remote and push again."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01A", "name": "Bash",
                                       "input": {"command": f"git push https://bot:{GITHUB_TOKEN}@github.com/acme/app"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "is_error": True,
                                  "content": f"error: 403 for key {AWS_KEY}: remote rejected the push"}]},
    {"role": "assistant", "content": "The token lacks the workflow scope; I switched the remote to SSH."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01B", "name": "Bash",
                                       "input": {"command": "git remote set-url origin git@github.com:acme/app.git"}}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01C", "name": "Bash",
                                       "input": {"command": "git push origin main"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01B", "content": ""}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01C",
                                  "content": "To github.com:acme/app.git\n   3f2a..9c1d  main -> main"}]},
    {"role": "assistant", "content": "Pushed: the deploy job passes now."},
]


def jsonl(rows) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def raw_messages(rows) -> list[dict]:
    """The rows as ingestion stores a segment's messages, but not redacted (as a segment stored
    before a redaction rule existed would be)."""
    return [m.as_dict() for m in parse_jsonl(jsonl(rows)).messages]


def stored_segment(agent, rows, *, score=0.9, task_type="debugging", identity="s.jsonl", messages=None):
    session, _ = SessionRecord.objects.get_or_create(agent=agent, identity=identity, defaults={"sha256": "0" * 64})
    index = session.segments.count()
    messages = raw_messages(rows) if messages is None else messages
    return TaskSegment.objects.create(
        session=session, index=index, start_message=0, end_message=len(messages), topic="t",
        fingerprint=f"{index:016x}", messages=messages, score=score, task_type=task_type,
        scoring=WorkState.DONE,
    )


def export(client, **params):
    response = client.get(reverse("trajectory-export"), params)
    if response.status_code != 200:
        return response, None
    body = b"".join(response.streaming_content).decode()
    return response, body


def records(body: str) -> list[dict]:
    return [json.loads(line) for line in body.splitlines()]


def command_export(tmp_path, *args) -> str:
    target = tmp_path / "training.jsonl"
    call_command("export_sft", str(target), *args, stderr=StringIO())
    return target.read_text()


def test_a_secret_in_an_uploaded_session_never_leaves_in_the_export(agent, curator_api, tmp_path):
    _, [result] = services.files_ingest(agent=agent, files=[("runs/deploy.jsonl", jsonl(DEPLOY_TASK))])
    services.session_process(session_id=result.session_id)
    assert TaskSegment.objects.exists()
    TaskSegment.objects.update(score=0.95)  # whatever the offline scorer made of it
    response, body = export(curator_api)
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    from_file = command_export(tmp_path)
    for text in (body, from_file):
        assert records(text), text
        for secret in SECRETS:
            assert secret not in text
        assert "<AWS_ACCESS_KEY>" in text
    assert records(body) == records(from_file)


def test_the_export_redacts_again_what_a_segment_kept_unredacted(agent, curator_api, tmp_path):
    stored_segment(agent, DEPLOY_TASK)
    assert AWS_KEY in json.dumps(TaskSegment.objects.get().messages)
    _, body = export(curator_api)
    from_file = command_export(tmp_path)
    for text in (body, from_file):
        for secret in SECRETS:
            assert secret not in text
        assert "<AWS_ACCESS_KEY>" in text


def test_tool_calls_are_kept_in_the_openai_chat_shape(agent, curator_api):
    stored_segment(agent, DEPLOY_TASK)
    _, body = export(curator_api)
    [record] = records(body)
    assert list(record) == ["messages"]
    messages = record["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]
    first_call = messages[1]
    assert first_call["content"] == "Let me look at the remote and push again."  # the reasoning is left out
    [call] = first_call["tool_calls"]
    assert call["id"] == "call_1" and call["type"] == "function" and call["function"]["name"] == "Bash"
    assert json.loads(call["function"]["arguments"])["command"].startswith("git push https://")
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1",
                           "content": "error: 403 for key <AWS_ACCESS_KEY>: remote rejected the push"}
    # Two calls written as two rows, answered together: one assistant turn with both.
    assert [c["id"] for c in messages[3]["tool_calls"]] == ["call_2", "call_3"]
    assert messages[3]["content"].startswith("The token lacks the workflow scope")
    assert [m["tool_call_id"] for m in messages[4:6]] == ["call_2", "call_3"]
    assert messages[5]["content"].endswith("main -> main")
    assert messages[6] == {"role": "assistant", "content": "Pushed: the deploy job passes now."}
    assert "toolu_" not in body  # the session's own ids stay in the hub


def test_calls_without_output_and_outputs_without_call_are_dropped():
    rows = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "earlier", "content": "old output"}]},
        {"role": "user", "content": "Run the tests please"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                           "input": {"command": "pytest -q"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash",
                                           "input": {"command": "git push"}}]},
    ]
    messages = chat_messages(raw_messages(rows))
    assert messages == [
        {"role": "user", "content": "Run the tests please"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                                              "function": {"name": "Bash", "arguments": '{"command": "pytest -q"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 passed"},
    ]


def test_openai_chat_sessions_keep_their_calls(agent, curator_api):
    rows = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "What is in the build directory?"},
        {"role": "assistant", "content": "I will list it.", "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "ls build"}'}}]},
        {"role": "tool", "tool_call_id": "c9", "content": "app.whl"},
        {"role": "assistant", "content": "It holds app.whl."},
    ]
    stored_segment(agent, rows)
    [record] = records(export(curator_api)[1])
    assert record["messages"] == [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "What is in the build directory?"},
        {"role": "assistant", "content": "I will list it.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "ls build"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "app.whl"},
        {"role": "assistant", "content": "It holds app.whl."},
    ]


def test_only_staff_may_export(api, outsider_api):
    assert api.get(reverse("trajectory-export")).status_code == 403
    assert api.get(reverse("trajectory-export")).json()["error"] == "permission_denied"
    assert outsider_api.get(reverse("trajectory-export")).status_code == 401


def _contents(body: str) -> list[str]:
    return [r["messages"][0]["content"] for r in records(body)]


def _scored(agent):
    for score, task_type, text in [(0.75, "debugging", "low"), (0.85, "coding", "mid"), (0.95, "debugging", "high")]:
        stored_segment(agent, [{"role": "user", "content": f"{text} scoring task"},
                               {"role": "assistant", "content": "done"}], score=score, task_type=task_type)


def test_min_score_defaults_to_the_setting_and_can_be_asked_for(agent, curator_api, settings, tmp_path):
    _scored(agent)
    assert _contents(export(curator_api)[1]) == ["mid scoring task", "high scoring task"]
    assert _contents(export(curator_api, min_score=0.9)[1]) == ["high scoring task"]
    assert _contents(export(curator_api, min_score=0)[1]) == ["low scoring task", "mid scoring task", "high scoring task"]
    settings.ULTRON_SFT_MIN_SCORE = 0.7
    assert len(records(export(curator_api)[1])) == 3
    assert len(records(command_export(tmp_path))) == 3
    assert len(records(command_export(tmp_path, "--min-score", "0.9"))) == 1


def test_task_type_and_since_filter(agent, curator_api, tmp_path):
    _scored(agent)
    assert _contents(export(curator_api, task_type="debugging")[1]) == ["high scoring task"]
    assert _contents(export(curator_api, task_type="coding", min_score=0)[1]) == ["mid scoring task"]
    old = timezone.now() - timedelta(days=10)
    TaskSegment.objects.filter(task_type="coding").update(created_at=old)
    since = (timezone.now() - timedelta(days=2)).date().isoformat()
    assert _contents(export(curator_api, since=since, min_score=0)[1]) == ["low scoring task", "high scoring task"]
    assert _contents(export(curator_api, since=old.isoformat(), min_score=0)[1]) == [
        "mid scoring task", "low scoring task", "high scoring task"]  # oldest first
    assert len(records(command_export(tmp_path, "--since", since, "--min-score", "0", "--task-type", "debugging"))) == 2


def test_a_segment_with_nothing_from_the_assistant_is_not_exported(agent, curator_api):
    stored_segment(agent, [{"role": "user", "content": "hello?"},
                           {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]}])
    assert export(curator_api)[1] == ""


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"min_score": "high"}, "min_score"),
        ({"min_score": "1.5"}, "min_score"),
        ({"min_score": "-0.1"}, "min_score"),
        ({"min_score": "nan"}, "min_score"),
        ({"task_type": "gossip"}, "task_type"),
        ({"since": "last tuesday"}, "since"),
        ({"since": "2026-13-45"}, "since"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_field(curator_api, params, field):
    response = curator_api.get(reverse("trajectory-export"), params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid" and body["field"] == field and field in body["message"]


def test_a_client_asking_for_json_lines_gets_them(agent, curator_api):
    stored_segment(agent, DEPLOY_TASK)
    response = curator_api.get(reverse("trajectory-export"), HTTP_ACCEPT="application/x-ndjson")
    assert response.status_code == 200
    assert len(records(b"".join(response.streaming_content).decode())) == 1
    bad = curator_api.get(reverse("trajectory-export"), {"min_score": "x"}, HTTP_ACCEPT="application/x-ndjson")
    assert bad.status_code == 400 and json.loads(bad.content)["field"] == "min_score"


@pytest.mark.parametrize(
    "args",
    [("--min-score", "x"), ("--min-score", "2"), ("--since", "soon"), ("--task-type", "gossip")],
)
def test_the_command_refuses_bad_options(tmp_path, args):
    with pytest.raises((CommandError, SystemExit)):
        call_command("export_sft", str(tmp_path / "out.jsonl"), *args, stderr=StringIO())
    assert not (tmp_path / "out.jsonl").exists()


def test_the_command_writes_to_standard_output(agent):
    stored_segment(agent, DEPLOY_TASK)
    out = StringIO()
    call_command("export_sft", "-", stdout=out, stderr=StringIO())
    assert len(records(out.getvalue())) == 1 and AWS_KEY not in out.getvalue()
