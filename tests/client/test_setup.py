"""``ultron setup``, ``ultron setup --uninstall`` and ``ultron doctor`` in a temporary home whose
path has a space, holding other tools' hooks and MCP servers: a second setup changes no byte,
setup then uninstall leaves every file byte-identical, the other tools' entries survive both,
no token is written, and doctor reports what is installed, twice-registered hooks, Codex's
trust, the hub, the session-start hook's time and a spool that does not drain."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from ultron import spool
from ultron.cli import main
from ultron.localstate import ultron_argv

from tests.client.test_hooks import FakeHub, closed_port_url, login, payload, run_hook

CLAUDE_SETTINGS = """{
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/guard/check.sh"}]}]
    }
}
"""
CLAUDE_JSON = '{"numStartups":12,"mcpServers":{"github":{"command":"gh-mcp","args":[]}},"projects":{}}'
CODEX_TOML = """# my Codex settings
model = "gpt-5-codex"

[mcp_servers.docs]
command = "docs-mcp"   # keeps its comment
args = ["--stdio"]
"""
CODEX_HOOKS = '{\n\t"hooks": {\n\t\t"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]\n\t}\n}\n'
CURSOR_HOOKS = '{"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}'
CURSOR_MCP = '{\n  "mcpServers": {\n    "linear": {"url": "https://mcp.linear.app/sse"}\n  }\n}\n'


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "my home"
    for folder in (".claude", ".codex", ".cursor"):
        (home / folder).mkdir(parents=True)
    for name, value in {"HOME": home, "XDG_CONFIG_HOME": home / ".config", "XDG_STATE_HOME": home / ".state"}.items():
        monkeypatch.setenv(name, str(value))
    for name in ("ULTRON_URL", "ULTRON_TOKEN", "ULTRON_SPACE", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ULTRON_SPOOL_LINGER", "0")
    (home / ".claude" / "settings.json").write_text(CLAUDE_SETTINGS)
    (home / ".claude.json").write_text(CLAUDE_JSON)
    (home / ".claude.json").chmod(0o600)
    (home / ".codex" / "config.toml").write_text(CODEX_TOML)
    (home / ".codex" / "hooks.json").write_text(CODEX_HOOKS)
    (home / ".cursor" / "hooks.json").write_text(CURSOR_HOOKS)
    (home / ".cursor" / "mcp.json").write_text(CURSOR_MCP)
    yield home
    spool.stop_uploader()


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` but the client's own config and state: bytes and mode."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not {".state", ".config"} & set(path.relative_to(root).parts):
            found[str(path.relative_to(root))] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return found


def folders(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())


def setup(capsys, *argv: str) -> tuple[int, str]:
    code = main(["setup", *argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_setup_registers_the_mcp_server_and_hooks_with_every_agent_found(home, capsys):
    code, out = setup(capsys)
    assert code == 0 and "[added]" in out and "open /hooks in Codex" in out and "cursor_version" in out
    program = ultron_argv()[0]
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["SessionStart"] == [{"hooks": [{"type": "command", "timeout": 5,
                                                 "command": f'"{program}" hook claude-code session-start'}]}]
    assert {"Stop", "SessionEnd", "PreCompact"} <= set(hooks)
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["ultron"]["command"] == program
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["ultron"]["args"] == ["mcp"]
    codex_hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert codex_hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex's cap for SessionEnd
    assert f'command = "{program}"' in (home / ".codex" / "config.toml").read_text()
    cursor = json.loads((home / ".cursor" / "hooks.json").read_text())
    assert cursor["hooks"]["sessionStart"] == [{"command": f'"{program}" hook cursor session-start'}]
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["ultron"]["args"] == ["mcp"]


def test_setup_twice_changes_nothing(home, capsys):
    assert setup(capsys)[0] == 0
    first = snapshot(home)
    code, out = setup(capsys)
    assert code == 0 and "[added]" not in out and out.count("[already there]") == 6
    assert snapshot(home) == first


def test_setup_then_uninstall_leaves_every_file_byte_identical(home, capsys):
    (home / ".codex" / "hooks.json").unlink()  # one file setup creates, with its folder
    (home / ".cursor" / "mcp.json").unlink()
    before, before_folders = snapshot(home), folders(home)
    assert setup(capsys)[0] == 0
    assert snapshot(home) != before
    code, out = setup(capsys, "--uninstall")
    assert code == 0 and "restored to its bytes before setup" in out and "removed (setup created it)" in out
    assert snapshot(home) == before and [f for f in folders(home) if not f.startswith((".state", ".config"))] == \
        [f for f in before_folders if not f.startswith((".state", ".config"))]
    assert not (home / ".state" / "ultron" / "installed.json").exists()
    assert "Nothing to undo" in setup(capsys, "--uninstall")[1]


def test_other_tools_entries_survive_setup_and_uninstall(home, capsys):
    setup(capsys)
    claude = json.loads((home / ".claude" / "settings.json").read_text())
    assert claude["model"] == "opus" and claude["permissions"] == {"allow": ["Bash(npm test)"]}
    assert claude["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert claude["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    assert (home / ".claude" / "settings.json").read_text().startswith('{\n    "model"')  # its 4-space indent
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["github"] == {"command": "gh-mcp", "args": []}
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600
    assert (home / ".codex" / "config.toml").read_text().startswith(CODEX_TOML)  # appended, not rewritten
    assert '\t"hooks"' in (home / ".codex" / "hooks.json").read_text()  # its tab indent
    assert json.loads((home / ".cursor" / "hooks.json").read_text())["hooks"]["afterFileEdit"] == [
        {"command": "./format.sh"}]

    # Another tool edits two files after our setup: uninstall takes out only our entries there.
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "later-tool stop"}]})
    (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=4))
    (home / ".codex" / "config.toml").write_text((home / ".codex" / "config.toml").read_text()
                                                 + '\n[mcp_servers.later]\ncommand = "later"\n')
    code, out = setup(capsys, "--uninstall")
    assert code == 0 and "our entries removed" in out
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert [g["hooks"][0]["command"] for g in settings["hooks"]["Stop"]] == ["notify-send done", "later-tool stop"]
    assert set(settings["hooks"]) == {"Stop", "PreToolUse"} and "ultron" not in json.dumps(settings)
    assert (home / ".codex" / "config.toml").read_text() == CODEX_TOML + '\n[mcp_servers.later]\ncommand = "later"\n'
    assert (home / ".cursor" / "hooks.json").read_text() == CURSOR_HOOKS  # untouched since: its bytes back


def test_no_token_is_written_into_any_agents_file(home, capsys):
    from ultron import config

    config.store(url="http://127.0.0.1:8000", token="ult_abcdef123456_topsecretvalue")
    setup(capsys)
    for name, (data, _) in snapshot(home).items():
        assert b"topsecretvalue" not in data, name
        assert b"ULTRON_TOKEN" not in data, name


def test_a_project_gets_its_own_files_and_nothing_else(home, tmp_path, capsys):
    project = tmp_path / "shop api"
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    before_home, before_project = snapshot(home), snapshot(project)
    code, out = setup(capsys, "--project", str(project))
    assert code == 0 and snapshot(home) == before_home  # the user's own files are not touched
    assert sorted(snapshot(project)) == [".claude/settings.local.json", ".codex/config.toml", ".codex/hooks.json",
                                         ".cursor/hooks.json", ".cursor/mcp.json", ".mcp.json", "README.md"]
    setup(capsys, "--uninstall")
    assert snapshot(project) == before_project and folders(project) == []


def test_an_agent_not_found_is_skipped_unless_named(home, capsys):
    shutil.rmtree(home / ".codex")
    code, out = setup(capsys)
    assert "Codex: ~/.codex not found, skipped" in out and not (home / ".codex").exists()
    code, out = setup(capsys, "--agent", "codex")
    assert code == 0 and (home / ".codex" / "hooks.json").exists() and (home / ".codex" / "config.toml").exists()
    setup(capsys, "--uninstall")
    assert not (home / ".codex").exists()  # setup made the folder, uninstall took it away


def test_a_file_setup_cannot_edit_safely_is_left_alone(home, capsys):
    inline = 'mcp_servers = { docs = { command = "docs-mcp" } }\n'
    (home / ".codex" / "config.toml").write_text(inline)
    (home / ".cursor" / "mcp.json").write_text("{ not json")
    code, out = setup(capsys)
    assert code == 1 and out.count("NOT written") == 2 and "add it by hand" in out
    assert (home / ".codex" / "config.toml").read_text() == inline
    assert (home / ".cursor" / "mcp.json").read_text() == "{ not json"


def test_an_ultron_server_of_the_users_own_is_left_as_it_is(home, capsys):
    own = {"mcpServers": {"ultron": {"command": "ultron", "args": ["mcp"], "env": {"ULTRON_URL": "http://hub:8000"}}}}
    (home / ".cursor" / "mcp.json").write_text(json.dumps(own))
    code, out = setup(capsys, "--agent", "cursor")
    assert "left alone" in out and json.loads((home / ".cursor" / "mcp.json").read_text()) == own


def test_the_hook_command_runs_through_a_shell_from_a_path_with_spaces(home, tmp_path, capsys):
    folder = tmp_path / "tools dir"
    folder.mkdir()
    program = folder / "ultron"
    shutil.copy2(ultron_argv()[0], program)  # the console script: its first line names this Python
    hub = FakeHub()
    try:
        login(hub.url)
        assert setup(capsys, "--agent", "claude-code", "--executable", str(program))[0] == 0
        hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
        command = hooks["SessionStart"][0]["hooks"][0]["command"]
        assert command == f'"{program}" hook claude-code session-start'
        done = subprocess.run(["/bin/sh", "-c", command], input=payload("claude-code", "session-start"),
                              capture_output=True, env=dict(os.environ), timeout=20)
        assert done.returncode == 0
        assert "<shared-memories>" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    finally:
        hub.close()


def doctor(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["doctor", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_doctor_says_what_is_installed_and_that_it_works(home, capsys):
    hub = FakeHub()
    try:
        login(hub.url)
        setup(capsys)
        trust_all_codex_hooks(home)
        code, report = doctor(capsys)
        hook = report["hook"]  # run through the shell, as setup wrote it
        assert hook["exit"] == 0 and "one envelope" in hook["said"] and hook["ok"] == (hook["seconds"] <= 2)
        # A busy machine may slow the hook's start past its budget: that alone is reported, nothing else.
        assert [p for p in report["problems"] if not p.startswith("the session-start hook")] == []
        assert code == (0 if hook["ok"] else 1)
        assert report["hub"]["health"] == "ok" and report["hub"]["token_accepted"] is True
        claude = next(a for a in report["agents"] if a["agent"] == "claude-code")
        assert claude["mcp"][0]["command"] == ultron_argv()[0] and claude["hooks"][0]["events"] == [
            "Stop", "SessionStart", "SessionEnd", "PreCompact"]
        assert main(["doctor", "--no-hook"]) == 0
        assert "All good." in capsys.readouterr().out
    finally:
        hub.close()


def trust_all_codex_hooks(home: Path) -> None:
    """What Codex's /hooks writes once the user trusts each hook."""
    hooks_path = home / ".codex" / "hooks.json"
    hooks = json.loads(hooks_path.read_text())["hooks"]
    labels = {"SessionStart": "session_start", "Stop": "stop", "SessionEnd": "session_end", "PreCompact": "pre_compact"}
    lines = []
    for event, label in labels.items():
        group = next(i for i, g in enumerate(hooks[event]) if "ultron" in g["hooks"][0]["command"])
        lines += [f'[hooks.state."{hooks_path}:{label}:{group}:0"]', 'trusted_hash = "sha256:00ff"', ""]
    with (home / ".codex" / "config.toml").open("a") as out:
        out.write("\n" + "\n".join(lines))


