"""The admin site's lists and pages make a bounded number of queries at 10 and at 1,000 rows
(an N+1 would add hundreds). The bound is measured at 10 rows; the page at 1,000 must not need
more. Rows come from the API tests' bulk builders."""

from __future__ import annotations

import pytest
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from ingestion.models import IngestJob, SessionRecord, TaskSegment
from memories.models import MemoryContribution
from tests.site.test_query_counts import _clusters, _memories, _query_vector, _skills
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db
SIZES = (10, 1000)


@pytest.fixture
def admin_client_role() -> Client:
    person = person_create(username="qc-admin", role="admin", password_once=False)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client


def _flat(client: Client, django_assert_max_num_queries, grow, url: str, params: dict | None = None) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    done, first = 0, None
    for size in SIZES:
        grow(done, size)
        done = size
        if first is None:
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url, params or {}).status_code == 200
            first = len(captured)
            continue
        with django_assert_max_num_queries(first):
            response = client.get(url, params or {})
            assert response.status_code == 200


def test_memory_list_and_search(admin_client_role, agent, django_assert_max_num_queries):
    _query_vector()
    grow = lambda a, b: _memories(a, b, agent=agent)  # noqa: E731
    _flat(admin_client_role, django_assert_max_num_queries, grow, reverse("admin:memories_memory_changelist"))
    _flat(admin_client_role, django_assert_max_num_queries, lambda a, b: None,
          reverse("admin:memories_memory_changelist"), {"q": "pip ssl certificate"})


def test_memory_page_with_many_contributions(admin_client_role, agent, django_assert_max_num_queries):
    _query_vector()
    memory = _memories(0, 1, agent=agent)[0]

    def grow(a, b):
        MemoryContribution.objects.bulk_create([
            MemoryContribution(memory=memory, agent=agent, content=f"upload {i}", similarity=0.95, match_reason="similar")
            for i in range(a, b)])

    _flat(admin_client_role, django_assert_max_num_queries, grow,
          reverse("admin:memories_memory_change", args=[memory.pk]))


def test_dashboard(admin_client_role, agent, django_assert_max_num_queries):
    _query_vector()
    skill = _skills(0, 1)[0]

    def grow(a, b):
        _memories(a, b, agent=agent)
        _clusters(a, b, skill=skill)
        sessions = SessionRecord.objects.bulk_create([
            SessionRecord(agent=agent, identity=f"s{i}.jsonl", sha256="x" * 64) for i in range(a, b)])
        TaskSegment.objects.bulk_create([
            TaskSegment(session=s, index=0, start_message=0, end_message=2, fingerprint=f"f{s.pk}") for s in sessions])
        # The dashboard shows the five newest jobs; from the start there are at least five, then
        # they grow in files.
        for job_number in range(5 if a == 0 else 1):
            job = IngestJob.objects.create(agent=agent)
            job.files = [{"name": s.identity, "status": "new", "session_id": s.pk} for s in sessions[job_number::5]]
            job.save(update_fields=["files"])

    _flat(admin_client_role, django_assert_max_num_queries, grow, reverse("admin:index"))


@pytest.mark.parametrize("name", ["clusters_knowledgecluster", "clusters_skill", "ingestion_sessionrecord",
                                  "ingestion_tasksegment"])
def test_other_lists(admin_client_role, agent, django_assert_max_num_queries, name):
    _query_vector()

    def grow(a, b):
        if name == "clusters_knowledgecluster":
            _clusters(a, b, skill=_skills(a, a + 1)[0])
        elif name == "clusters_skill":
            _skills(a + 1, b + 1)
        else:
            sessions = SessionRecord.objects.bulk_create([
                SessionRecord(agent=agent, identity=f"s{i}.jsonl", sha256="x" * 64) for i in range(a, b)])
            TaskSegment.objects.bulk_create([
                TaskSegment(session=s, index=0, start_message=0, end_message=2, fingerprint=f"f{s.pk}")
                for s in sessions])

    _flat(admin_client_role, django_assert_max_num_queries, grow, reverse(f"admin:{name}_changelist"))
