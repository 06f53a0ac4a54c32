"""A curator's merge review: what to do with the uploads that were folded into a memory as
contributions (accept the memory's text as it is, write the merged text by hand, or split a
contribution out as a memory of its own), each change kept in the memory's history."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from memories import signals
from memories.judgements.classify import classify_decide
from memories.models import CandidateStatus, Memory, MemoryContribution, MergeCandidate, Status
from memories.services.edit import EditResult, memory_edit, memory_history_record
from memories.services.embedding_space import embed_texts
from memories.services.inputs import MemoryInputError, memory_input_clean
from memories.services.types import type_review_record
from memories.services.upload import _store_new
from memories.text import content_hash, embedding_text


def contributions_accept(*, memory_id: Any, editor: str) -> int:
    """The memory's text already says it all: its pending contributions count as merged."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().defer("embedding").get(pk=memory_id)
        done = memory.contributions.filter(merged_at__isnull=True).update(merged_at=timezone.now())
        Memory.objects.filter(pk=memory.pk).update(merge_pending=False)
        memory_history_record(memory_id=memory.pk, editor=editor, action="accept",
                              note=f"{done} contribution(s) accepted as merged, text unchanged")
    return done


def memory_merge_write(*, memory_id: Any, editor: str, content: Any, context: Any = "",
                       resolution: Any = "") -> EditResult:
    """The curator writes the merged text: an edit (redaction, re-embedding, cluster, history)
    after which the pending contributions count as merged."""
    with transaction.atomic():
        memory = Memory.objects.defer("embedding").get(pk=memory_id)
        result = memory_edit(memory_id=memory_id, editor=editor, content=content, context=context,
                             resolution=resolution, tags=memory.tags)
        memory.contributions.filter(merged_at__isnull=True).update(merged_at=timezone.now())
        Memory.objects.filter(pk=memory_id).update(merge_pending=False)
    return result


def contribution_split(*, contribution_id: Any, editor: str) -> Memory:
    """A contribution is a different memory after all: it becomes an active memory of its own
    (classified, embedded, clustered), takes its hit with it, and the pair is recorded as a
    dismissed merge candidate so the duplicate check does not fold them again."""
    with transaction.atomic():
        contribution = MemoryContribution.objects.select_for_update().select_related("memory").get(pk=contribution_id)
        original = contribution.memory
        if original.status != Status.ACTIVE:
            raise MemoryInputError("status", "the memory this contribution belongs to is no longer active")
        folded = contribution.provenance.get("folded_from")
        same_space = Memory.objects.filter(space_id=original.space_id)  # type: ignore[misc]  # never null (stubs read a default as optional)
        if folded and same_space.filter(pk=folded, status=Status.ARCHIVED).exists():
            # A memory merged into this one: split back, it is itself again (its id, contributions, history).
            from memories.services.unmerge import memory_unfold

            restored = memory_unfold(keep_id=original.pk, drop_id=folded, editor=editor)
            # The pair is different: recorded so that the duplicate check does not fold them again.
            decided = {"status": CandidateStatus.DISMISSED, "decided_by": editor[:150], "decided_at": timezone.now()}
            if not MergeCandidate.objects.filter(memory_id__in=[original.pk, restored.pk],
                                                 duplicate_of_id__in=[original.pk, restored.pk]).update(**decided):
                MergeCandidate.objects.create(space_id=original.space_id, memory=restored, duplicate_of=original,
                                              similarity=round(float(contribution.similarity), 4), **decided)
            return restored
        clean = memory_input_clean(content=contribution.content, context=contribution.context,
                                   resolution=contribution.resolution, tags=contribution.tags)
        vector = embed_texts([embedding_text(clean.content, clean.context, clean.resolution)])[0]
        decision = classify_decide(clean.content, clean.context, clean.resolution, vector=vector)
        memory_type = decision.memory_type
        body_hash = content_hash(clean.content, clean.context, clean.resolution)
        if body_hash == original.content_hash:
            raise MemoryInputError("content", "this contribution has the same text as the memory; nothing to split")
        result = _store_new(clean, memory_type, vector, body_hash, agent=contribution.agent,
                            source=contribution.source, provenance={**contribution.provenance,
                                                                    "split_from": str(original.pk)},
                            space_id=original.space_id)  # type: ignore[arg-type]  # never null (stubs read a default as optional)
        new = result.memory
        type_review_record(memory=new, decision=decision)
        contribution.delete()
        still_pending = original.contributions.filter(merged_at__isnull=True).exists()
        # The split contribution takes its hit along; the original keeps at least the 1 every memory starts with.
        Memory.objects.filter(pk=original.pk).update(hit_count=Greatest(F("hit_count") - 1, 1),
                                                     merge_pending=still_pending)
        MergeCandidate.objects.create(
            space_id=original.space_id, memory=new, duplicate_of=original, similarity=round(float(contribution.similarity), 4),
            status=CandidateStatus.DISMISSED, decided_by=editor[:150], decided_at=timezone.now(),
        )
        memory_history_record(memory_id=original.pk, editor=editor, action="split",
                              after={"split_into": str(new.pk)}, note="a contribution became its own memory")
        memory_history_record(memory_id=new.pk, editor=editor, action="split",
                              before={"contribution_of": str(original.pk)})
        signals.memory_added.send(sender=Memory, memory_id=new.pk)  # clusters after the memory rows
    return new
