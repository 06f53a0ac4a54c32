"""The embedded PostgreSQL: a fresh data directory comes up tuned, and stops cleanly."""

from __future__ import annotations

import psycopg
import pytest

from ultron_site import embedded_db


@pytest.mark.slow
def test_a_fresh_embedded_server_starts_with_our_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB", "64")
    data_dir = tmp_path / "data"
    try:
        uri = embedded_db.ensure_running(data_dir)
        with psycopg.connect(uri) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "64MB"
            assert conn.execute("SELECT current_database()").fetchone()[0] == embedded_db.DATABASE_NAME
        # A changed setting is written before the next start and applies then.
        embedded_db.stop(data_dir)
        assert not embedded_db.is_running(data_dir)
        monkeypatch.setenv("ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB", "48")
        uri = embedded_db.ensure_running(data_dir)
        with psycopg.connect(uri) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "48MB"
        conf = (embedded_db.pgdata_path(data_dir) / "postgresql.conf").read_text()
        assert conf.count("include_if_exists = 'ultron.conf'") == 1
    finally:
        embedded_db.stop(data_dir)
