from __future__ import annotations

import json
import os
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection

from agents.scoping import in_space
from bench._common import eval_dir
from ingestion import services
from ingestion.judgements.segmentation import segment_offline, validate_spans
from ingestion.models import (
    RawChunk,
    RawUpload,
    SegmentMemory,
    SessionRecord,
    TaskSegment,
    WorkState,
)
from ingestion.parsing import parse_jsonl
from ingestion.services import pipeline, work
from memories.models import Memory, Status
from memories.providers.llm import InvalidReply

pytestmark = pytest.mark.django_db
EVAL = eval_dir() / "transcripts" / "claude_code"

DOCKER_TASK = [
    {"role": "user", "content": "pip install fails inside my Docker build, please fix it"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                       "input": {"command": "docker build ."}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                  "content": "ERROR: Could not find a version that satisfies the requirement flask"}]},
    {"role": "assistant", "content": "The build container has no outbound network. The fix was to pass "
                                     "--network host so pip can reach the index; I changed the Makefile."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash",
                                       "input": {"command": "docker build --network host ."}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Successfully built 3f2a"}]},
    {"role": "assistant", "content": "Fixed: the image builds successfully now."},
    {"role": "user", "content": "great, thanks. From now on always pin package versions in requirements files."},
]
SECOND_TASK = [
    {"role": "user", "content": "Next task: write a haiku about the autumn garden and the falling maple leaves"},
    {"role": "assistant", "content": "Red leaves drift and fall / the garden exhales slowly / autumn settles in"},
]


def jsonl(rows) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def ingest(agent, rows, name="sessions/run-1.jsonl"):
    job, [result] = services.files_ingest(agent=agent, files=[(name, jsonl(rows) if isinstance(rows, list) else rows)])
    return result


def process(result):
    return services.session_process(session_id=result.session_id)


def test_a_new_session_is_archived_segmented_scored_and_extracted(agent):
    result = ingest(agent, DOCKER_TASK + SECOND_TASK)
    assert result.status == "new" and result.messages == 10
    raw = RawUpload.objects.get()
    # The archive's redacted text is written by segmentation; until then the bytes wait in the database.
    assert raw.content is None and raw.metadata["archive"] == "pending" and raw.chunks.exists()
    process(result)
    session = SessionRecord.objects.get(pk=result.session_id)
    assert session.segmentation == WorkState.DONE
    raw.refresh_from_db()
    assert raw.redacted and raw.metadata["archive"] == "redacted" and not raw.chunks.exists()
    assert bytes(raw.content).decode().splitlines() == jsonl(DOCKER_TASK + SECOND_TASK).decode().splitlines()
    segments = list(TaskSegment.objects.filter(session=session).order_by("index"))
    assert len(segments) == 2
    assert segments[0].topic.startswith("pip install fails")
    assert segments[0].scoring == WorkState.DONE and segments[0].score >= 0.7
    assert segments[0].task_type == "debugging"
    links = SegmentMemory.objects.filter(segment=segments[0]).select_related("memory")
    contents = [link.memory.content for link in links]
    assert any("Could not find a version" in c for c in contents)
    assert any("pin package versions" in c for c in contents)
    memory = next(link.memory for link in links if "Could not find" in link.memory.content)
    assert "--network host" in memory.resolution
    assert {"trajectory", "type:debugging"} <= set(memory.tags)
    assert memory.source == "segment" and memory.provenance["segment"] == segments[0].pk


def test_same_bytes_again_is_unchanged_and_nothing_is_redone(agent):
    first = ingest(agent, DOCKER_TASK)
    process(first)
    segments = list(TaskSegment.objects.values_list("pk", flat=True))
    again = ingest(agent, DOCKER_TASK)
    assert again.status == "unchanged" and again.session_id == first.session_id
    assert RawUpload.objects.count() == 1
    assert list(TaskSegment.objects.values_list("pk", flat=True)) == segments


def test_an_appended_session_keeps_its_old_segments_and_adds_new_ones(agent):
    first = ingest(agent, DOCKER_TASK)
    process(first)
    old = TaskSegment.objects.get()
    memories_before = Memory.objects.count()
    appended = ingest(agent, DOCKER_TASK + SECOND_TASK)
    assert appended.status == "changed" and appended.session_id == first.session_id
    process(appended)
    segments = list(TaskSegment.objects.order_by("index"))
    assert [s.pk for s in segments][0] == old.pk and len(segments) == 2
    assert Memory.objects.filter(status=Status.ACTIVE).count() >= memories_before


