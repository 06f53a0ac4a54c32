"""The embedded PostgreSQL killed in the middle of writes (``kill -9`` of its postmaster, as the
OOM killer or a pulled plug would): the hub's next start says what happened, the server
recovers, and every write that was committed is there.

The hub runs here as an operator runs it, in processes of its own on a data directory of its
own with no ``DATABASE_URL``, so ``manage.py`` starts (and restarts) the embedded server."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ultron_site import embedded_db

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

# Creates agents one transaction at a time and prints each name once its commit returned.
_WRITER = """
import sys
from ultron_site.startup import prepare
prepare()
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
django.setup()
from agents.services import agent_create
for i in range(100000):
    agent_create(name=f"crash-{i}")
    print(f"crash-{i}", flush=True)
"""


@pytest.fixture
def hub_dir():
    # Under the project's var/ like the default data directory: the server's own user (when
    # the suite runs as root) can reach it.
    directory = ROOT / "var" / f"crash-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    try:
        yield directory
    finally:
        embedded_db.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _env(directory: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return {**env, "ULTRON_DATA_DIR": str(directory), "ULTRON_EMBEDDED_PG_SHARED_BUFFERS_MB": "128",
            "PYTHONUNBUFFERED": "1"}


def _manage(directory: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(directory),
                          capture_output=True, text=True, timeout=600)


def test_a_killed_embedded_server_recovers_and_keeps_every_committed_write(hub_dir):
    migrated = _manage(hub_dir, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    writer = subprocess.Popen([sys.executable, "-c", _WRITER], cwd=ROOT, env=_env(hub_dir),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    committed: list[str] = []
    assert writer.stdout is not None
    while len(committed) < 40:
        line = writer.stdout.readline()
        assert line, writer.stderr.read()[-3000:] if writer.stderr else "the writer stopped"
        committed.append(line.strip())
    postmaster = int((embedded_db.pgdata_path(hub_dir) / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)  # mid-write: the writer is in its loop
    out, err = writer.communicate(timeout=120)
    committed += out.split()
    assert writer.returncode != 0, "the writer should have lost its server"
    assert not embedded_db.is_running(hub_dir)

    started = time.monotonic()
    after = _manage(hub_dir, "shell", "-c",
                    "from agents.models import Agent; "
                    "print('\\n'.join(Agent.objects.filter(name__startswith='crash-').values_list('name', flat=True)))")
    assert after.returncode == 0, after.stderr[-3000:]
    assert "was not shut down cleanly" in after.stderr and "committed write is kept" in after.stderr, after.stderr
    stored = {word for word in after.stdout.split() if word.startswith("crash-")}
    assert set(committed) <= stored, sorted(set(committed) - stored)[:5]
    assert len(stored) <= len(committed) + 1  # at most the one in flight, committed unanswered
    assert time.monotonic() - started < 120

    embedded_db.stop(hub_dir)
    clean = _manage(hub_dir, "check")  # a start after a clean stop says nothing about a crash
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert "not shut down cleanly" not in clean.stderr
