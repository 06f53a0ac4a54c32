"""Session formats beyond chat rows: Codex CLI, SWE-agent, OpenHands, Aider, Gemini CLI — detected
from content, with tool calls linked to their results. The sample files in tests/data/formats are
short debugging sessions written from each project's documented format (see the parsers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ingestion import services
from ingestion.formats import walk_includes
from ingestion.parsing import Message, parse_jsonl, parse_session

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
CODEX = DATA / "codex-rollout-2025-05-14T10-02-11-0196cd2e.jsonl"
SWE = DATA / "swe-agent-stats__mean-12.traj"
OPENHANDS = DATA / "openhands-health-500.json"
AIDER = DATA / "aider-slugify.aider.chat.history.md"
GEMINI_SESSION = DATA / "gemini-session-2025-06-03T10-12-6f1c2a9b.jsonl"
GEMINI_LEGACY = DATA / "gemini-session-2025-06-03T10-12-6f1c2a9b.json"
GEMINI_CHECKPOINT = DATA / "gemini-checkpoint-build-fix.json"
GEMINI_LOGS = DATA / "gemini-logs.json"
SAMPLES = {CODEX: "codex", SWE: "swe-agent", OPENHANDS: "openhands", AIDER: "aider", GEMINI_SESSION: "gemini-cli",
           GEMINI_LEGACY: "gemini-cli", GEMINI_CHECKPOINT: "gemini-cli", GEMINI_LOGS: "gemini-cli"}


def parse(path: Path):
    return parse_session(path.read_bytes())


def calls(parsed) -> list[dict]:
    return [c for m in parsed.messages for c in m.calls]


def errors(parsed) -> list[str]:
    return [m.text for m in parsed.messages if m.is_error]


@pytest.mark.parametrize("path", list(SAMPLES), ids=lambda p: p.name)
def test_each_sample_is_detected_from_its_content_alone(path):
    parsed = parse(path)
    assert parsed.format == SAMPLES[path] and parsed.messages and not parsed.malformed and not parsed.reason
    renamed = parse_session(path.read_bytes(), name="stored-without-a-name.bin")
    assert [m.as_dict() for m in renamed.messages] == [m.as_dict() for m in parsed.messages]
    assert parse_jsonl(path.read_bytes()).format == SAMPLES[path]  # the old entry point detects too


@pytest.mark.parametrize("path", [p for p in SAMPLES if p != GEMINI_LOGS], ids=lambda p: p.name)
def test_every_result_answers_a_call_made_before_it(path):
    made: set[str] = set()
    answered = 0
    for message in parse(path).messages:
        assert all(set(c) == {"id", "name", "target"} and c["id"] for c in message.calls)
        assert not (message.calls and message.is_tool_result)
        if message.is_tool_result and message.call_ids:
            assert set(message.call_ids) <= made, (message.line, message.call_ids)
            answered += 1
        made.update(c["id"] for c in message.calls)
    assert answered >= 1


def test_codex_rollout():
    parsed = parse(CODEX)
    roles = [m.role for m in parsed.messages]
    assert roles[0] == "user" and parsed.messages[0].text.startswith("The CSV export crashes")
    assert "<environment_context>" not in " ".join(m.text for m in parsed.messages)  # harness turn skipped
    assert [(c["name"], c["target"]) for c in calls(parsed)] == [
        ("local_shell", "ls ledger tests"), ("shell", "pytest -q tests/test_export.py"),
        ("apply_patch", "ledger/export.py"), ("exec_command", "pytest -q tests/test_export.py")]
    # The failing run reports exit_code 1 in its JSON metadata; "Exit code: 0" and "Process exited
    # with code 0" are successes.
    failed = [m for m in parsed.messages if m.is_error]
    assert len(failed) == 1 and failed[0].call_ids == ["call_8HkP3m"] and "IndexError" in failed[0].text
    assert parsed.messages[1].text.startswith("[thinking] **Reproducing the crash**")
    assert parsed.messages[-1].role == "assistant" and "skips empty rows" in parsed.messages[-1].text
    assert parsed.skipped == 9  # session_meta, turn_context, event_msg rows and the environment context


def test_codex_early_rollouts_with_bare_items_and_bad_lines():
    rows = [{"id": "d5e", "timestamp": "2025-04-18T09:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "why is CI red?"}]},
            {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"make\", \"test\"]}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": {"content": "make: *** [test] Error 2",
                                                                          "success": False}},
            {"record_type": "state"}]
    data = "\n".join(json.dumps(r) for r in rows).encode() + b"\n{broken\n\xff\xfe\n"
    parsed = parse_session(data)
    assert parsed.format == "codex" and parsed.malformed == {"bad JSON": 1, "bad encoding": 1}
    assert [m.role for m in parsed.messages] == ["user", "assistant", "tool"]
    assert parsed.messages[1].calls == [{"id": "c1", "name": "shell", "target": "make test"}]
    assert parsed.messages[2].is_error and parsed.messages[2].call_ids == ["c1"]


def test_swe_agent_trajectory():
    parsed = parse(SWE)
    task = parsed.messages[0]
    assert task.role == "user" and task.text.startswith("`mean()` raises ZeroDivisionError")
    assert "<pr_description>" not in task.text and "demonstration" not in task.text
    assert [(c["id"], c["name"], c["target"]) for c in calls(parsed)] == [
        ("swe-agent-1", "bash", "find /testbed/stats -name '*.py'"),
        ("swe-agent-2", "str_replace_editor", "/testbed/reproduce.py"),
        ("swe-agent-3", "bash", "python /testbed/reproduce.py"),
        ("swe-agent-4", "str_replace_editor", "/testbed/stats/mean.py"),
        ("swe-agent-5", "str_replace_editor", "/testbed/stats/mean.py"),
        ("swe-agent-6", "bash", "python /testbed/reproduce.py"),
        ("swe-agent-7", "bash", "rm /testbed/reproduce.py && submit")]
    failed = [m for m in parsed.messages if m.is_error]
    assert [m.call_ids for m in failed] == [["swe-agent-3"]] and "ZeroDivisionError" in failed[0].text
    assert [m.role for m in parsed.messages[1:]] == ["assistant", "tool"] * 7


def test_mini_swe_agent_trajectory():
    doc = {"info": {"mini_version": "1.9.0", "exit_status": "Submitted"}, "trajectory_format": "mini-swe-agent-1",
           "messages": [
               {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
               {"role": "user", "content": "Your task is: make `tox -e lint` pass"},
               {"role": "assistant", "content": "THOUGHT: run the linter first.\n\n```bash\ntox -e lint\n```"},
               {"role": "user", "content": "<returncode>1</returncode>\n<output>\nsrc/app.py:3:1: F401 'os' imported but unused\n</output>"},
               {"role": "assistant", "content": "THOUGHT: drop the import.\n\n```bash\nsed -i '3d' src/app.py && tox -e lint\n```"},
               {"role": "user", "content": "<returncode>0</returncode>\n<output>\nlint: OK\n</output>"}]}
    parsed = parse_session(json.dumps(doc).encode())
    assert parsed.format == "swe-agent"
    assert [m.role for m in parsed.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert [c["target"] for c in calls(parsed)] == ["tox -e lint", "sed -i '3d' src/app.py && tox -e lint"]
    assert [m.is_error for m in parsed.messages if m.is_tool_result] == [True, False]
    assert parsed.messages[3].call_ids == [parsed.messages[2].calls[0]["id"]]


def test_openhands_events():
    parsed = parse(OPENHANDS)
    assert parsed.messages[0].role == "user" and parsed.messages[0].text.startswith("GET /health returns 500")
    assert [(c["id"], c["name"], c["target"]) for c in calls(parsed)] == [
        ("toolu_01HkZ2", "run", "cd /workspace/app && python -m pytest tests/test_health.py -q"),
        ("toolu_01Pq8s", "read", "/workspace/app/app/config.py"),
        ("toolu_01Tm4d", "edit", "/workspace/app/app/config.py"),
        ("toolu_01Wc7e", "run", "cd /workspace/app && python -m pytest tests/test_health.py -q")]
    failed = [m for m in parsed.messages if m.is_error]
    assert len(failed) == 1 and failed[0].call_ids == ["toolu_01HkZ2"] and "KeyError" in failed[0].text
    assert parsed.messages[1].text.startswith("I'll start by running the failing tests.\n[tool call run]")
    assert "security_risk" not in parsed.messages[1].text
    assert parsed.messages[-1].role == "assistant" and "sqlite:///app.db" in parsed.messages[-1].text
    assert parsed.skipped == 2  # agent state changes


def test_openhands_as_json_lines_without_tool_ids_links_by_cause():
    events = json.loads(OPENHANDS.read_text())
    for event in events:
        event.pop("tool_call_metadata", None)
    data = "\n".join(json.dumps(e) for e in events).encode()
    parsed = parse_session(data)
    assert parsed.format == "openhands"
    assert [c["id"] for c in calls(parsed)] == ["openhands-2", "openhands-4", "openhands-6", "openhands-8"]
    results = [m for m in parsed.messages if m.is_tool_result]
    assert [m.call_ids for m in results] == [["openhands-2"], ["openhands-4"], ["openhands-6"], ["openhands-8"]]
    assert [m.is_error for m in results] == [True, False, False, False]


def test_openhands_sdk_events():
    events = [
        {"kind": "SystemPromptEvent", "id": "e0", "source": "agent", "system_prompt": {"type": "text", "text": "..."}},
        {"kind": "MessageEvent", "id": "e1", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "Why does `make` fail?"}]}},
        {"kind": "ActionEvent", "id": "e2", "source": "agent", "thought": [{"type": "text", "text": "Run it."}],
         "action": {"kind": "ExecuteBashAction", "command": "make"}, "tool_name": "execute_bash", "tool_call_id": "call_1"},
        {"kind": "ObservationEvent", "id": "e3", "source": "environment", "tool_name": "execute_bash", "tool_call_id": "call_1",
         "observation": {"kind": "ExecuteBashObservation", "content": [{"type": "text", "text": "make: *** No rule to make target 'all'."}],
                         "metadata": {"exit_code": 2}}, "action_id": "e2"},
        {"kind": "ConversationStateUpdateEvent", "id": "e4", "source": "environment", "key": "agent_status", "value": "finished"}]
    parsed = parse_session(json.dumps(events).encode())
    assert parsed.format == "openhands" and [m.role for m in parsed.messages] == ["user", "assistant", "tool"]
    assert parsed.messages[1].calls == [{"id": "call_1", "name": "execute_bash", "target": "make"}]
    assert parsed.messages[2].is_error and parsed.messages[2].call_ids == ["call_1"]


def test_aider_chat_history():
    parsed = parse(AIDER)
    users = [m.text for m in parsed.messages if m.role == "user"]
    assert users[0] == "/add slugify.py tests/test_slugify.py"
    assert users[2] == 'The accented-title test fails: slugify("Café au lait") gives "caf-au-lait".\nPlease fix slugify so it keeps the letters.'
    assert "Aider v0.82.2" not in " ".join(m.text for m in parsed.messages)  # the start-up banner
    test_run = parsed.messages[2]
    assert test_run.calls == [{"id": "aider-15", "name": "test", "target": "pytest -q tests/test_slugify.py"}]
    assert parsed.messages[3].is_error and parsed.messages[3].call_ids == ["aider-15"]  # /test added its failing output
    reply = next(m for m in parsed.messages if m.role == "assistant")
    assert ">>>>>>> REPLACE" in reply.text and "unicodedata" in reply.text
    assert [(c["name"], c["target"]) for c in reply.calls] == [
        ("edit", "slugify.py"), ("run", "pytest -q tests/test_slugify.py"), ("run", "flake8 slugify.py")]
    after = parsed.messages[parsed.messages.index(reply) + 1]
    assert after.is_tool_result and not after.is_error and after.call_ids == [c["id"] for c in reply.calls]
    assert "pytest -q tests/test_slugify.py\nflake8 slugify.py" in after.text  # a two-line quoted message
    assert len(errors(parsed)) == 1


def test_aider_history_whose_trailing_spaces_were_trimmed():
    trimmed = "\n".join(line.rstrip() for line in AIDER.read_text().splitlines()).encode()
    parsed = parse_session(trimmed)
    assert parsed.format == "aider"
    assert [m.text for m in parsed.messages if m.role == "user"] == [
        m.text for m in parse(AIDER).messages if m.role == "user"]


def test_gemini_session_recording():
    parsed = parse(GEMINI_SESSION)
    assert [m.role for m in parsed.messages] == ["user"] + ["assistant", "tool"] * 4 + ["assistant"]
    assert "bump the version" not in " ".join(m.text for m in parsed.messages)  # rewound
    assert parsed.messages[1].line == 4  # re-written message keeps its first place
    assert parsed.messages[1].text.startswith("[thinking] Reproducing the build failure: I'll run")
    assert [(c["name"], c["target"]) for c in calls(parsed)] == [
        ("run_shell_command", "npm run build"), ("glob", ""), ("replace", "/home/dev/web/src/App.tsx"),
        ("run_shell_command", "npm run build")]
    failed = [m for m in parsed.messages if m.is_error]
    assert [m.call_ids for m in failed] == [["run_shell_command-1749-0"]] and "TS2307" in failed[0].text
    legacy = parse(GEMINI_LEGACY)
    assert [m.role for m in legacy.messages] == ["user", "assistant", "tool", "assistant"]


def test_gemini_checkpoint_pairs_calls_without_ids():
    parsed = parse(GEMINI_CHECKPOINT)
    assert "This is the Gemini CLI" not in parsed.messages[0].text and parsed.skipped == 2
    results = [m for m in parsed.messages if m.is_tool_result]
    assert [m.call_ids for m in results] == [["gemini-4-1"], ["gemini-6-0"], ["gemini-8-1"], ["gemini-10-0"]]
    assert [m.is_error for m in results] == [True, False, False, False]  # "Exit Code: 2", then 0


def test_gemini_logs_hold_the_users_prompts():
    parsed = parse(GEMINI_LOGS)
    assert [m.role for m in parsed.messages] == ["user"] * 3 and parsed.messages[1].text == "/chat save build-fix"


@pytest.mark.parametrize(("data", "name", "found"), [
    (b'{"a": 1, "b": [2], "c": null}', "", "a JSON object with keys a, b, c"),
    (b'[{"x": 1}, {"y": 2}]', "", "2 JSON lines whose first object has keys x"),
    (b'{"x": 1}\n{"y": 2}\n', "", "2 JSON lines whose first object has keys x"),
    (b"[1, 2, 3]", "", "3 JSON lines, none of them an object"),
    (b"just some notes\nand more", "notes.json", "text that is not JSON (first line: 'just some notes')"),
    (b"# Release notes\n\n- fixed things\n", "NOTES.md", "Markdown without Aider's chat markers"),
    (bytes(range(256)) * 40, "", "binary or non-UTF-8 data"),
    (b'"a string"', "", "1 JSON line, not an object"),
])
def test_an_unknown_format_says_what_was_found(data, name, found):
    parsed = parse_session(data, name)
    assert parsed.messages == [] and parsed.format == ""
    assert parsed.reason.startswith(f"unrecognised format: {found}") and "Codex CLI" in parsed.reason


def test_a_known_format_without_messages_says_so():
    parsed = parse_session(b'{"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}\n')
    assert parsed.messages == [] and parsed.format == "codex"
    assert parsed.reason.startswith("no conversation messages found in this Codex CLI session")
    assert parse_session(b"  \n").reason == "empty file"


@pytest.mark.parametrize("path", list(SAMPLES), ids=lambda p: p.name)
def test_damaged_files_are_counted_never_raised(path):
    data = path.read_bytes()
    for cut in range(1, len(data), max(1, len(data) // 23)):
        for damaged in (data[:cut], data[:cut] + b"\xff\x00" + data[cut:], data[cut:]):
            parsed = parse_session(damaged)
            assert isinstance(parsed.messages, list) and (parsed.messages or parsed.reason)


def test_a_huge_single_line_is_clipped_in_the_new_formats_too():
    row = {"timestamp": "t", "type": "response_item",
           "payload": {"type": "function_call_output", "call_id": "c", "output": "x" * 5_000_000}}
    parsed = parse_session(json.dumps(row).encode())
    assert len(parsed.messages[0].text) < 5_000 and "more characters" in parsed.messages[0].text


def test_deeply_nested_json_is_bad_json_not_a_crash():
    parsed = parse_session(b"[" * 100_000 + b"]" * 100_000)
    assert parsed.messages == [] and parsed.malformed == {"bad JSON": 1}


def test_messages_round_trip_and_old_stored_dicts_still_read():
    message = parse(CODEX).messages[3]
    assert Message.from_dict(json.loads(json.dumps(message.as_dict()))) == message
    old = {"role": "tool", "text": "[tool result] ok", "line": 3, "tool_result": True, "error": False, "tools": []}
    restored = Message.from_dict(old)
    assert restored.calls == [] and restored.call_ids == []


def test_directory_walks_take_session_files_only(tmp_path):
    (tmp_path / "codex.jsonl").write_bytes(CODEX.read_bytes())
    (tmp_path / "run.traj").write_bytes(SWE.read_bytes())
    (tmp_path / "events.json").write_bytes(OPENHANDS.read_bytes())
    (tmp_path / "package.json").write_text('{"name": "web", "version": "1.0.0", "scripts": {"build": "tsc"}}')
    (tmp_path / "README.md").write_text("# web\n")
    (tmp_path / ".aider.chat.history.md").write_bytes(AIDER.read_bytes())
    (tmp_path / ".notes.jsonl").write_bytes(CODEX.read_bytes())
    collected = services.paths_collect([str(tmp_path)], roots=[str(tmp_path)])
    assert sorted(p.name for _, p in collected) == [".aider.chat.history.md", "codex.jsonl", "events.json", "run.traj"]
    assert walk_includes(tmp_path / "events.json") and not walk_includes(tmp_path / "package.json")
    named = services.paths_collect([str(tmp_path / "README.md"), str(tmp_path / ".aider.chat.history.md")], roots=None)
    assert len(named) == 2  # named files: the extension is enough, the content decides
    (tmp_path / "notes.txt").write_text("a session? no")
    with pytest.raises(services.IngestError, match=r"only \.jsonl, \.json, \.traj or \.md session files"):
        services.paths_collect([str(tmp_path / "notes.txt")], roots=None)


@pytest.mark.django_db
def test_uploads_of_each_format_are_accepted_and_unknown_ones_skipped_with_the_reason(api):
    files = [SimpleUploadedFile(p.name, p.read_bytes(), content_type="application/octet-stream") for p in SAMPLES]
    files.append(SimpleUploadedFile("package.json", b'{"name": "web"}', content_type="application/json"))
    response = api.post(reverse("ingest"), {"files": files}, format="multipart")
    assert response.status_code == 202, response.content
    results = {r["name"]: r for r in response.json()["files"]}
    assert all(results[p.name]["status"] == "new" and results[p.name]["messages"] for p in SAMPLES)
    skipped = results["package.json"]
    assert skipped["status"] == "skipped" and skipped["reason"].startswith(
        "unrecognised format: a JSON object with keys name;")
    refused = api.post(reverse("ingest"), {"files": [SimpleUploadedFile("notes.txt", b"hi")]}, format="multipart")
    assert refused.status_code == 400 and ".jsonl, .json, .traj or .md" in json.dumps(refused.json())
