"""The hub as it runs in production, attacked from outside: gunicorn with four workers (threads
too, as ``make run`` starts it) and pipeline runs as their own processes, on the test database.

- 50 concurrent identical uploads make one memory with 50 hits and 49 contributions; 50
  concurrent near-duplicates lose no hit and leave no two active memories the duplicate rule
  says are one; a curator's edit racing duplicate uploads of the same memory loses neither.
- ``kill -9`` of a pipeline run in the middle of segmentation, of extraction and of
  crystallization, and of the web server in the middle of an ingest upload: after a restart
  everything completes, and the counts (sessions, segments, memories, hits, contributions,
  skills) equal those of a run without the crash.
- two pipeline workers taking the same queue at once leave the same counts as one worker.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import numpy as np
import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents.services import agent_create, token_issue
from ingestion import services as ingestion_services
from ingestion.models import SegmentMemory, SessionRecord, TaskSegment
from memories.models import Memory, MemoryContribution, MemoryEdit, Status
from memories.services import embedding_space_ensure, embedding_space_forget, memory_upload
from memories.services.edit import memory_edit
from memories.thresholds import model_thresholds
from tests.spaces import as_hub

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "tests" / "data" / "sessions_written"
SESSION_FILES = ["cc02_docker_slim.jsonl", "cc03_pip_venv_correction.jsonl", "oa01_npm_peer_deps.jsonl"]


def _test_database_url() -> str:
    """DATABASE_URL with the test database's name, for the processes this module starts."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": _test_database_url(), "ULTRON_API_RATE": "0",
           "PYTHONUNBUFFERED": "1",
           "ULTRON_MAX_TAGS": "30"}  # room for a tag of each racing upload
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gunicorn:
    def __init__(self, workers: int = 4) -> None:
        self.workers = workers
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> Gunicorn:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "ultron_site.wsgi:application",
             "--config", "python:ultron_site.gunicorn_conf", "--bind", f"127.0.0.1:{self.port}",
             "--workers", str(self.workers), "--threads", "4", "--timeout", "300"],
            cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        # Healthy once the workers have loaded their models (ultron_site.gunicorn_conf).
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.process.stderr.read().decode()[-3000:]
            try:
                if httpx.get(f"{self.url}/api/health", timeout=5).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.kill()  # never left behind: the fixture that would stop it has not started
        raise AssertionError("gunicorn did not become healthy in 300 s")

    def kill(self) -> None:
        """``kill -9`` of the master and every worker."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def web(django_db_setup) -> Iterator[Gunicorn]:
    """One server for the module's tests (its four workers take a while to load their models)."""
    server = Gunicorn().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _embedding_space(django_db_setup) -> None:
    """Every test starts with the embedding space recorded, as a running hub has it: the flush
    after the previous test emptied its table, while the server's workers keep having verified
    it (a worker that had not would find memories and no space, and refuse to embed)."""
    embedding_space_forget()
    embedding_space_ensure()


def _token(name: str = "swarm", staff: bool = False) -> str:
    return token_issue(agent=agent_create(name=name, staff=staff)).token


def _parallel(count: int, call: Callable[[int], httpx.Response]) -> list[httpx.Response]:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(call, range(count)))


def _client(web: Gunicorn, token: str) -> httpx.Client:
    return httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {token}"}, timeout=300)


def test_fifty_identical_uploads_make_one_memory_with_fifty_hits(web):
    payload = {"content": f"Alembic autogenerate misses a renamed column {uuid.uuid4().hex[:6]}: it drops and "
                          "re-adds it, losing the data",
               "resolution": "Edit the migration to use op.alter_column(new_column_name=...)"}
    # Fifty agents: a memory's use counts once per agent a day, so each upload after the first is one hit.
    tokens = [_token(f"swarm-{i}") for i in range(50)]
    with _client(web, tokens[0]) as client:
        answers = _parallel(50, lambda i: client.post("/api/memories/upload", json=payload,
                                                      headers={"Authorization": f"Bearer {tokens[i]}"}))
    assert all(a.status_code in (200, 201) for a in answers), {a.status_code: a.text[:300] for a in answers}
    assert sorted(a.status_code for a in answers).count(201) == 1
    ids = {a.json()["id"] for a in answers}
    assert len(ids) == 1
    memory = Memory.objects.get(pk=ids.pop())
    assert memory.hit_count == 50
    assert MemoryContribution.objects.filter(memory=memory).count() == 49


