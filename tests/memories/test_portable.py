"""The memory side of an import (memories.services.portable): records are stored as the file
gives them (id, times, counts), keyed so that a second import changes nothing, and a row that
names a memory the hub lacks is refused naming the field."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest

from memories.models import Memory, MemoryContribution, MergeCandidate
from memories.services import (
    MemoryInputError,
    embedding_space_ensure,
    memory_contribution_import,
    memory_import,
    merge_candidate_import,
)
from memories.text import content_hash

pytestmark = pytest.mark.django_db

CREATED = datetime(2024, 5, 1, 8, 30, tzinfo=UTC)
UPDATED = datetime(2024, 6, 2, 9, 45, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _embedding_space():
    embedding_space_ensure()


def _vector(axis: int = 0) -> list[float]:
    vector = np.zeros(384)
    vector[axis] = 1.0
    return vector.tolist()


def _memory(**fields) -> uuid.UUID:
    memory_id = fields.pop("memory_id", uuid.uuid4())
    memory_import(memory_id=memory_id, content=fields.pop("content", "pip fails behind a proxy"),
                  context="CI", resolution="set HTTPS_PROXY", memory_type="pattern", tier="cold",
                  status="active", hit_count=7, embedding=_vector(), created_at=CREATED, updated_at=UPDATED, **fields)
    return memory_id


def test_a_memory_keeps_its_id_times_and_counts_and_a_second_import_changes_nothing():
    memory_id = _memory(tags=["pip"], provenance={"from": "elsewhere"}, redaction_counts={"EMAIL": 1})
    stored = Memory.objects.get(pk=memory_id)
    assert (stored.created_at, stored.updated_at, stored.hit_count, stored.tier) == (CREATED, UPDATED, 7, "cold")
    assert stored.content_hash == content_hash(stored.content, stored.context, stored.resolution)
    assert stored.redaction_counts == {"EMAIL": 1} and stored.tags == ["pip"]

    assert memory_import(memory_id=memory_id, content="something else", memory_type="pattern", tier="hot",
                         status="active", hit_count=1, embedding=_vector(1), created_at=UPDATED,
                         updated_at=UPDATED) is False
    assert Memory.objects.get(pk=memory_id).content == "pip fails behind a proxy"
    assert Memory.objects.count() == 1


def test_a_contribution_is_keyed_by_its_memory_and_time_and_needs_its_memory():
    memory_id = _memory()
    fields = {"content": "pip fails behind the proxy", "similarity": 0.93, "match_reason": "similar-and-longer-than-16",
              "created_at": CREATED}
    assert memory_contribution_import(memory_id=memory_id, **fields) is True
    assert memory_contribution_import(memory_id=memory_id, **fields) is False
    row = MemoryContribution.objects.get()
    assert row.created_at == CREATED and row.match_reason == "similar-and-long"  # the column's width

    with pytest.raises(MemoryInputError) as refused:
        memory_contribution_import(memory_id=uuid.uuid4(), **fields)
    assert refused.value.field == "memory"


def test_a_merge_candidate_keeps_its_decision_and_names_the_memory_the_hub_lacks():
    first, second = _memory(), _memory(content="pip times out behind a proxy")
    fields = {"similarity": 0.9, "status": "dismissed", "decided_by": "curator", "decided_at": UPDATED,
              "created_at": CREATED}
    assert merge_candidate_import(memory_id=second, duplicate_of_id=first, **fields) is True
    assert merge_candidate_import(memory_id=second, duplicate_of_id=first, **fields) is False
    row = MergeCandidate.objects.get()
    assert (row.status, row.decided_by, row.decided_at, row.created_at) == ("dismissed", "curator", UPDATED, CREATED)

    for memory_id, duplicate_of_id, field in ((uuid.uuid4(), first, "memory"), (second, uuid.uuid4(), "duplicate_of"),
                                              (uuid.uuid4(), uuid.uuid4(), "memory")):
        with pytest.raises(MemoryInputError) as refused:
            merge_candidate_import(memory_id=memory_id, duplicate_of_id=duplicate_of_id, **fields)
        assert refused.value.field == field