def test_an_edited_session_archives_memories_only_from_vanished_segments(agent):
    first = ingest(agent, DOCKER_TASK + SECOND_TASK)
    process(first)
    from_docker = set(SegmentMemory.objects.filter(segment__index=0).values_list("memory_id", flat=True))
    assert from_docker
    edited = ingest(agent, SECOND_TASK)  # the Docker part is gone
    process(edited)
    for memory_id in from_docker:
        assert Memory.objects.get(pk=memory_id).status == Status.ARCHIVED
    assert TaskSegment.objects.count() == 1


def test_a_memory_also_uploaded_by_an_agent_is_not_archived_with_its_segment(agent, api):
    first = ingest(agent, DOCKER_TASK)
    process(first)
    link = SegmentMemory.objects.first()
    memory = link.memory
    from memories.services import memory_upload

    memory_upload(content=memory.content, context=memory.context, resolution=memory.resolution, agent=agent)
    process(ingest(agent, SECOND_TASK))
    assert Memory.objects.get(pk=memory.pk).status == Status.ACTIVE


def test_llm_segmentation_failure_is_recorded_retried_and_parked(agent, openai_llm, settings):
    settings.ULTRON_PIPELINE_MAX_ATTEMPTS = 2
    settings.ULTRON_PIPELINE_RETRY_SECONDS = 0
    result = ingest(agent, DOCKER_TASK)
    openai_llm.script("no json", "still none", '{"segments": [{"start": 0, "end": 99}]}')
    assert not services.session_segment(session_id=result.session_id)
    session = SessionRecord.objects.get(pk=result.session_id)
    assert session.segmentation == WorkState.FAILED and session.attempts == 1
    assert "no usable reply" in session.last_error and TaskSegment.objects.count() == 0
    assert openai_llm.asked_kinds() == ["segment"] * 3
    # recovery: the model answers properly on the next run
    openai_llm.script('{"segments": [{"start": 0, "end": 7, "topic": "docker pip network"}]}')
    assert services.sessions_segment() == {"claimed": 1, "segmented": 1, "failed": 0}
    session.refresh_from_db()
    assert session.segmentation == WorkState.DONE and session.attempts == 0 and session.last_error == ""
    assert TaskSegment.objects.get().topic == "docker pip network"
    assert openai_llm.asked_kinds() == ["segment"] * 4


def test_repeated_failures_park_the_item(agent, openai_llm, settings):
    settings.ULTRON_PIPELINE_MAX_ATTEMPTS = 2
    settings.ULTRON_PIPELINE_RETRY_SECONDS = 0
    settings.ULTRON_LLM_MAX_ATTEMPTS = 1
    result = ingest(agent, DOCKER_TASK)
    openai_llm.script("garbage", "garbage")
    services.sessions_segment()
    services.sessions_segment()
    session = SessionRecord.objects.get(pk=result.session_id)
    assert session.segmentation == WorkState.PARKED and session.attempts == 2
    assert services.sessions_segment()["claimed"] == 0  # parked items wait for a person
    assert openai_llm.asked_kinds() == ["segment", "segment"]  # one per run, none once parked


def test_llm_extraction_failure_never_marks_a_segment_done(agent, openai_llm, settings):
    settings.ULTRON_PIPELINE_RETRY_SECONDS = 0
    result = ingest(agent, DOCKER_TASK)
    openai_llm.script(
        '{"segments": [{"start": 0, "end": 7, "topic": "docker"}]}',
        '{"score": 0.9, "task_type": "debugging", "completed": true, "errors_met": true, '
        '"errors_resolved": true, "reusable": true, "reasons": ["fixed"]}',
        (500, {"error": "down"}), (500, {"error": "down"}), (500, {"error": "down"}),
    )
    process(result)
    segment = TaskSegment.objects.get()
    assert segment.scoring == WorkState.DONE and segment.extraction == WorkState.FAILED
    assert segment.attempts == 1 and segment.last_error and segment.extracted_items is None
    assert Memory.objects.count() == 0
    assert openai_llm.asked_kinds() == ["segment", "score", "extract", "extract", "extract"]