NEAR = [
    "Alembic autogenerate misses a renamed column: it drops and re-adds it, losing the data",
    "alembic autogenerate misses renamed columns, it drops and re-adds them and the data is lost",
    "Alembic's autogenerate misses a renamed column - it drops and re-adds it, so data is lost",
    "Alembic autogenerate misses a column rename: it drops the column and re-adds it, losing data",
    "autogenerate in Alembic misses a renamed column; it drops and re-adds it and loses the data",
]


def test_fifty_near_duplicates_lose_no_hit_and_leave_no_duplicate_pair(web):
    tokens = [_token(f"swarm-{i}") for i in range(50)]
    with _client(web, tokens[0]) as client:
        answers = _parallel(50, lambda i: client.post("/api/memories/upload", json={"content": NEAR[i % len(NEAR)]},
                                                      headers={"Authorization": f"Bearer {tokens[i]}"}))
    assert all(a.status_code in (200, 201) for a in answers), [a.text[:300] for a in answers]
    active = list(Memory.objects.filter(status=Status.ACTIVE))
    assert sum(m.hit_count for m in active) == 50
    assert sum(1 + MemoryContribution.objects.filter(memory=m).count() for m in active) == 50
    vectors = np.array([m.embedding for m in active], dtype=float)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, 0)
    assert similarity.max() < model_thresholds().duplicate, similarity.max()


def test_a_curators_edit_racing_duplicate_uploads_loses_neither(web, agent):
    text = "Alembic autogenerate misses a renamed column: it drops and re-adds it, losing the data"
    fix = "Edit the generated migration by hand: op.alter_column(new_column_name=...)"
    memory = memory_upload(content=text, resolution=fix, agent=agent, tags=["db"]).memory
    with _client(web, _token()) as client, ThreadPoolExecutor(max_workers=21) as pool:
        uploads = [pool.submit(client.post, "/api/memories/upload", json={"content": text, "resolution": fix,
                                                                         "tags": [f"t{i}"]})
                   for i in range(20)]
        while not any(u.done() for u in uploads):  # the uploads are flowing: the edit lands among them
            time.sleep(0.01)
        # a curator re-types and re-tags the memory; its text stays, so the uploads stay its duplicates
        edit = pool.submit(as_hub(memory_edit), memory_id=memory.pk, editor="curator", content=text, resolution=fix,
                           memory_type="pattern", tags=["alembic", "migrations"])
        answers = [u.result() for u in uploads]
        edit.result()
        connection.close()  # the edit ran on the pool thread's own connection
    assert all(a.status_code == 200 and a.json()["id"] == str(memory.pk) for a in answers), [a.text for a in answers]
    assert sum(not u.done() for u in uploads) == 0
    memory.refresh_from_db()
    assert memory.memory_type == "pattern" and {"alembic", "migrations"} <= set(memory.tags)  # the edit holds
    assert memory.hit_count == 2  # the swarm agent's use, once a day (no upload lost: the contributions below)
    assert MemoryContribution.objects.filter(memory=memory).count() == 20
    edited_at = MemoryEdit.objects.get(memory=memory, action="edit").created_at  # (a type change adds its own row)
    contributions = list(MemoryContribution.objects.filter(memory=memory))
    after = [c for c in contributions if c.created_at > edited_at]
    assert after and len(after) < len(contributions), "the edit did not land among the uploads: no race was run"
    # the uploads merged after the edit added their tags to the edited ones
    assert {tag for c in after for tag in c.tags} <= set(memory.tags)


def _read_response(sock: socket.socket) -> str:
    """One HTTP response, headers and body (the body may come in a later segment than the
    headers), up to its Content-Length or the server closing the connection."""
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _response_length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


def _response_length(data: bytes) -> int:
    head, _, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + 4 + int(value)
    return len(data) + 1  # no length given: read until the server closes


def test_a_gigabyte_upload_is_refused_before_it_is_read(web, agent):
    """A client announcing 1 GiB gets its 413 after the headers and a first megabyte; the server
    reads no more and its workers do not grow."""
    import psutil

    workers = psutil.Process(web.process.pid).children()
    before = sum(w.memory_info().rss for w in workers)
    token = token_issue(agent=agent).token
    boundary = uuid.uuid4().hex
    head = (f"POST /api/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {2**30}\r\n\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.jsonl\"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", web.port), timeout=60) as sock:
        sock.sendall(head.encode() + b'{"role": "user", "content": "x"}\n' * 30_000)  # about 1 MB of 1 GiB
        answer = _read_response(sock)
    assert answer.startswith("HTTP/1.1 413"), answer[:300]
    assert '"error":"too_large"' in answer.replace(" ", "")
    after = sum(w.memory_info().rss for w in workers)
    assert after - before < 64 * 2**20, (before, after)


