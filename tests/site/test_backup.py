"""manage.py backup / restore: a populated hub restored into a fresh database holds every row
it held; a restore refuses a database with data, fails without changing anything, and brings an
older backup up to date; a failed backup leaves no file under the name asked for."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from io import StringIO
from pathlib import Path

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations import CreateModel

from tests.site.hub_rows import populate
from ultron_site import backup

ROOT = Path(__file__).resolve().parents[2]


def _url(dbname: str) -> str:
    params = connection.get_connection_params()
    return f"postgresql://{params['user']}:@/{dbname}?host={params['host']}"


@pytest.fixture
def fresh_databases():
    """Make empty databases on the test server; dropped after the test."""
    made: list[str] = []

    def make() -> str:
        name = f"ultron_restore_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(_url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return name

    yield make
    with psycopg.connect(_url("postgres"), autocommit=True) as conn:
        for name in made:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(dbname: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": _url(dbname)}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def _all_rows(dbname: str) -> dict[str, list[str]]:
    """Every row of every table of the database, as text, in a stable order: as jsonb, whose keys
    are in one order whatever the columns' (a migration adds a column at the end of a table that
    another database has in the middle)."""
    with psycopg.connect(_url(dbname)) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {t: [r[0] for r in conn.execute(f'SELECT to_jsonb(x)::text FROM "{t}" x ORDER BY 1')] for t in tables}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_backup_restored_into_a_fresh_database_holds_every_row_and_an_older_one_is_migrated(
        settings, tmp_path, fresh_databases):
    populate(settings)
    dump = tmp_path / "hub.dump"
    out = StringIO()
    call_command("backup", str(dump), stdout=out)
    assert "backed up to" in out.getvalue() and dump.read_bytes()[:5] == b"PGDMP"
    assert dump.stat().st_mode & 0o077 == 0 and not dump.with_name("hub.dump.partial").exists()
    source = _all_rows(connection.settings_dict["NAME"])
    assert len(source["memories_memory"]) >= 6 and source["clusters_skill"]

    target = fresh_databases()
    restored = _manage(target, "restore", str(dump))
    assert restored.returncode == 0, restored.stderr
    assert _all_rows(target) == source

    # A database holding data is not overwritten without --force; what it holds is named.
    refused = _manage(target, "restore", str(dump))
    assert refused.returncode != 0
    assert f"already holds hub data (memories: {len(source['memories_memory'])}" in refused.stderr

    # A file cut short, or damaged, is reported with pg_restore's own message and changes nothing.
    data = dump.read_bytes()
    cut = tmp_path / "cut.dump"
    cut.write_bytes(data[: len(data) * 2 // 3])
    failed = _manage(target, "restore", str(cut), "--force")
    assert failed.returncode != 0 and "pg_restore cannot read" in failed.stderr and "end of file" in failed.stderr
    damaged = tmp_path / "damaged.dump"
    middle = len(data) * 3 // 4
    damaged.write_bytes(data[:middle] + bytes(b ^ 0x5A for b in data[middle:middle + 4096]) + data[middle + 4096:])
    failed = _manage(target, "restore", str(damaged), "--force")
    # Where the damage lands decides which step notices it: reading the table of contents (the
    # database is not touched), or restoring the data (rolled back). Either way pg_restore's own
    # words, or its exit status, follow ("pg_restore: error: …", or "out of memory" when the
    # damaged bytes are read as a length).
    assert failed.returncode != 0, failed.stderr
    if "pg_restore cannot read" in failed.stderr:
        assert re.search(r"pg_restore cannot read \S+: \S", failed.stderr) and "not touched" in failed.stderr
    else:
        assert "pg_restore failed" in failed.stderr and "as it was before" in failed.stderr
        assert re.search(r"pg_restore said: \S", failed.stderr), failed.stderr
    assert _all_rows(target) == source

    # A backup of an older schema (the memories app from before its newest table) restored over a
    # current database: the tables it predates are dropped, then migrate brings everything up to date.
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    key = graph.leaf_nodes("memories")[0]
    while not any(isinstance(op, CreateModel) for op in graph.nodes[key].operations):
        key = next(p.key for p in graph.node_map[key].parents if p.key[0] == "memories")
    previous = next(p.key for p in graph.node_map[key].parents if p.key[0] == "memories")
    older = fresh_databases()
    assert _manage(older, "restore", str(dump)).returncode == 0
    rolled_back = _manage(older, "migrate", "memories", previous[1])
    assert rolled_back.returncode == 0, rolled_back.stderr
    old_dump = tmp_path / "old.dump"
    assert _manage(older, "backup", str(old_dump)).returncode == 0
    brought_up = _manage(target, "restore", str(old_dump), "--force")
    assert brought_up.returncode == 0, brought_up.stderr
    assert "dropped tables the backup predates" in brought_up.stdout and "Applying memories." in brought_up.stdout
    plan = _manage(target, "migrate", "--check")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    rows = _all_rows(target)
    for table in ("memories_memory", "memories_memorycontribution", "clusters_knowledgecluster", "clusters_skill"):
        assert rows[table] == source[table], table


def test_a_failed_backup_leaves_no_file_under_the_name_asked_for(tmp_path, monkeypatch, db):
    """pg_dump dying half-way (here a stand-in that writes part of its file, then fails) leaves
    neither FILE nor FILE.partial; an earlier backup under that name is kept as it was."""
    fake = tmp_path / "pg_dump"
    fake.write_text("#!/bin/sh\nfor a; do case $a in --file=*) printf PGDMP-half > \"${a#--file=}\";; esac; done\n"
                    "echo 'pg_dump: error: connection lost' >&2; exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(backup, "find_tool", lambda *a, **k: backup.Tool(fake, 16, "16.2"))
    target = tmp_path / "hub.dump"
    target.write_text("yesterday's backup")
    with pytest.raises(CommandError, match="pg_dump failed .*connection lost"):
        call_command("backup", str(target))
    assert target.read_text() == "yesterday's backup"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hub.dump", "pg_dump"]
    with pytest.raises(CommandError, match="directory .* does not exist"):
        call_command("backup", str(tmp_path / "missing" / "hub.dump"))


def test_the_password_reaches_pg_dump_through_the_environment_only(tmp_path, monkeypatch, db):
    calls = []

    def run(args, env=None, **kwargs):
        calls.append((args, env))
        return subprocess.CompletedProcess(args, 1, "", "stopped here")

    monkeypatch.setitem(connection.settings_dict, "PASSWORD", "pw-not-for-ps")
    monkeypatch.setattr(backup, "find_tool", lambda *a, **k: backup.Tool(Path("/bin/false"), 16, "16.2"))
    monkeypatch.setattr(backup.subprocess, "run", run)
    with pytest.raises(CommandError):
        call_command("backup", str(tmp_path / "hub.dump"))
    [(args, env)] = calls
    assert "pw-not-for-ps" not in " ".join(args) and "-w" in args
    assert env["PGPASSWORD"] == "pw-not-for-ps" and env["PGDATABASE"] == connection.settings_dict["NAME"]


def test_restore_says_what_is_wrong_with_the_file(tmp_path, db):
    with pytest.raises(CommandError, match="no such backup file"):
        call_command("restore", str(tmp_path / "missing.dump"))
    (tmp_path / "notes.txt").write_text("not a dump")
    with pytest.raises(CommandError, match="is not a pg_dump custom-format archive"):
        call_command("restore", str(tmp_path / "notes.txt"))


def test_tools_older_than_the_server_are_passed_over_with_a_reason(tmp_path, monkeypatch):
    old = tmp_path / "pg_dump"
    old.write_text("#!/bin/sh\necho 'pg_dump (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'\n")
    old.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    chosen = backup.find_tool("pg_dump", server=16, embedded=False)
    assert chosen.path == backup.bundled_bin_dir(16) / "pg_dump" and chosen.major == 16
    assert "pg_dump on PATH is version 15.18, older than the server (16)" in chosen.note
    assert backup.find_tool("pg_dump", server=15, embedded=False).path == old
    # A server the package has no major for is read by its newest pg_dump (18); a newer one is not.
    assert backup.find_tool("pg_dump", server=17, embedded=False).major == 18
    with pytest.raises(backup.BackupError, match="Install the PostgreSQL 19 client tools"):
        backup.find_tool("pg_dump", server=19, embedded=False)
