"""``Ultron`` and ``AsyncUltron`` against the live hub: the seed's calls and return shapes, the
hub's errors as exceptions, session files uploaded from disk."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path

import pytest
from ultron import (
    AsyncUltron,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    Ultron,
    UltronError,
    UsageError,
)
from ultron.sessions import collect

from tests.ingestion.test_services import DOCKER_TASK, jsonl

pytestmark = pytest.mark.django_db(transaction=True)
FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"

PANDAS = dict(content="ModuleNotFoundError: No module named 'pandas'",
              context="Running data analysis script inside a Docker container",
              resolution="pip install pandas", tags=["python", "docker", "pandas"])


def test_upload_search_and_details_as_the_seed_uses_them(hub):
    ultron = Ultron()  # URL and token from ULTRON_URL / ULTRON_TOKEN
    record = ultron.upload_memory(**PANDAS)
    assert record.memory_type == "error" and record.tier == "warm" and record.status == "active"
    assert record.merged is False and record.hit_count == 1

    again = ultron.upload_memory(**PANDAS)
    assert again.merged is True and again.id == record.id and again.hit_count == 1  # its writer's own repeat counts no use
    assert again.similarity_score == pytest.approx(1.0)

    results = ultron.search_memories(query="Python import error pandas", detail_level="l1", limit=10)
    assert results[0].record.id == record.id and results[0].record.memory_type == "error"
    assert 0 < results[0].similarity_score <= 1 and results[0].record.summary_l0
    assert results[0].record.tags == ["python", "docker", "pandas"]

    unknown = str(uuid.uuid4())
    details = ultron.get_memory_details([record.id, unknown])
    assert [d.id for d in details] == [record.id] and details.missing == [unknown]
    assert details[0].content == PANDAS["content"] and details[0].resolution == "pip install pandas"
    assert details[0].agent == "agent-smith" and details[0].source == "api"

    stats = ultron.stats()
    assert stats.total == 1 and stats.by_type["error"] == 1
    assert ultron.health().status == "ok"
    ultron.close()


def test_async_twin_gives_the_same_records(hub):
    async def scenario():
        async with AsyncUltron(url=hub.url, token=hub.token) as ultron:
            record = await ultron.upload_memory(**PANDAS)
            results = await ultron.search_memories("pandas missing in docker", limit=3, memory_type="error")
            details = await ultron.get_memory_details([record.id])
            context = await ultron.get_context("pandas import error", token_budget=200)
            stats = await ultron.stats()
            with pytest.raises(NotFoundError):
                await ultron.get_skill("no-such-skill")
            return record, results, details, context, stats

    record, results, details, context, stats = asyncio.run(scenario())
    assert results[0].record.id == record.id == details[0].id
    assert record.id in [m.id for m in context.memories] and "[error]" in context.context
    assert 0 < context.tokens <= 200 and context.token_budget == 200
    assert stats.total == 1


def test_the_hubs_errors_arrive_as_typed_exceptions(hub, monkeypatch):
    with pytest.raises(AuthenticationError) as caught:
        Ultron(url=hub.url, token="ult_000000000000_wrong").stats()
    assert caught.value.status == 401 and caught.value.error == "authentication_failed"

    with monkeypatch.context() as env:
        env.delenv("ULTRON_TOKEN")
        with pytest.raises(AuthenticationError) as caught:
            Ultron(url=hub.url).stats()
    assert caught.value.error == "not_authenticated"

    ultron = Ultron()
    with pytest.raises(InvalidRequestError) as caught:
        ultron.upload_memory(content="   ")
    assert caught.value.status == 400 and caught.value.field == "content" and caught.value.error == "invalid"
    assert caught.value.message.startswith("content:")

    with pytest.raises(InvalidRequestError) as caught:
        ultron.upload_memory(content="ok", tags=["fine", 7])  # type: ignore[list-item]
    assert caught.value.field == "tags.1"

    with pytest.raises(NotFoundError) as caught:
        ultron.job(str(uuid.uuid4()))
    assert caught.value.status == 404 and caught.value.error == "not_found"
    with pytest.raises(NotFoundError):
        ultron.get_skill("no-such-skill")
    with pytest.raises(UsageError):
        ultron.get_skill("../etc")
    assert all(issubclass(e, UltronError) for e in (AuthenticationError, InvalidRequestError, NotFoundError))


def _session_tree(root):
    """Sessions in a tree, beside what a walk must leave out."""
    (root / "proj" / "deep").mkdir(parents=True)
    (root / "proj" / "deep" / "a.jsonl").write_bytes(jsonl(DOCKER_TASK))
    (root / "proj" / "b.jsonl").write_bytes(jsonl(DOCKER_TASK[:4]))
    shutil.copy(FORMATS / "gemini-checkpoint-build-fix.json", root / "proj" / "chat.json")
    (root / "proj" / "package.json").write_text('{"name": "app", "version": "1.0.0"}')
    (root / "proj" / "notes.md").write_text("# not a session\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "c.jsonl").write_bytes(jsonl(DOCKER_TASK))
    (root / "proj" / ".d.jsonl").write_bytes(jsonl(DOCKER_TASK))
    os.symlink(root / "proj" / "b.jsonl", root / "proj" / "link.jsonl")


def test_the_walk_takes_what_the_hubs_walk_takes(tmp_path):
    _session_tree(tmp_path)
    names = sorted(f.path.relative_to(tmp_path).as_posix() for f in collect([tmp_path]))
    assert names == ["proj/b.jsonl", "proj/chat.json", "proj/deep/a.jsonl"]
    hidden = collect([tmp_path / ".hidden"])  # a directory named explicitly may be hidden
    assert [f.path.name for f in hidden] == ["c.jsonl"]
    with pytest.raises(UsageError, match="no such file"):
        collect([tmp_path / "missing"])
    with pytest.raises(UsageError, match="session files"):
        (tmp_path / "readme.txt").write_text("hello")
        collect([tmp_path / "readme.txt"])


def test_ingest_uploads_files_in_batches_and_waits_for_the_job(hub, tmp_path):
    _session_tree(tmp_path)
    ultron = Ultron()
    seen = []
    result = ultron.ingest(paths=[str(tmp_path / "proj")], agent_id="agent-smith", batch_files=2,
                           on_progress=lambda *p: seen.append(p))
    assert result.total_files == 3 and len(result.job_ids) == 2  # 3 files, 2 a request
    assert {f.status for f in result.files} == {"new"}, [f.reason for f in result.files]
    assert all(f.name.startswith(str(tmp_path)) or f.name.startswith("~") for f in result.files)
    assert seen[0][:2] == (0, 3) and seen[-1][:2] == (3, 3)

    progress = ultron.wait(result.job_id, timeout=60, interval=0.2)
    assert progress.done and progress.files[0].segmentation == "done"

    again = ultron.ingest([str(tmp_path / "proj")])
    assert {f.status for f in again.files} == {"unchanged"}


def test_a_batch_the_hub_finds_too_large_is_split(hub, tmp_path, settings):
    (tmp_path / "one.jsonl").write_bytes(jsonl(DOCKER_TASK[:2]))
    (tmp_path / "two.jsonl").write_bytes(jsonl(DOCKER_TASK[:3]))
    (tmp_path / "big.jsonl").write_bytes(jsonl(DOCKER_TASK * 3))
    sizes = {p.name: p.stat().st_size for p in tmp_path.iterdir()}
    settings.ULTRON_INGEST_MAX_REQUEST_BYTES = sum(sizes.values())  # the three with the form's overhead: too big
    settings.ULTRON_INGEST_MAX_FILE_BYTES = sizes["big.jsonl"] - 1
    result = Ultron().ingest([str(tmp_path)])
    by_name = {os.path.basename(f.name): f for f in result.files}
    assert by_name["one.jsonl"].status == by_name["two.jsonl"].status == "new"
    assert by_name["big.jsonl"].status == "skipped"
    assert f"larger than {sizes['big.jsonl'] - 1} bytes" in by_name["big.jsonl"].reason


def test_ingest_text_extracts_memories(hub):
    result = Ultron().ingest_text(text=(
        "Investigation:\n1. pip install failed inside Docker\n"
        "2. Error: Could not find a version that satisfies the requirement flask\n"
        "3. Cause: container has no outbound network\n4. Fix: configure a proxy or use --network host\n"))
    assert result.extractor == "offline" and result.memories
    assert result.memories[0].memory_type and result.memories[0].summary_l0


def test_upload_memories_sends_batches_with_a_result_or_error_per_item(hub):
    ultron = Ultron()
    items = ultron.upload_memories([
        PANDAS,
        {"content": "   ", "context": "blank"},
        {**PANDAS, "content": PANDAS["content"].upper(), "tags": ["extra"]},
        "Prefer ruff over flake8 in this repository",  # a bare string is its content
    ])
    assert [(i.index, i.status, i.ok) for i in items] == [(0, 201, True), (1, 400, False), (2, 200, True),
                                                          (3, 201, True)]
    assert items[0].result.memory_type == "error" and items[2].result.merged
    assert items[2].result.id == items[0].result.id  # merged into the item stored just before
    assert items[1].error["field"] == "memories[1].content" and items[1].error["error"] == "invalid"

    many = [{"content": f"Service number {n} restarts when its queue backs up past {n * 10} messages",
             "tags": ["queue"]} for n in range(101)]  # two requests: the hub takes 100 at a time
    results = asyncio.run(_upload_async(hub, many))
    assert [i.index for i in results] == list(range(101)) and all(i.ok for i in results)
    with pytest.raises(UsageError):
        ultron.upload_memories([])


async def _upload_async(hub, memories):
    async with AsyncUltron(url=hub.url, token=hub.token) as ultron:
        return await ultron.upload_memories(memories)


def test_feedback_names_the_call_that_served_the_memory(hub):
    """A memory another agent wrote, served by search and by context, rated through the client;
    the rating round-trips and a wrong vote is reported for the curators."""
    from agents.services import agent_create, token_issue

    writer = Ultron(url=hub.url, token=token_issue(agent=agent_create(name="writer-wes")).token)
    record = writer.upload_memory(**PANDAS)
    writer.close()
    with Ultron(url=hub.url, token=hub.token) as ultron:
        [hit] = ultron.search_memories("pandas missing in docker", limit=1)
        assert hit.record.id == record.id and hit.serve_id
        voted = ultron.feedback(record.id, "helpful", serve_id=hit.serve_id)
        assert voted.rating == "helpful" and voted.feedback == 1 and not voted.reported
        context = ultron.get_context("pandas import error", token_budget=200)
        reported = ultron.feedback(record.id, "outdated", serve_id=context.serve_id, reason="pandas ships wheels now")
        assert reported.reported and reported.agents_reporting == 1 and reported.feedback == 0
        with pytest.raises(UsageError):
            ultron.feedback(record.id, "great", serve_id=context.serve_id)