# --- kill -9 ---------------------------------------------------------------------------------

# Runs one pipeline step in a process that kills itself (SIGKILL: no cleanup, no rollback
# handler, exactly like the OOM killer or a pulled plug) on the nth call of a function.
_DYING_RUN = """
import importlib, os, signal, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
django.setup()
module_name, attr, nth, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
module = importlib.import_module(module_name)
real = getattr(module, attr)
calls = [0]
def dying(*args, **kwargs):
    calls[0] += 1
    if calls[0] == nth:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)
setattr(module, attr, dying)
from django.core.management import call_command
call_command("run_pipeline", "--step", step)
"""


def _run_step(step: str, *, die_at: tuple[str, str, int] | None = None) -> None:
    """One pipeline step. Killed: in a process of its own that dies at the nth call of
    ``die_at``'s function. Not killed: here, as the worker that takes over after the crash
    (the committed state is all it shares with the dead one; a new process would only add the
    seconds its models take to load)."""
    if die_at is None:
        from ultron_site.pipeline import failed_steps, run_step

        result = run_step(step)
        assert not failed_steps({step: result}), result
        return
    module, attr, nth = die_at
    command = [sys.executable, "-c", _DYING_RUN, module, attr, str(nth), step]
    done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr[-3000:])


def _ingest(agent) -> None:
    files = [(name, (SESSIONS / name).read_bytes()) for name in SESSION_FILES]
    ingestion_services.files_ingest(agent=agent, files=files)


def _counts() -> dict[str, object]:
    memories = Memory.objects.filter(status=Status.ACTIVE)
    return {
        "sessions": SessionRecord.objects.count(),
        "segments": TaskSegment.objects.count(),
        "segment_memories": SegmentMemory.objects.count(),
        "memories": memories.count(),
        "hits": sum(memories.values_list("hit_count", flat=True)),
        "contributions": MemoryContribution.objects.count(),
        "contents": sorted(memories.values_list("content", flat=True)),
    }


def _wipe() -> None:
    MemoryContribution.objects.all().delete()
    Memory.objects.all().delete()
    SessionRecord.objects.all().delete()


def _leases_run_out() -> None:
    """What a killed worker had claimed is free again once its lease ends: here at once, as if
    the lease's seconds had passed (the claim itself is tested in tests/ingestion)."""
    for model in (SessionRecord, TaskSegment):
        model.objects.filter(lease_until__isnull=False).update(lease_until=timezone.now() - timedelta(seconds=1))


def _pipeline(kills: dict[str, tuple[str, str, int]]) -> None:
    for step in ("segmentation", "scoring", "extraction"):
        if step in kills:
            _run_step(step, die_at=kills[step])
            _leases_run_out()
        _run_step(step)


_CLEAN: dict[str, object] = {}


def _clean_counts(agent) -> dict[str, object]:
    """The counts of the sessions run through the pipeline without incident, computed by
    the first test that needs them; the tables are emptied again afterwards."""
    if not _CLEAN:
        _ingest(agent)
        _pipeline({})
        _CLEAN.update(_counts())
        _wipe()
    return _CLEAN


def test_killed_pipeline_runs_complete_after_a_restart_with_nothing_lost_or_doubled(agent, monkeypatch):
    monkeypatch.setattr("ingestion.services.accept.enqueue_on_commit", lambda *args, **kwargs: None)
    clean = _clean_counts(agent)
    assert clean["segments"] and clean["memories"], clean
    _ingest(agent)
    _pipeline({
        # in the middle of a session's segmentation: its messages redacted, its segments not stored
        "segmentation": ("ingestion.services.pipeline", "_redacted_messages", 3),
        # in the middle of extraction: one segment's memories stored, the next segment's not
        "extraction": ("memories.services", "memories_upload", 2),
    })
    assert _counts() == clean


# A pipeline worker that takes one item at a time until the step's queue is empty.
_DRAINING_WORKER = """
import os, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
django.setup()
from ultron_site.pipeline import run_step
taken = 0
while (claimed := run_step(sys.argv[1])["claimed"]):
    taken += claimed
print(taken)
"""