def test_doctor_finds_untrusted_codex_hooks_twice_registered_hooks_and_a_stuck_spool(home, tmp_path, capsys):
    login(closed_port_url())
    project = tmp_path / "project"
    project.mkdir()
    setup(capsys)
    setup(capsys, "--project", str(project), "--agent", "claude-code")
    transcript = home / "session.jsonl"
    transcript.write_text('{"role": "user", "content": "hello"}\n')
    spool.enqueue(agent="codex", event="session-end", transcript=str(transcript), now=time.time() - 3600)
    code, report = doctor(capsys, "--project", str(project), "--no-hook")
    text = "\n".join(report["problems"])
    assert code == 1
    codex = next(a for a in report["agents"] if a["agent"] == "codex")
    assert sorted(codex["trust"]["untrusted"]) == ["PreCompact", "SessionEnd", "SessionStart", "Stop"]
    assert "Codex: not trusted yet: Stop, SessionStart, SessionEnd, PreCompact (open /hooks" in text
    assert "Claude Code: SessionStart is registered 2 times" in text
    assert "the spool is not draining: 1 waiting" in text and "cannot reach the hub" in text
    assert "hook" not in report


def test_doctor_times_the_session_start_hook_against_a_hub_that_is_down(home, capsys):
    login(closed_port_url())
    setup(capsys, "--agent", "codex")
    code, report = doctor(capsys)
    hook = report["hook"]
    assert hook["exit"] == 0 and "stub" in hook["said"] and hook["ok"] == (hook["seconds"] <= 2) and code == 1
    done, _ = run_hook("codex", "session-start", payload("codex", "session-start"))
    assert done.returncode == 0
