"""The ``ultron`` command, run through ``main([...])`` against the live hub: what it prints for
people and for scripts, where the login is kept, and the exit codes scripts rely on."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import sys
import uuid

import pytest
from ultron import Ultron
from ultron.cli import AUTH, NOT_FOUND, OK, UNAVAILABLE, USAGE, main
from ultron.cli.watch import Watcher
from ultron.config import config_path

from tests.ingestion.test_services import DOCKER_TASK, jsonl

pytestmark = pytest.mark.django_db(transaction=True)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_login_keeps_url_and_token_where_only_the_owner_reads_them(hub, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("ULTRON_URL")
    monkeypatch.delenv("ULTRON_TOKEN")
    code, out, _ = run(capsys, "login", "--url", hub.url + "/", "--token", hub.token)
    assert code == OK and "Logged in to" in out and hub.token not in out
    path = config_path()
    assert path == tmp_path / "config" / "ultron" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": hub.url, "token": hub.token}

    code, out, _ = run(capsys, "status")  # nothing in the environment: the stored login
    assert code == OK and f"from {path}" in out and "health    ok" in out and "memories  0" in out
    assert Ultron().token == hub.token

    code, out, _ = run(capsys, "logout")
    assert code == OK and not path.exists()


def test_login_reads_the_token_from_standard_input(hub, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(hub.token + "\n"))
    code, out, _ = run(capsys, "login", "--json")
    assert code == OK and json.loads(out)["verified"] is True
    assert json.loads(config_path().read_text())["token"] == hub.token


def test_a_refused_token_is_not_stored(hub, capsys):
    code, _, err = run(capsys, "login", "--token", "ult_000000000000_nope")
    assert code == AUTH and "401" in err and not config_path().exists()


def test_upload_search_details_and_context(hub, capsys):
    code, out, _ = run(capsys, "upload", "--content", "ModuleNotFoundError: No module named 'pandas'",
                       "--context", "data script in a Docker container", "--resolution", "pip install pandas",
                       "--tag", "python", "--tag", "pandas")
    assert code == OK and out.startswith("Stored ") and "(error, warm)" in out
    memory_id = out.split()[1]
    code, out, _ = run(capsys, "upload", "--json", "--content", "ModuleNotFoundError: No module named 'pandas'",
                       "--context", "data script in a Docker container", "--resolution", "pip install pandas")
    assert code == OK and json.loads(out)["merged"] is True and json.loads(out)["id"] == memory_id

    code, out, _ = run(capsys, "search", "pandas import error", "--type", "error", "--limit", "5")
    assert code == OK and out.splitlines()[0].split() == ["score", "sim", "space", "type", "tier", "hits", "id",
                                                          "summary"]
    assert out.splitlines()[1].split()[2] == "shared"
    assert memory_id in out
    code, out, _ = run(capsys, "search", "pandas import error", "--json", "--tier", "warm")
    hits = json.loads(out)
    assert hits[0]["id"] == memory_id and hits[0]["tags"] == ["python", "pandas"] and hits[0]["similarity_score"] > 0

    code, out, _ = run(capsys, "details", memory_id)
    assert code == OK and "pip install pandas" in out
    code, out, err = run(capsys, "context", "pandas missing", "--budget", "200")
    assert code == OK and "## Relevant memories" in out and "/200 tokens" in err


def test_exit_codes(hub, capsys, monkeypatch):
    assert run(capsys, "search")[0] == USAGE  # no query
    assert run(capsys, "search", "x", "--limit", "0")[0] == USAGE  # the hub's 400
    code, _, err = run(capsys, "upload", "--content", " ", "--json")
    assert code == USAGE and json.loads(err)["field"] == "content"
    assert run(capsys, "search", "x", "--token", "ult_000000000000_nope")[0] == AUTH
    assert run(capsys, "details", str(uuid.uuid4()))[0] == NOT_FOUND
    assert run(capsys, "skills", "show", "no-such-skill")[0] == NOT_FOUND
    assert run(capsys, "ingest", "/no/such/path")[0] == USAGE
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    code, _, err = run(capsys, "status", "--url", f"http://127.0.0.1:{closed}")
    assert code == UNAVAILABLE and "cannot reach the hub" in err
    monkeypatch.delenv("ULTRON_TOKEN")
    code, out, err = run(capsys, "status")
    assert code == AUTH and "token     not set" in out and "ultron login" in err


def test_ingest_shows_progress_and_waits_for_the_job(hub, capsys, tmp_path):
    (tmp_path / "a.jsonl").write_bytes(jsonl(DOCKER_TASK))
    (tmp_path / "b.jsonl").write_bytes(jsonl(DOCKER_TASK[:4]))
    code, out, err = run(capsys, "ingest", str(tmp_path), "--wait", "--interval", "0.1")
    assert code == OK, err
    assert "files [" in err and "2/2" in err and "job   [" in err
    assert out.splitlines()[0].split() == ["status", "messages", "name", "reason"]
    assert "2 files: 2 new" in out and " done: " in out
    code, out, _ = run(capsys, "ingest", str(tmp_path / "a.jsonl"), "--json")
    assert code == OK and json.loads(out)["files"][0]["status"] == "unchanged"
    (tmp_path / "empty").mkdir()
    assert run(capsys, "ingest", str(tmp_path / "empty"))[0] == USAGE


def test_ingest_text_from_standard_input(hub, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(
        "Error: ECONNREFUSED 127.0.0.1:5432 when the web container starts.\n"
        "Cause: the database was not ready yet.\nFix: add a healthcheck and depends_on condition.\n"))
    code, out, _ = run(capsys, "ingest-text", "-")
    assert code == OK and out.startswith("extractor: offline;")


def test_watch_reuploads_a_session_as_it_grows(hub, tmp_path, capsys):
    session = tmp_path / "run.jsonl"
    session.write_bytes(jsonl(DOCKER_TASK[:4]))
    watcher = Watcher(Ultron(), str(tmp_path), settle=1.0)
    assert watcher.poll(0.0) == [] and watcher.poll(0.5) == []  # not settled yet
    due = watcher.poll(1.0)
    assert [item.path for item, _ in due] == [session]
    assert [f.status for f in watcher.upload(due).files] == ["new"]
    assert watcher.poll(5.0) == []  # nothing changed since

    with session.open("ab") as out:
        out.write(jsonl(DOCKER_TASK[4:]))
    assert watcher.poll(6.0) == []  # it grew: wait until it settles
    due = watcher.poll(7.0)
    assert [f.status for f in watcher.upload(due).files] == ["changed"]

    code, out, _ = run(capsys, "watch", str(tmp_path), "--once", "--settle", "0", "--interval", "0.05")
    assert code == OK and "unchanged" in out and "run.jsonl" in out


def test_skills_list_show_and_install(skill, capsys, tmp_path):
    code, out, _ = run(capsys, "skills", "list")
    assert code == OK and skill in out and out.splitlines()[0].split()[:4] == ["slug", "space", "version", "score"]
    assert out.splitlines()[1].split()[:2] == [skill, "shared"]
    code, out, _ = run(capsys, "skills", "list", "--space", "shared", "--json")
    assert code == OK and [(s["slug"], s["space"]) for s in json.loads(out)] == [(skill, "shared")]
    assert run(capsys, "skills", "list", "--space", "team-x")[0] == AUTH  # the hub's 403: not a space it reads
    code, out, _ = run(capsys, "skills", "show", skill, "--space", "shared")
    assert code == OK and out.startswith("---")
    target = tmp_path / "skills"
    code, out, _ = run(capsys, "skills", "install", skill, "--dir", str(target))
    assert code == OK and out.startswith(f"Installed {skill} v1")
    assert (target / skill / "SKILL.md").read_text().startswith("---")
    code, out, _ = run(capsys, "skills", "install", skill, "--dir", str(target), "--json")
    assert json.loads(out)["updated"] is True


@pytest.mark.parametrize("slug", ["../escape", "..", "a/../../b", "/etc/passwd", ".hidden", "a\\b"])
def test_skills_install_refuses_slugs_that_leave_the_directory(hub, capsys, tmp_path, slug):
    code, _, err = run(capsys, "skills", "install", slug, "--dir", str(tmp_path / "skills"))
    assert code == USAGE and "refusing" in err
    assert not (tmp_path / "skills").exists() and not (tmp_path / "escape").exists()


def test_skills_install_refuses_a_link_out_of_the_directory(skill, capsys, tmp_path):
    (tmp_path / "skills").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "skills" / skill)
    code, _, err = run(capsys, "skills", "install", skill, "--dir", str(tmp_path / "skills"))
    assert code == USAGE and "leads outside" in err and not (tmp_path / "elsewhere" / "SKILL.md").exists()


def test_export_writes_memory_md_of_the_current_knowledge(skill, capsys, tmp_path):
    code, out, _ = run(capsys, "export", "--format", "md")
    assert code == OK and out.startswith("# MEMORY.md") and f"Skill: **{skill}**" in out
    target = tmp_path / "MEMORY.md"
    code, _, err = run(capsys, "export", "--out", str(target), "--space", "shared")
    assert code == OK and "wrote" in err and target.read_text().startswith("# MEMORY.md")
    assert run(capsys, "export", "--space", "team-x")[0] == AUTH