def test_two_pipeline_workers_over_one_queue_process_each_item_once(agent, monkeypatch):
    monkeypatch.setattr("ingestion.services.accept.enqueue_on_commit", lambda *args, **kwargs: None)
    clean = _clean_counts(agent)
    _ingest(agent)
    finished = {"segmentation": SessionRecord.objects.filter(segmentation="done"),
                "scoring": TaskSegment.objects.filter(scoring="done"),
                "extraction": TaskSegment.objects.filter(extraction="done")}
    for step in ("segmentation", "scoring", "extraction"):
        before = finished[step].count()  # scoring marks a segment not worth extracting done at once
        command = [sys.executable, "-c", _DRAINING_WORKER, step]
        env = _env(ULTRON_PIPELINE_BATCH="1")  # one item per claim, so the two take turns
        workers = [subprocess.Popen(command, cwd=ROOT, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        taken = []
        for worker in workers:
            out, err = worker.communicate(timeout=600)
            assert worker.returncode == 0, err[-3000:]
            taken.append(int(out.split()[-1]))
        # every item the step finished was claimed by exactly one of the two
        done = finished[step].count() - before
        assert done and sum(taken) == done, (step, taken, done)
    assert _counts() == clean


def test_a_web_server_killed_mid_upload_loses_nothing_once_the_upload_is_sent_again(agent):
    token = token_issue(agent=agent).token
    body = (SESSIONS / SESSION_FILES[0]).read_bytes()
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{SESSION_FILES[0]}\"\r\n"
            "Content-Type: application/x-ndjson\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    payload = head + body + tail
    web = Gunicorn(workers=1).start()  # one process to kill and restart
    try:
        with socket.create_connection(("127.0.0.1", web.port)) as sock:
            sock.sendall((f"POST /api/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                          f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                          f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload[: len(payload) // 2])
            time.sleep(1)
            web.kill()  # half the file sent
    finally:
        web.stop()
    assert SessionRecord.objects.count() == 0  # nothing half-stored
    web = Gunicorn(workers=1).start()  # one process to kill and restart
    try:
        with _client(web, token) as client:
            files = {"files": (SESSION_FILES[0], body, "application/x-ndjson")}
            first = client.post("/api/ingest", files=files)
            again = client.post("/api/ingest", files=files)
    finally:
        web.stop()
    assert first.status_code == 202 and first.json()["files"][0]["status"] == "new", first.text
    assert again.json()["files"][0]["status"] == "unchanged", again.text
    assert SessionRecord.objects.count() == 1


def test_killed_crystallization_completes_once_after_a_restart(agent):
    facts = [
        ("pytest cannot import the package in a src layout: ModuleNotFoundError: No module named 'shop'",
         "pip install -e . so the package is importable"),
        ("ModuleNotFoundError for the project package when running pytest with a src/ layout",
         "Install the project in editable mode: pip install -e ."),
        ("pytest collection fails: No module named 'shop' (package lives under src/)",
         "Set pythonpath = src under [tool.pytest.ini_options] in pyproject.toml"),
        ("Running pytest from the repo root gives ModuleNotFoundError for a src-layout package",
         "Add pythonpath = [\"src\"] to the pytest configuration"),
        ("src layout: tests fail with ModuleNotFoundError until the package is installed",
         "Run pip install -e . in the virtualenv before pytest"),
        ("pytest cannot find the package under src and fails with ModuleNotFoundError",
         "Verify with python -c 'import shop' after pip install -e ."),
    ]
    for content, resolution in facts:
        memory_upload(content=content, resolution=resolution, agent=agent)
    from clusters.models import KnowledgeCluster, Skill, SkillVersion

    eligible = KnowledgeCluster.objects.filter(member_count__gte=settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
    if not eligible.exists():
        _run_step("cluster_repair")
    assert KnowledgeCluster.objects.filter(member_count__gte=settings.ULTRON_CRYSTALLIZATION_THRESHOLD).exists()
    # killed as the skill is being written
    _run_step("crystallization", die_at=("clusters.judgements.skill_draft", "_draft", 1))
    assert SkillVersion.objects.count() == 0 and Skill.objects.count() == 0
    assert not KnowledgeCluster.objects.filter(last_crystallization_at__isnull=False).exists()
    _run_step("crystallization")
    outcome = list(KnowledgeCluster.objects.values_list("pk", "last_crystallization_result"))
    assert any(result for _, result in outcome), outcome
    versions = SkillVersion.objects.count()
    assert versions <= 1 and Skill.objects.count() == versions
    _run_step("crystallization")  # nothing left to do: nothing doubled
    assert SkillVersion.objects.count() == versions
    assert list(KnowledgeCluster.objects.values_list("pk", "last_crystallization_result")) == outcome
