"""The memory service announces what happened to memories; clusters follow through receivers
that run inside the sender's transaction."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.utils.module_loading import import_string

from clusters.models import ClusterMember
from memories import signals
from memories.models import Memory
from memories.services import memory_archive, memory_upload
from ultron_site import pipeline

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def test_clusters_receive_every_memory_event():
    from django.dispatch import Signal

    declared = {name: value for name, value in vars(signals).items() if isinstance(value, Signal)}
    assert {"memory_added", "memory_changed", "memory_removed", "memories_archived",
            "embedding_dimensions_changed", "memories_reembedded"} <= set(declared)
    for name, signal in declared.items():  # every signal the module declares, a new one included
        assert signal.has_listeners(Memory), name


def test_a_new_memory_joins_a_cluster_and_leaves_it_when_archived():
    memory = memory_upload(content="pytest cannot import the package in a src layout").memory
    assert ClusterMember.objects.filter(memory=memory).exists()
    assert memory_archive(memory_id=memory.pk)
    assert not ClusterMember.objects.filter(memory=memory).exists()


def test_a_failing_receiver_rolls_back_the_upload():
    def broken(**kwargs):
        raise RuntimeError("cluster store unavailable")

    signals.memory_added.connect(broken, dispatch_uid="test.broken")
    try:
        with pytest.raises(RuntimeError, match="cluster store unavailable"):
            memory_upload(content="a memory whose cluster assignment fails")
    finally:
        signals.memory_added.disconnect(dispatch_uid="test.broken")
    assert not Memory.objects.exists()
    assert not ClusterMember.objects.exists()


def test_a_failing_receiver_rolls_back_the_archive():
    memory = memory_upload(content="docker build fails without network access").memory

    def broken(**kwargs):
        raise RuntimeError("no")

    signals.memory_removed.connect(broken, dispatch_uid="test.broken")
    try:
        with pytest.raises(RuntimeError):
            memory_archive(memory_id=memory.pk)
    finally:
        signals.memory_removed.disconnect(dispatch_uid="test.broken")
    assert Memory.objects.get(pk=memory.pk).status == "active"
    assert ClusterMember.objects.filter(memory=memory).exists()


_QUEUED_BY_NAME = re.compile(r"""enqueue(?:_on_commit)?\(\s*["']""")


def test_tasks_are_queued_by_function_and_every_scheduled_path_resolves():
    """Services queue the task function itself (an import the contract and readers see), never
    a dotted string; the pipeline's schedule names steps by path, and each resolves."""
    by_name = [str(source.relative_to(ROOT)) for app in ("core", "agents", "memories", "clusters", "ingestion", "ultron_site")
               for source in (ROOT / app).rglob("*.py") if _QUEUED_BY_NAME.search(source.read_text())]
    assert not by_name, f"queued by a string: {by_name}"
    from core.queue import task_path
    from memories.tasks import memory_summarize_task

    assert import_string(task_path(memory_summarize_task)) is memory_summarize_task
    for _, path in pipeline.STEPS:
        assert callable(import_string(path)), path