def test_a_crash_mid_extraction_resumes_without_losing_or_doubling(agent, openai_llm, monkeypatch):
    result = ingest(agent, DOCKER_TASK)
    lessons = ["Docker builds need --network host when the CI runner has no outbound proxy",
               "Pin every Python dependency to an exact version in requirements files",
               "Pass --network host to docker build so pip can reach the package index"]
    items = [{"content": text, "context": "ci", "resolution": f"fix {i}", "confidence": 0.9, "tags": ["docker"]}
             for i, text in enumerate(lessons)]
    openai_llm.script(
        '{"segments": [{"start": 0, "end": 7, "topic": "docker"}]}',
        '{"score": 0.9, "task_type": "debugging", "completed": true, "errors_met": true, '
        '"errors_resolved": true, "reusable": true, "reasons": []}',
        json.dumps({"memories": items}),
        # One per extracted memory, the second one twice (classified again after the crash);
        # summaries wait for commit.
        *(['{"memory_type": "pattern"}'] * 4),
    )
    services.session_segment(session_id=result.session_id)
    services.segments_score()
    real_upload = pipeline.memory_services.memories_upload
    calls = {"n": 0}

    def crashing_upload(**kwargs):
        link = kwargs["on_stored"]

        def crash_on_the_second(position, stored):
            calls["n"] += 1
            if calls["n"] == 2:  # while the second memory is being stored, before its link
                raise KeyboardInterrupt("worker killed")  # not an Exception: nothing catches it
            link(position, stored)

        return real_upload(**{**kwargs, "on_stored": crash_on_the_second})

    monkeypatch.setattr(pipeline.memory_services, "memories_upload", crashing_upload)
    segment = TaskSegment.objects.get()
    with pytest.raises(KeyboardInterrupt):
        services.segment_extract(segment_id=segment.pk)
    assert Memory.objects.count() == 1 and SegmentMemory.objects.count() == 1
    monkeypatch.setattr(pipeline.memory_services, "memories_upload", real_upload)
    TaskSegment.objects.filter(pk=segment.pk).update(lease_until=None)  # the dead worker's lease
    assert services.segments_extract()["extracted"] == 1
    assert SegmentMemory.objects.count() == 3 and Memory.objects.count() == 3
    assert all(m.hit_count == 1 for m in Memory.objects.all())
    assert len([r for r in openai_llm.requests if "Extract reusable" in json.dumps(r["body"])]) == 1


def _back_to_pending() -> None:
    """With autocommit, ingestion already processed the sessions inline (sync queue): undo that,
    so the workers below find the work still to do."""
    Memory.objects.all().delete()
    TaskSegment.objects.all().delete()
    SessionRecord.objects.update(segmentation=WorkState.PENDING, lease_until=None, segmented_sha256="")


@pytest.mark.django_db(transaction=True)
def test_two_workers_never_claim_the_same_session(agent):
    for i in range(8):
        ingest(agent, DOCKER_TASK[:1] + [{"role": "assistant", "content": f"answer {i}"}], name=f"s{i}.jsonl")
    _back_to_pending()
    claimed: list[list[int]] = []
    barrier = threading.Barrier(2)

    shared = SessionRecord.objects.values_list("space_id", flat=True).first()

    def worker():
        barrier.wait()
        with in_space(shared):  # a worker works in one space at a time (agents.scoping.each_space)
            claimed.append(work.claim(SessionRecord.objects.filter(segmentation=WorkState.PENDING), 5))
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first, second = claimed
    assert not set(first) & set(second)
    assert len(first) + len(second) == 8


def test_a_worker_that_outlived_its_lease_leaves_the_item_to_its_new_owner(agent):
    ingest(agent, DOCKER_TASK)
    _back_to_pending()
    session = SessionRecord.objects.get()
    assert work.claim(SessionRecord.objects.all(), 1) == [session.pk]
    stale = SessionRecord.objects.get().lease_until
    # the first worker stalls past its lease; a second one claims the session
    SessionRecord.objects.update(lease_until=stale - timedelta(hours=1))
    assert work.claim(SessionRecord.objects.all(), 1) == [session.pk]
    taken_over = SessionRecord.objects.get().lease_until
    late = SessionRecord.objects.get()
    late.lease_until = stale  # the first worker's copy, loaded under its own lease
    assert work.work_done(late, "segmentation", []) is False
    work.attempt_failed(SessionRecord, session.pk, "segmentation", RuntimeError("late"), lease=stale)
    record = SessionRecord.objects.get()
    assert (record.segmentation, record.attempts, record.lease_until) == (WorkState.PENDING, 0, taken_over)
    # the new owner's outcome counts
    assert services.session_segment(session_id=session.pk) is True
    assert SessionRecord.objects.get().segmentation == WorkState.DONE and TaskSegment.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_workers_running_the_pipeline_do_everything_once(agent, settings):
    settings.ULTRON_RAW_ARCHIVE_REDACT = False  # segmented again below: the archive keeps the bytes
    for i in range(6):
        ingest(agent, DOCKER_TASK, name=f"copy-{i}.jsonl")
    _back_to_pending()
    errors = []

    shared = SessionRecord.objects.values_list("space_id", flat=True).first()

    def worker():
        try:
            with in_space(shared):  # a worker works in one space at a time (agents.scoping.each_space)
                services.sessions_segment(limit=2)
                services.sessions_segment(limit=2)
                services.segments_score()
                services.segments_extract()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert SessionRecord.objects.filter(segmentation=WorkState.DONE).count() == 6
    assert TaskSegment.objects.count() == 6
    assert TaskSegment.objects.filter(extraction=WorkState.DONE).count() == 6
    # the six identical segments produced each memory once, merged five times (one agent's
    # repeats: kept as contributions, counted as no use)
    for memory in Memory.objects.all():
        assert memory.contributions.count() + 1 == SegmentMemory.objects.filter(memory=memory).count()
        assert memory.hit_count == 1


