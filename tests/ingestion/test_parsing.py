from __future__ import annotations

import json

import pytest

from bench._common import eval_dir
from ingestion.parsing import parse_jsonl

EVAL = eval_dir() / "transcripts" / "claude_code"


def jsonl(*rows) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def test_plain_role_content():
    parsed = parse_jsonl(jsonl({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}))
    assert [(m.role, m.text) for m in parsed.messages] == [("user", "hi"), ("assistant", "hello")]
    assert not parsed.malformed and parsed.format == "plain" and not parsed.reason


def test_openai_chat_with_tool_calls_and_tool_rows():
    parsed = parse_jsonl(jsonl(
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: permission denied"},
        {"role": "assistant", "content": "You lack permission."},
    ))
    roles = [m.role for m in parsed.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert parsed.messages[2].tool_names == ["ls"] and "[tool call ls]" in parsed.messages[2].text
    assert parsed.messages[2].calls == [{"id": "c1", "name": "ls", "target": ""}]
    assert parsed.messages[3].is_tool_result and parsed.messages[3].is_error
    assert parsed.messages[3].call_ids == ["c1"] and parsed.format == "openai-chat"


def test_anthropic_content_blocks():
    parsed = parse_jsonl(jsonl(
        {"role": "user", "content": [{"type": "text", "text": "run tests"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should run pytest"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": [{"type": "text", "text": "2 failed"}]}]},
    ))
    assistant = parsed.messages[1]
    assert "[thinking] I should run pytest" in assistant.text and assistant.tool_names == ["Bash"]
    assert assistant.calls == [{"id": "t1", "name": "Bash", "target": "pytest"}]
    result = parsed.messages[2]
    assert result.is_tool_result and result.is_error and "2 failed" in result.text
    assert result.call_ids == ["t1"] and parsed.format == "anthropic"


def test_call_targets_are_commands_for_shell_tools_and_paths_for_file_tools():
    parsed = parse_jsonl(jsonl(
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "Edit", "input": {"file_path": "/src/app.py", "old_string": "x"}},
            {"type": "tool_use", "id": "b", "name": "Grep", "input": {"pattern": "TODO", "path": "/src"}},
            {"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": "x" * 900}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "d", "type": "function", "function": {"name": "shell", "arguments": "{\"command\": [\"bash\", \"-lc\", \"make\"]}"}},
            {"id": "e", "type": "function", "function": {"name": "read_file", "arguments": "not json"}}]},
    ))
    targets = [(c["id"], c["target"]) for m in parsed.messages for c in m.calls]
    assert targets == [("a", "/src/app.py"), ("b", ""), ("c", "x" * 500), ("d", "make"), ("e", "")]


def test_an_exit_code_in_a_tool_result_marks_it_an_error_without_a_flag():
    parsed = parse_jsonl(jsonl(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "Exit code 2\nmake: *** Error"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": "Exit code: 0\nok"}]},
        {"role": "tool", "tool_call_id": "v", "content": "FAIL\nexit status 1"},
    ))
    assert [m.is_error for m in parsed.messages] == [True, False, True]


def test_claude_code_envelopes_skip_non_message_rows():
    parsed = parse_jsonl(jsonl(
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "progress", "data": {}},
        {"type": "user", "message": {"role": "user", "content": "start the server"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
        {"type": "system", "content": "compacted"},
    ))
    assert [m.text for m in parsed.messages] == ["start the server", "ok"]
    assert parsed.skipped == 3 and not parsed.malformed and parsed.format == "claude-code"


def test_whole_file_json_array_is_accepted():
    data = json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]).encode()
    assert len(parse_jsonl(data).messages) == 2


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{not json", "bad JSON"),
        (b"[1, 2, 3]", "not an object"),
        (b'"a string"', "not an object"),
        (b'{"content": "no role"}', "missing role"),
        (b'{"role": "wizard", "content": "x"}', "unknown role"),
        (b'{"role": "user", "content": "caf\xe9"}', "bad encoding"),
        (b'{"role": "user", "content": "a\x00b"}', "binary data"),
        (b'{"type": "user", "message": "not an object"}', "envelope without a message object"),
    ],
)
def test_malformed_lines_are_counted_and_never_abort_the_file(line, reason):
    data = b'{"role": "user", "content": "first"}\n' + line + b'\n{"role": "assistant", "content": "last"}\n'
    parsed = parse_jsonl(data)
    assert [m.text for m in parsed.messages] == ["first", "last"]
    assert parsed.malformed == {reason: 1}


def test_binary_and_empty_files():
    assert parse_jsonl(b"").messages == [] and parse_jsonl(b"").reason == "empty file"
    garbage = bytes(range(256)) * 100
    parsed = parse_jsonl(garbage)
    assert parsed.messages == [] and sum(parsed.malformed.values()) >= 1
    assert parsed.reason.startswith("unrecognised format: binary or non-UTF-8 data")


def test_a_ten_megabyte_single_line_is_clipped_not_fatal():
    huge = json.dumps({"role": "user", "content": "x" * 10_000_000}).encode()
    parsed = parse_jsonl(huge + b"\n" + jsonl({"role": "assistant", "content": "ok"}))
    assert len(parsed.messages) == 2
    assert len(parsed.messages[0].text) < 25_000 and "more characters" in parsed.messages[0].text


@pytest.mark.skipif(not EVAL.exists(), reason="../shared/eval transcripts not present")
def test_real_claude_code_sessions_parse_cleanly():
    for path in sorted(EVAL.glob("*.jsonl")):
        parsed = parse_jsonl(path.read_bytes())
        assert parsed.messages, path.name
        assert not parsed.malformed, (path.name, parsed.malformed)
        assert {m.role for m in parsed.messages} <= {"user", "assistant"} and parsed.format == "claude-code"
        made = {c["id"] for m in parsed.messages for c in m.calls}
        answered = {i for m in parsed.messages for i in m.call_ids}
        assert answered and answered <= made, path.name
        bash = [c for m in parsed.messages for c in m.calls if c["name"] == "Bash"]
        assert all(c["target"] for c in bash), path.name
