"""A person changing a memory (curators, in the admin site): an edit goes through the same
validation, redaction and embedding as an upload, the cluster follows, the duplicate check
says whether the edit made it a near-duplicate of another memory, and every change is kept in
the memory's history (who, when, before → after)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from memories import signals
from memories.judgements.duplicate import DuplicateMatch, duplicate_decide
from memories.judgements.summarize import extractive_summaries
from memories.models import Memory, MemoryEdit, MemoryType, Status
from memories.selectors import memory_duplicate_neighbours
from memories.services.embedding_space import embed_texts
from memories.services.inputs import MemoryInputError, memory_input_clean
from memories.services.lifecycle import memory_archive, memory_restore
from memories.text import content_hash, embedding_text, memory_body

EDITABLE = ("content", "context", "resolution", "tags", "memory_type")


@dataclass
class EditResult:
    memory: Memory
    changed: list[str]
    redactions: Counter = field(default_factory=Counter)
    # Another active memory the edited one now duplicates or may duplicate (most similar first).
    near_duplicates: list[DuplicateMatch] = field(default_factory=list)


def _snapshot(memory: Memory, fields: tuple[str, ...] = EDITABLE) -> dict[str, Any]:
    return {name: getattr(memory, name) for name in fields}


def memory_history_record(*, memory_id: Any, editor: str, action: str, before: dict | None = None,
                          after: dict | None = None, note: str = "") -> MemoryEdit:
    space_id = Memory.objects.filter(pk=memory_id).values_list("space_id", flat=True).first()
    return MemoryEdit.objects.create(space_id=space_id, memory_id=memory_id, editor=editor[:150], action=action,
                                     before=before or {}, after=after or {}, note=note[:300])


def memories_history_record(*, memory_ids: list[Any], space_id: int, editor: str, action: str,
                            before: dict | None = None, after: dict | None = None, note: str = "") -> int:
    """One history entry for each of ``memory_ids`` (all of space ``space_id``), in one insert:
    what another app did to many memories at once (a cluster merged, split or moved). Returns
    how many were written."""
    rows = [MemoryEdit(space_id=space_id, memory_id=memory_id, editor=editor[:150], action=action[:20],
                       before=before or {}, after=after or {}, note=note[:300]) for memory_id in memory_ids]
    return len(MemoryEdit.objects.bulk_create(rows))


def memory_edit(
    *, memory_id: Any, editor: str, content: Any, context: Any = "", resolution: Any = "", tags: Any = None,
    memory_type: str | None = None,
) -> EditResult:
    """Change a memory's body, tags and (optionally) type. The fields are validated and
    redacted like an upload's; a changed body is re-embedded, its summaries re-cut and its
    cluster updated. Raises ``MemoryInputError`` (naming the field) for bad input and
    ``Memory.DoesNotExist`` when there is no such memory."""
    if memory_type is not None and memory_type not in MemoryType.values:
        raise MemoryInputError("memory_type", f"must be one of {', '.join(MemoryType.values)}")
    clean = memory_input_clean(content=content, context=context, resolution=resolution, tags=tags)
    body_changed_vector: list[float] | None = None
    with transaction.atomic():
        # The memory's row first, the cluster's after (memory_changed below): the order every writer keeps,
        # so an edit racing an upload waits instead of deadlocking (flow.md#concurrency).
        memory = Memory.objects.select_for_update().defer("embedding").get(pk=memory_id)
        before = _snapshot(memory)
        body_changed = (clean.content, clean.context, clean.resolution) != (
            memory.content, memory.context, memory.resolution)
        memory.content, memory.context, memory.resolution = clean.content, clean.context, clean.resolution
        memory.tags = clean.tags
        # A new type is a type decision of its own (services/types.py: recorded, undoable).
        type_changed = memory_type is not None and memory_type != memory.memory_type
        update = ["content", "context", "resolution", "tags", "updated_at"]
        if body_changed:
            body_changed_vector = embed_texts([embedding_text(clean.content, clean.context, clean.resolution)])[0]
            memory.embedding = body_changed_vector
            memory.content_hash = content_hash(clean.content, clean.context, clean.resolution)
            memory.summary_l0, memory.overview_l1 = extractive_summaries(
                clean.content, clean.context, clean.resolution)
            if clean.redactions:
                counts = Counter(memory.redaction_counts)
                counts.update(clean.redactions)
                memory.redaction_counts = dict(counts)
            update += ["embedding", "content_hash", "summary_l0", "overview_l1", "redaction_counts"]
        after = _snapshot(memory)
        changed = [name for name in EDITABLE if before[name] != after[name]]
        if not changed and not type_changed:
            return EditResult(memory, [], clean.redactions)
        if changed:
            memory.save(update_fields=update)
            memory_history_record(
                memory_id=memory.pk, editor=editor, action="edit",
                before={k: before[k] for k in changed}, after={k: after[k] for k in changed},
                note=f"redacted: {redaction_summary(clean.redactions)}" if clean.redactions else "",
            )
        if type_changed:
            # Imported here: types records history through this module.
            from memories.services.types import memory_type_set

            memory_type_set(memory_id=memory.pk, memory_type=str(memory_type), user=editor)
            memory.memory_type = str(memory_type)
            changed.append("memory_type")
        # An archived memory is in no cluster: there is no centroid to correct.
        if body_changed and memory.status == Status.ACTIVE:
            signals.memory_changed.send(sender=Memory, memory_id=memory.pk)
    near: list[DuplicateMatch] = []
    # An edit never merges: the duplicate rule only tells the curator which memories it now resembles.
    if body_changed_vector is not None and memory.status == Status.ACTIVE:
        found = duplicate_decide(
            body=memory_body(memory.content, memory.context, memory.resolution), verdicts={},
            neighbours=memory_duplicate_neighbours(body_hash=memory.content_hash, vector=body_changed_vector,
                                                   space_id=memory.space_id, exclude=memory.pk),  # type: ignore[arg-type]  # never null (stubs read a default as optional)
        )
        near = [m for m in found if m.memory.pk != memory.pk]
    return EditResult(memory, changed, clean.redactions, near)


def memory_archive_by(*, memory_id: Any, editor: str) -> bool:
    return _status_change(memory_archive, memory_id, editor, "archive", Status.ACTIVE, Status.ARCHIVED)


def memory_restore_by(*, memory_id: Any, editor: str) -> bool:
    return _status_change(memory_restore, memory_id, editor, "restore", Status.ARCHIVED, Status.ACTIVE)


def _status_change(change: Any, memory_id: Any, editor: str, action: str, before: str, after: str) -> bool:
    """Archive or restore through the lifecycle service and, if it happened, record who did it."""
    done = change(memory_id=memory_id)
    if done:
        memory_history_record(memory_id=memory_id, editor=editor, action=action,
                              before={"status": before}, after={"status": after})
    return done


def redaction_summary(counts: Any) -> str:
    """"2× <EMAIL>, 1× <LLM_API_KEY>": what redaction removed, for history notes and messages."""
    return ", ".join(f"{n}× {tag}" for tag, n in sorted(counts.items()))