def test_text_ingest_extracts_labelled_notes(agent):
    result = services.text_ingest(agent=agent, text=(
        "Investigation:\n1. pip install failed inside Docker\n2. Error: Could not find a version that satisfies"
        " the requirement\n3. Cause: container has no outbound network\n4. Fix: configure a proxy or use --network host"
    ))
    assert len(result.uploads) == 1
    memory = result.uploads[0].memory
    assert "Could not find a version" in memory.content
    assert memory.context == "container has no outbound network"
    assert memory.resolution == "configure a proxy or use --network host"
    assert memory.source == "ingest_text" and memory.provenance["raw_upload"] == result.raw.pk
    assert RawUpload.objects.filter(kind="text").count() == 1


def test_text_ingest_falls_back_to_rules_when_the_llm_fails(agent, openai_llm):
    openai_llm.script("nonsense", "nonsense", "nonsense", '{"memory_type": "preference"}')
    result = services.text_ingest(agent=agent, text="We always use ruff instead of flake8 in this team.")
    assert result.extractor.startswith("offline") and len(result.uploads) == 1
    assert openai_llm.asked_kinds() == ["extract", "extract", "extract", "classify"]


def test_raw_archive_stores_redacted_text_by_default_and_originals_only_when_asked(
        agent, settings, django_capture_on_commit_callbacks):
    rows = [{"role": "user", "content": "my key is sk-0a1b2c3d4e5f60718293a4b5c6d7e8f9, fix auth"},
            {"role": "assistant", "content": "Rotate it."}]
    result = ingest(agent, rows)
    raw = RawUpload.objects.get()
    assert raw.content is None and raw.chunks.exists()  # the request only stores the bytes; the worker redacts
    with django_capture_on_commit_callbacks(execute=True):
        process(result)
    assert not raw.chunks.exists()  # processed from the database, then removed
    raw.refresh_from_db()
    assert raw.redacted and b"sk-0a1b2c3d" not in bytes(raw.content) and b"<" in bytes(raw.content)
    assert "sk-0a1b2c3d" not in json.dumps(list(TaskSegment.objects.values_list("messages", flat=True)))

    settings.ULTRON_RAW_ARCHIVE_REDACT = False
    ingest(agent, rows, name="kept-as-sent.jsonl")
    kept = RawUpload.objects.get(name="kept-as-sent.jsonl")
    assert not kept.redacted and b"sk-0a1b2c3d" in bytes(kept.content) and not kept.chunks.exists()


