"""How many SQL statements one upload makes, counted on the path most uploads take: a new
memory with no duplicate and no merge candidate, joining an existing cluster. Counted at the
service (the API adds its token lookup and the rate limit's upsert)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clusters.models import ClusterMember
from memories import services
from memories.models import LexemeCount, MergeCandidate

pytestmark = pytest.mark.django_db

FIRST = "pytest cannot import the package under src/: ModuleNotFoundError at collection"
# Same subject (one cluster), not the same lesson (below the merge-candidate band).
SECOND = "Set pythonpath in pytest.ini so tests can import the application code"


def _statements(queries: list[dict]) -> list[str]:
    """The statements that do work: savepoints exist only because the test runs in a transaction."""
    return [q["sql"] for q in queries if not q["sql"].upper().startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]


def test_a_new_memory_joining_a_cluster_takes_four_statements():
    first = services.memory_upload(content=FIRST)
    with CaptureQueriesContext(connection) as captured:
        second = services.memory_upload(content=SECOND, space=first.memory.space_id)
    assert not second.merged and second.candidates == []
    assert not MergeCandidate.objects.exists()
    member = ClusterMember.objects.get(memory=second.memory)
    assert member.cluster_id == ClusterMember.objects.get(memory=first.memory).cluster_id
    assert member.cluster.member_count == 2
    statements = _statements(captured.captured_queries)
    # the space's allowed hosts and the writer's trust (the poisoning screen's); the locks (the
    # duplicate lock, then the cluster side's placement lock with its wider index scan); the same
    # body or the nearest five; the insert (its keyword counts are written by the
    # database's trigger, no statement of ours); the nearest centroid with its shift and the member row;
    # and when the classifier was unsure of the type, its row in the review queue
    assert len(statements) == 5 + (second.type_review is not None), "\n".join(statements)
    assert "allowed_hosts" in statements[0]
    assert "pg_advisory_xact_lock" in statements[1] and statements[1].count("pg_advisory_xact_lock") == 2
    # each lock says what it is for, in the statement itself (pg_stat_activity, the logs)
    assert "/* duplicate check" in statements[1] and "/* cluster placement (clusters)" in statements[1]
    assert [label.split(":")[0] for label, _ in services.upload_locks()][:2] == [
        "duplicate check", "cluster placement (clusters)"]
    assert LexemeCount.objects.filter(lexeme="pythonpath").exists()


def test_a_new_memory_far_from_every_cluster_founds_one_in_one_more_statement_each():
    space = services.memory_upload(content=FIRST).memory.space_id  # the space named, as the API names it
    with CaptureQueriesContext(connection) as captured:
        other = services.memory_upload(content="Rotate the TLS certificates of the ingress before they expire",
                                       space=space)
    assert not other.merged
    member = ClusterMember.objects.get(memory=other.memory)
    assert member.similarity == 1.0 and member.cluster.member_count == 1
    # as above, then the cluster row and the member row (and a type review when unsure)
    expected = 7 + (other.type_review is not None)
    assert len(_statements(captured.captured_queries)) == expected, "\n".join(_statements(captured.captured_queries))


def test_a_repeated_upload_merges_in_a_bounded_number_of_statements():
    space = services.memory_upload(content=FIRST).memory.space_id  # the space named, as the API names it
    with CaptureQueriesContext(connection) as captured:
        again = services.memory_upload(content=FIRST, space=space)
    assert again.merged and again.match_reason == "exact"
    # the space's hosts and the writer's trust; the lock; the lookup; the row locked; the contribution;
    # the counters; the row read back (no writer here, so no use to record)
    assert len(_statements(captured.captured_queries)) == 7, "\n".join(_statements(captured.captured_queries))
