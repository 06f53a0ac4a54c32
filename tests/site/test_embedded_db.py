"""The embedded PostgreSQL: start-up brings a fresh data directory up tuned, with the files the
hub owns there; manage.py attaches to it without DATABASE_URL; it stops cleanly."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ultron_site import embedded_db, startup

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_start_up_runs_a_fresh_embedded_server_with_our_settings(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    monkeypatch.setenv("ULTRON_DATA_DIR", str(data_dir))
    monkeypatch.delenv("DATABASE_URL", raising=False)  # restored after the test
    monkeypatch.setenv("ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB", "64")
    try:
        prepared = startup.prepare()
        assert (prepared.embedded, prepared.started) == (True, True)
        assert os.environ["DATABASE_URL"] == prepared.database_url
        with psycopg.connect(prepared.database_url) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "64MB"
            assert conn.execute("SELECT current_database()").fetchone()[0] == embedded_db.DATABASE_NAME
        # The hub owns the data directory here: a private secret key, the static directory.
        key_file = startup.secret_key_path(data_dir)
        key = key_file.read_text()
        assert len(key) >= 50 and stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert startup.static_root(data_dir).is_dir()

        # A second start-up attaches to the running server and keeps the key.
        os.environ.pop("DATABASE_URL")
        again = startup.prepare()
        assert (again.embedded, again.started) == (True, False)
        assert again.database_url == prepared.database_url and key_file.read_text() == key

        # manage.py in a new process, without DATABASE_URL, attaches too (as the README has it).
        environ = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        for command in (["migrate", "--noinput", "-v", "0"], ["create_agent", "startup-agent"]):
            result = subprocess.run(
                [sys.executable, "manage.py", *command], cwd=ROOT, env=environ,
                capture_output=True, text=True, timeout=300,
            )
            assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.strip(), "create_agent prints the token"

        # A changed setting is written before the next start and applies then.
        embedded_db.stop(data_dir)
        assert not embedded_db.is_running(data_dir)
        monkeypatch.setenv("ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB", "48")
        os.environ.pop("DATABASE_URL")
        restarted = startup.prepare()
        assert restarted.started
        with psycopg.connect(restarted.database_url) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "48MB"
        conf = (embedded_db.pgdata_path(data_dir) / "postgresql.conf").read_text()
        assert conf.count("include_if_exists = 'ultron.conf'") == 1
    finally:
        embedded_db.stop(data_dir)