def test_large_files_are_not_archived_but_still_processed(agent, settings, django_capture_on_commit_callbacks):
    settings.ULTRON_RAW_ARCHIVE_MAX_BYTES = 100
    RawChunk.CHUNK_BYTES, chunk = 1000, RawChunk.CHUNK_BYTES  # several pieces, read back in order
    try:
        data = jsonl(DOCKER_TASK * 3)
        job, [result] = services.files_ingest(agent=agent, files=[("big.jsonl", data)])
    finally:
        RawChunk.CHUNK_BYTES = chunk
    raw = RawUpload.objects.get()
    assert raw.content is None and raw.chunks.count() == -(-len(data) // 1000)
    assert services.raw_bytes(raw) == data
    with django_capture_on_commit_callbacks(execute=True):
        process(result)
    assert SessionRecord.objects.get().segmentation == WorkState.DONE
    assert not RawChunk.objects.exists()


def test_no_session_bytes_are_written_under_the_data_directory(agent, settings, tmp_path):
    """A web host keeps nothing the pipeline needs: a worker on another host reads the bytes from
    the database (docs/deployment.md)."""
    settings.ULTRON_DATA_DIR = tmp_path
    result = ingest(agent, DOCKER_TASK + SECOND_TASK)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert process(result) and SessionRecord.objects.get().segmentation == WorkState.DONE


def test_a_spool_file_an_older_hub_wrote_is_still_read(agent, tmp_path):
    result = ingest(agent, DOCKER_TASK)
    raw = RawUpload.objects.get()
    spooled = tmp_path / "old.jsonl"
    spooled.write_bytes(services.raw_bytes(raw))
    RawChunk.objects.all().delete()
    RawUpload.objects.filter(pk=raw.pk).update(spool_path=str(spooled))
    assert process(result) and SessionRecord.objects.get().segmentation == WorkState.DONE


# --- paths ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "team" / ".hidden").mkdir(parents=True)
    (root / "team" / "a.jsonl").write_bytes(jsonl(DOCKER_TASK))
    (root / "team" / "notes.txt").write_text("not a session")
    (root / "team" / ".hidden" / "b.jsonl").write_bytes(jsonl(DOCKER_TASK))
    (root / "team" / ".c.jsonl").write_bytes(jsonl(DOCKER_TASK))
    outside = tmp_path / "secret.jsonl"
    outside.write_bytes(jsonl(DOCKER_TASK))
    os.symlink(outside, root / "team" / "link.jsonl")
    os.symlink(tmp_path, root / "team" / "escape")
    return root, outside


def test_directories_expand_to_visible_jsonl_files_only(tree):
    root, _ = tree
    collected = services.paths_collect([str(root)], roots=[str(root)])
    assert [Path(p).name for _, p in collected] == ["a.jsonl"]


@pytest.mark.parametrize("make", [
    lambda root, outside: str(outside),
    lambda root, outside: str(root / "team" / ".." / ".." / "secret.jsonl"),
    lambda root, outside: str(root / "team" / "link.jsonl"),
    lambda root, outside: str(root / "team" / "escape" / "secret.jsonl"),
    lambda root, outside: str(root / "team" / ".hidden" / "b.jsonl"),
    lambda root, outside: "/etc/passwd",
])
def test_paths_outside_the_roots_are_refused(tree, make):
    root, outside = tree
    with pytest.raises(services.IngestError) as info:
        services.paths_collect([make(root, outside)], roots=[str(root)])
    assert info.value.code == "permission_denied"


@pytest.mark.skipif(not EVAL.exists(), reason="../shared/eval transcripts not present")
def test_the_real_sessions_go_through_offline(agent):
    """The real exports under 1 MB (a subagent's, a tool-heavy one, a short one) go through every
    step without an error. The two large ones, and the memories all five give, are the ingest
    bench's: tests/site/test_bench.py holds its segment, eligible and memory counts exact."""
    files = [(p.name, p.read_bytes()) for p in sorted(EVAL.glob("*.jsonl")) if p.stat().st_size < 1024 * 1024]
    assert len(files) >= 3, [p.name for p in EVAL.glob("*.jsonl")]
    job, results = services.files_ingest(agent=agent, files=files)
    assert {r.status for r in results} == {"new"}
    for result in results:
        process(result)
    assert SessionRecord.objects.filter(segmentation=WorkState.DONE).count() == len(files)
    assert not TaskSegment.objects.exclude(last_error="").exists()
    assert TaskSegment.objects.filter(scoring=WorkState.DONE).count() == TaskSegment.objects.count()
    assert TaskSegment.objects.filter(extraction=WorkState.DONE).exists()


def test_offline_segmenter_splits_on_a_clear_goal_change():
    parsed = parse_jsonl(jsonl(DOCKER_TASK + SECOND_TASK))
    spans = segment_offline(parsed.messages)
    assert [(s.start, s.end) for s in spans] == [(0, 8), (8, 10)]


@pytest.mark.parametrize("answer", [
    {"segments": [{"start": 1, "end": 4}]},                                   # does not start at 0
    {"segments": [{"start": 0, "end": 2}, {"start": 4, "end": 9}]},           # gap
    {"segments": [{"start": 0, "end": 12}]},                                  # out of bounds
    {"segments": [{"start": 0, "end": 5}]},                                   # does not cover
    {"segments": []}, {"parts": []}, {"segments": [{"start": "0", "end": 9}]},
])
def test_invalid_segmentations_are_rejected(answer):
    with pytest.raises(InvalidReply):
        validate_spans(answer, 0, 10)
