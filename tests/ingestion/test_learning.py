"""What the offline pipeline learns from a session: error → fix chains, confirmed how-to steps,
corrections and rules, scored from evidence; and where it cuts a session into tasks.

The sessions are the hand-written set in tests/data/sessions_written (Claude Code and OpenAI chat
shapes, labelled independently of this code); the two first-user stories of issue 14 are
``cc01`` (a build failing on ``node:fs/promises`` under Node 12, fixed by Node 20) and ``cc02``
(shrinking a Docker image, confirmed by the user)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ingestion import services
from ingestion.judgements.chains import chains_find, edit_gist, error_line
from ingestion.judgements.commands import command_key, command_parts
from ingestion.judgements.cues import states_rule
from ingestion.judgements.lessons import lessons_find
from ingestion.judgements.score import score_offline
from ingestion.judgements.segmentation import agent_boundaries
from ingestion.models import SegmentMemory
from ingestion.parsing import Message, parse_jsonl
from memories.models import MemoryType

WRITTEN = Path(__file__).resolve().parent.parent / "data" / "sessions_written"


def _messages(name: str) -> list[Message]:
    return parse_jsonl((WRITTEN / name).read_bytes()).messages


def _learned(agent, name: str) -> list:
    _, [result] = services.files_ingest(agent=agent, files=[(name, (WRITTEN / name).read_bytes())])
    services.session_process(session_id=result.session_id)
    links = SegmentMemory.objects.filter(segment__session_id=result.session_id).select_related("memory")
    return [link.memory for link in links]


@pytest.mark.django_db
def test_a_build_fixed_by_upgrading_node_becomes_an_error_memory_with_its_fix(agent):
    memories = _learned(agent, "cc01_node_fs_promises.jsonl")
    errors = [m for m in memories if m.memory_type == MemoryType.ERROR and "node:fs/promises" in m.content]
    assert len(errors) == 1
    memory = errors[0]
    assert "npm run build" in memory.content and "ERR_UNKNOWN_BUILTIN_MODULE" in memory.content
    assert "nvm install 20" in memory.resolution  # the fix
    assert re.search(r"\bv12\b|\bNode 12\b", memory.resolution)  # and the cause: the old Node


@pytest.mark.django_db
def test_a_confirmed_how_to_becomes_a_pattern_with_the_steps_that_worked(agent):
    memories = _learned(agent, "cc02_docker_slim.jsonl")
    patterns = [m for m in memories if m.memory_type == MemoryType.PATTERN and "shrink" in m.content]
    assert len(patterns) == 1
    assert "multi-stage" in patterns[0].resolution and "slim" in patterns[0].resolution
    assert "confirmed by the user" in patterns[0].context


def test_a_correction_and_a_rule_from_the_user_are_kept_with_their_types():
    lessons = lessons_find(_messages("cc03_pip_venv_correction.jsonl"))
    corrections = [lesson for lesson in lessons if lesson.memory_type == "correction"]
    assert any("venv" in lesson.content and "sudo pip" in lesson.content for lesson in corrections)


def test_a_flaky_rerun_and_a_typo_teach_nothing():
    flaky = [Message("assistant", '[tool call Bash] {"command": "go test ./..."}', 1,
                     calls=[{"id": "a", "name": "Bash", "target": "go test ./..."}]),
             Message("user", "[tool result ERROR] --- FAIL: TestShutdown (5.00s) timeout waiting", 2,
                     is_tool_result=True, is_error=True, call_ids=["a"]),
             Message("assistant", '[tool call Bash] {"command": "go test ./..."}', 3,
                     calls=[{"id": "b", "name": "Bash", "target": "go test ./..."}]),
             Message("user", "[tool result] ok  example.com/app 0.3s", 4, is_tool_result=True, call_ids=["b"])]
    assert chains_find(flaky) == []
    typo = [Message("assistant", "[tool call Bash]", 1, calls=[{"id": "a", "name": "Bash", "target": "docker build ."}]),
            Message("user", "[tool result ERROR] ERROR: pull access denied for buider, repository does not exist", 2,
                    is_tool_result=True, is_error=True, call_ids=["a"]),
            Message("assistant", '[tool call Edit] {"file_path": "Dockerfile", "old_string": "FROM buider", '
                                 '"new_string": "COPY --from=builder /app /app"}', 3,
                    calls=[{"id": "b", "name": "Edit", "target": "Dockerfile"}]),
            Message("user", "[tool result] updated", 4, is_tool_result=True, call_ids=["b"]),
            Message("assistant", "[tool call Bash]", 5, calls=[{"id": "c", "name": "Bash", "target": "docker build ."}]),
            Message("user", "[tool result] Successfully built 3f2a", 6, is_tool_result=True, call_ids=["c"])]
    assert chains_find(typo) == []


def test_a_misspelt_argument_put_right_teaches_nothing():
    messages = (_shell(1, "pytest -q -k parse_tickr", "41 deselected in 0.20s", failed=True)
                + _shell(3, "pytest -q -k parse_ticker", "3 passed, 38 deselected"))
    assert chains_find(messages) == []


def test_rules_are_stated_not_asked_or_described():
    assert states_rule("never touch the system python on this box")
    assert states_rule("We always squash-merge feature branches.")
    assert states_rule("Please use pnpm, not npm.")
    assert not states_rule("quick q, what date format do we use in the changelog?")
    assert not states_rule("I added a CI workflow yesterday but it never runs on push")


def test_commands_are_compared_by_what_they_do():
    assert command_key("cd app && npm run build 2>&1 | tail -20") == "npm run build"
    assert command_key("git add a.py && git commit -m \"$(cat <<'EOF'\nfix; it\nEOF\n)\"") == "git commit"
    assert command_key("python -m pytest -q tests/x.py") == "pytest"
    assert command_key("docker run img python -c 'import a; print(1)'") == "docker run"


def _shell(line: int, command: str, output: str, *, failed: bool = False, tool: str = "Bash") -> list[Message]:
    prefix = "[tool result ERROR] " if failed else "[tool result] "
    return [Message("assistant", f"[tool call {tool}] {command}", line,
                    calls=[{"id": str(line), "name": tool, "target": command}]),
            Message("user", prefix + output, line + 1, is_tool_result=True, is_error=failed, call_ids=[str(line)])]


def test_a_fix_made_in_the_same_command_line_as_the_rerun_is_the_fix():
    messages = (_shell(1, "go version && go build ./...", "router.go:8:2: missing go.sum entry for module", failed=True)
                + _shell(3, "go mod tidy && git diff --stat go.mod && go build ./... && echo OK", "OK"))
    [chain] = chains_find(messages)
    assert chain.fixes == ["ran `go mod tidy`"]
    nvm = (_shell(1, "nvm --version", "/bin/bash: line 1: nvm: command not found", failed=True)
           + _shell(3, "source ~/.nvm/nvm.sh && nvm --version && nvm ls", "0.39.7\n-> v20.11.1"))
    [chain] = chains_find(nvm)
    assert "ran `source ~/.nvm/nvm.sh`" in chain.fixes and "command not found" in chain.error


def test_a_rerun_the_user_rejected_or_a_mere_version_check_is_not_the_pass():
    messages = (_shell(1, "pip install requests", "error: externally-managed-environment", failed=True)
                + _shell(3, "sudo pip install requests", "The user doesn't want to proceed with this tool use.")
                + _shell(5, "node --version", "v20.1.0")
                + _shell(7, "python3 -m venv .venv && .venv/bin/pip install -q requests", "Successfully installed"))
    [chain] = chains_find(messages)
    assert chain.passed.call == 6 and "ran `python3 -m venv .venv`" in chain.fixes


def test_a_here_document_is_data_not_steps():
    command = "sudo tee /etc/nginx/conf.d/a.conf >/dev/null <<'EOF'\nmap $x $y {\n  default upgrade;\n}\nEOF\nsudo nginx -t"
    assert command_parts(command) == ["tee /etc/nginx/conf.d/a.conf >/dev/null <<'EOF'", "nginx -t"]


def test_a_tool_of_the_user_s_own_naming_that_takes_a_command_is_a_shell():
    rows = [{"role": "user", "content": "install fails"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "run_in_sandbox", "arguments": json.dumps({"command": "npm install"})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "exit code: 1\nnpm ERR! ERESOLVE unable to resolve"}]
    messages = parse_jsonl("\n".join(json.dumps(r) for r in rows).encode()).messages
    assert messages[1].calls[0]["target"] == "npm install"


def test_an_edit_is_summed_up_by_the_line_that_says_the_most():
    call = '[tool call Write] ' + json.dumps({"file_path": "pytest.ini",
                                               "content": "[pytest]\nDJANGO_SETTINGS_MODULE = clinic.settings\n"})
    assert edit_gist(call) == "DJANGO_SETTINGS_MODULE = clinic.settings"


def test_the_error_line_is_the_one_that_names_the_problem():
    output = "Exit code 1\nnpm ERR! code ELIFECYCLE\nError [ERR_UNKNOWN_BUILTIN_MODULE]: No such built-in module: x\nnpm ERR!"
    assert error_line(output).startswith("Error [ERR_UNKNOWN_BUILTIN_MODULE]")
    hook = ("Pre-commit validation failed:\n[DIALYZER]\nTotal errors: 2, Skipped: 0\ndone in 0m12.82s\n"
            "lib/app/summary.ex:120:18:pattern_match The pattern can never match the type.")
    assert error_line(hook).startswith("lib/app/summary.ex:120:18:pattern_match")
    cargo = ("error: failed to parse manifest at `/p/Cargo.toml`\n\nCaused by:\n  feature `edition2024` is required\n")
    assert "caused by: feature `edition2024` is required" in error_line(cargo)
    assert "is not a docker command" in error_line("Docker version 24.0.7, build afdd53b\n"
                                                   "docker: 'compose' is not a docker command.\nSee 'docker --help'")


def test_scores_come_from_evidence_not_length():
    fixed = score_offline(_messages("cc01_node_fs_promises.jsonl")[:40])
    chatter = [Message("user", "tell me about your day", 1)] + [
        Message("assistant" if i % 2 else "user", "a long and friendly chat " * 40, i) for i in range(2, 60)]
    assert fixed.score >= 0.7 and "error" in " ".join(fixed.reasons)
    assert score_offline(chatter).score < 0.3


def test_the_agent_s_own_move_to_the_next_task_is_a_boundary():
    def call(i: int, command: str) -> list[Message]:
        return [Message("assistant", f"[tool call Bash] {command}", i, calls=[{"id": str(i), "name": "Bash",
                                                                                "target": command}]),
                Message("user", "[tool result] ok", i + 1, is_tool_result=True, call_ids=[str(i)])]

    messages = [Message("user", "work through the open issues", 1)]
    for line in range(2, 14, 2):
        messages += call(line, f"pytest tests/test_{line}.py")
    messages += call(20, "git commit -m 'first issue'") + call(22, "git push")
    messages.append(Message("assistant", "Pushed. Now the second issue: the flaky importer.", 24))
    cuts = agent_boundaries(messages)
    assert [messages[c].line for c in cuts] == [24]


def _todo(line: int, statuses: list[str]) -> list[Message]:
    todos = json.dumps({"todos": [{"content": f"item {n}", "status": st} for n, st in enumerate(statuses)]})
    return [Message("assistant", f"[tool call TodoWrite] {todos}", line,
                    calls=[{"id": str(line), "name": "TodoWrite", "target": ""}]),
            Message("user", "[tool result] Todos have been modified successfully.", line + 1,
                    is_tool_result=True, call_ids=[str(line)])]


def test_an_item_ticked_off_the_agent_s_to_do_list_starts_the_next_task():
    messages = [Message("user", "work through TODO.md", 1)] + _todo(2, ["in_progress", "pending"])
    for line in range(4, 16, 2):
        messages += _shell(line, f"go test ./pkg{line}", "ok")
    messages += _todo(20, ["completed", "in_progress"])
    for line in range(30, 42, 2):
        messages += _shell(line, f"go vet ./pkg{line}", "ok")
    messages += _todo(50, ["completed", "completed"])  # the last item: the work ends, nothing starts
    assert [messages[c].line for c in agent_boundaries(messages)] == [30]


def test_the_agent_announcing_the_next_numbered_task_is_a_boundary_and_looking_at_an_issue_is_not():
    messages = [Message("user", "implement the plan", 1)] + _shell(2, "gh issue view 41", "body")
    messages += _shell(4, "mix test", "ok") + [Message("assistant", "Now let me implement Task 2 (the renderer).", 6)]
    assert [messages[c].line for c in agent_boundaries(messages)] == [6]


def test_after_the_wrap_up_a_background_job_reporting_back_is_a_side_task():
    messages = [Message("user", "fix the importer", 1)] + _shell(2, "git commit -m fix", "[main 1a2b] fix")
    messages += [Message("assistant", "All done: the importer is fixed and committed.", 4),
                 Message("user", "<task-notification> <status>completed</status>", 5)]
    assert [messages[c].line for c in agent_boundaries(messages)] == [5]


@pytest.mark.skipif(not (WRITTEN / "boundaries.jsonl").exists(), reason="labelled set absent")
def test_the_labelled_sets_are_consistent():
    boundaries = [json.loads(line) for line in (WRITTEN / "boundaries.jsonl").read_text().splitlines() if line]
    lessons = [json.loads(line) for line in (WRITTEN / "lessons.jsonl").read_text().splitlines() if line]
    assert sum(len(b["tasks"]) - 1 for b in boundaries) >= 40 and len(lessons) >= 40
    assert all((WRITTEN / b["file"]).exists() for b in boundaries)
