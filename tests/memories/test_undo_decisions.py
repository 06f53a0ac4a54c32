"""Every curator decision can be undone (issue 47): a merge split back with nothing lost, "different"
and a conflict's settlement reopened, an edit reverted from the history, and in the review queue a
decided row that names its memories and keeps an Undo."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.models import (
    CandidateStatus,
    ChangeKind,
    ChangeState,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MemoryEdit,
    MergeCandidate,
    Status,
)
from memories.services import conflict_decide, memory_upload
from memories.services.edit import memory_archive_by, memory_edit
from memories.services.inputs import MemoryInputError
from memories.services.queue import family_dismiss, family_merge
from memories.services.review import contribution_split
from memories.services.unmerge import conflict_reopen, family_reopen, family_unmerge, memory_revert

pytestmark = pytest.mark.django_db

REFUND = "Refund API answered 409 on retry: the idempotency key was reused"
REFUND_NEW = "Refund API returns 409 Conflict when a retry reuses its idempotency key"


def _pair(first: Memory, second: Memory) -> MergeCandidate:
    return MergeCandidate.objects.get_or_create(memory=second, duplicate_of=first, defaults={
        "space_id": first.space_id, "similarity": 0.9, "conflicts": []})[0]


def _state(memory: Memory) -> tuple:
    memory = Memory.objects.get(pk=memory.pk)
    return (memory.status, memory.content, memory.context, memory.resolution, sorted(memory.tags), memory.hit_count,
            sorted(memory.contributions.values_list("pk", flat=True)))


def test_a_merge_is_split_back_with_each_side_as_it_was(apart):
    older = memory_upload(content=REFUND, context="retry logic in the refunds worker", tags=["payments"]).memory
    newer = memory_upload(content=REFUND_NEW, resolution="derive the key from the refund id", tags=["api"]).memory
    memory_upload(content=REFUND_NEW, resolution="derive the key from the refund id")  # an exact duplicate: a contribution
    Memory.objects.filter(pk=newer.pk).update(hit_count=5)
    before = {m.pk: _state(m) for m in (older, newer)}
    assert len(before[newer.pk][-1]) == 1
    pair = _pair(older, newer)
    kept = family_merge(candidate_ids=[pair.pk], decided_by="quinn", keep_text="newer")
    assert kept.content == REFUND_NEW and kept.context == "retry logic in the refunds worker"
    assert Memory.objects.get(pk=kept.pk).hit_count == before[older.pk][5] + 5

    memories = family_unmerge(candidate_ids=[pair.pk], user="quinn")
    assert [m.pk for m in memories] == [older.pk, newer.pk]
    assert {m.pk: _state(m) for m in (older, newer)} == before  # texts, tags, hits and contributions of each
    pair.refresh_from_db()
    assert (pair.status, pair.decided_by) == (CandidateStatus.OPEN, "")  # back in the queue
    assert MemoryEdit.objects.filter(memory=newer, action="unmerge").exists()
    with pytest.raises(MemoryInputError):  # undone already
        family_unmerge(candidate_ids=[pair.pk], user="quinn")
    kept = family_merge(candidate_ids=[pair.pk], decided_by="quinn", keep_text="older")  # and it can be decided again
    assert kept.content == REFUND


def test_splitting_a_merged_memory_from_its_page_restores_it_not_a_copy(apart):
    older = memory_upload(content=REFUND).memory
    newer = memory_upload(content=REFUND_NEW, context="the refunds worker").memory
    family_merge(candidate_ids=[_pair(older, newer).pk], decided_by="quinn", keep_text="older")
    body = MemoryContribution.objects.get(memory=older, provenance__folded_from=str(newer.pk))
    restored = contribution_split(contribution_id=body.pk, editor="quinn")
    assert restored.pk == newer.pk and restored.status == Status.ACTIVE and restored.context == "the refunds worker"
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2
    assert MergeCandidate.objects.get(memory=newer, duplicate_of=older).status == CandidateStatus.DISMISSED


def test_different_is_reopened(apart):
    first, second = memory_upload(content=REFUND).memory, memory_upload(content=REFUND_NEW).memory
    pair = _pair(first, second)
    family_dismiss(candidate_ids=[pair.pk], decided_by="quinn")
    assert family_reopen(candidate_ids=[pair.pk], user="quinn") == 1
    pair.refresh_from_db()
    assert pair.status == CandidateStatus.OPEN


def _conflict() -> tuple[Memory, Memory, KnowledgeChange]:
    old = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode disabled.",
                        context="billing-api CI").memory
    result = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.",
                           context="billing-api CI")
    return old, result.memory, result.conflicts[0]


@pytest.mark.parametrize("decision", ["new", "old", "both", "merge"])
def test_every_settlement_of_a_conflict_is_reopened(decision):
    old, new, conflict = _conflict()
    candidate = _pair(old, new)
    before = {m.pk: _state(m) for m in (old, new)}
    conflict_decide(change_id=conflict.pk, decision=decision, user="cora")
    assert {m.pk: _state(m) for m in (old, new)} != before or decision == "both"
    reopened = conflict_reopen(change_id=conflict.pk, user="cora")
    assert (reopened.kind, reopened.state, reopened.order) == (ChangeKind.CONFLICT, ChangeState.OPEN, "")
    assert not reopened.evidence.startswith("conflict settled")
    assert {m.pk: _state(m) for m in (old, new)} == before  # both current again, each with its own text
    candidate.refresh_from_db()
    assert candidate.status == CandidateStatus.OPEN
    assert not KnowledgeChange.objects.filter(kind=ChangeKind.SUPERSESSION, state=ChangeState.DONE).exists()
    conflict_decide(change_id=conflict.pk, decision="both", user="cora")  # and it can be settled again


def test_an_edit_is_reverted_from_the_history():
    memory = memory_upload(content=REFUND, context="refunds worker", tags=["payments"]).memory
    memory_edit(memory_id=memory.pk, editor="quinn", content="Refund API: 409 on retry", context="", tags=["oops"])
    entry = MemoryEdit.objects.filter(memory=memory, action="edit").latest("created_at")
    result = memory_revert(memory_id=memory.pk, edit_id=entry.pk, editor="quinn")
    memory.refresh_from_db()
    assert (memory.content, memory.context, memory.tags) == (REFUND, "refunds worker", ["payments"])
    assert set(result.changed) == {"content", "context", "tags"}
    assert MemoryEdit.objects.filter(memory=memory, action="edit").count() == 2  # the revert is in the history too
    memory_archive_by(memory_id=memory.pk, editor="quinn")
    archived = MemoryEdit.objects.get(memory=memory, action="archive")
    with pytest.raises(MemoryInputError):  # an entry that changed no text has nothing to revert to
        memory_revert(memory_id=memory.pk, edit_id=archived.pk, editor="quinn")


def test_a_decided_row_names_its_memories_and_undoes_in_place(quinn, apart):
    older, newer = memory_upload(content=REFUND).memory, memory_upload(content=REFUND_NEW).memory
    pair = _pair(older, newer)
    decide = reverse("admin:memories_memory_queue_decide")
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": f"family-{pair.pk}"}
    page = quinn.post(decide, {"action": "keep-older", "items": [f"family:{pair.pk}"]}, **htmx).content.decode()
    assert "Merged into the oldest" in page and reverse("admin:memories_memory_change", args=[older.pk]) in page
    assert f'value="family:{pair.pk}"' in page and 'value="unmerge"' in page
    page = quinn.post(decide, {"action": "unmerge", "items": [f"family:{pair.pk}"]}, **htmx).content.decode()
    assert "Merge undone" in page and reverse("admin:memories_memory_change", args=[newer.pk]) in page
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2


def test_a_settled_conflict_row_reopens_in_place(quinn):
    decide = reverse("admin:memories_memory_queue_decide")
    old, new, conflict = _conflict()
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": f"change-{conflict.pk}"}
    page = quinn.post(decide, {"action": "new", "items": [f"change:{conflict.pk}"]}, **htmx).content.decode()
    assert "Settled: the newer memory is current" in page and 'value="reopen"' in page
    page = quinn.post(decide, {"action": "reopen", "items": [f"change:{conflict.pk}"]}, **htmx).content.decode()
    assert "Reopened" in page and Memory.objects.get(pk=old.pk).status == Status.ACTIVE


def test_the_history_offers_revert_and_the_page_reverts(quinn):
    memory = memory_upload(content=REFUND, context="refunds worker").memory
    memory_edit(memory_id=memory.pk, editor="quinn", content="Refund API: 409 on retry", context="refunds worker")
    page = quinn.get(reverse("admin:memories_memory_change", args=[memory.pk])).content.decode()
    entry = MemoryEdit.objects.get(memory=memory, action="edit")
    url = reverse("admin:memories_memory_revert", args=[memory.pk, entry.pk])
    assert url in page and "Revert to before this" in page
    response = quinn.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"].endswith(f"{memory.pk}/change/")
    assert Memory.objects.get(pk=memory.pk).content == REFUND
