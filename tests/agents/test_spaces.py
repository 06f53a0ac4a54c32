"""Spaces keep teams apart: two walls, the code's scoped reads and the database's row-level
security, each tested on its own.

Team A's agent stores memories and sessions in space ``team-a``; team B's agent, in ``team-b``,
must not find, count, read, merge into or learn of any of them through the API, and the database
alone (every code-level filter bypassed, queried as the hub's role) must hold the same line.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.urls import reverse
from rest_framework.test import APIClient

from agents.models import Role
from agents.services import agent_create, space_create, token_issue
from core.spaces import maintenance, scope_current, space_scope
from memories.models import Memory, MemoryContribution
from memories.services import memory_upload

pytestmark = pytest.mark.django_db

SECRET_TOPIC = {
    "content": "Deploys of the billing service fail with OOMKilled when the JVM heap is left at its default",
    "context": "Kubernetes pods with a 512Mi memory limit",
    "resolution": "Set -Xmx to 75% of the container limit with -XX:MaxRAMPercentage=75",
    "tags": ["billing", "jvm"],
}


def _client(agent) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(agent=agent).token}")
    return client


@pytest.fixture
def teams():
    a, b = space_create(slug="team-a", name="Team A"), space_create(slug="team-b", name="Team B")
    agent_a = agent_create(name="agent-a", spaces=[(a, Role.WRITER)])
    agent_b = agent_create(name="agent-b", spaces=[(b, Role.WRITER)])
    return {"a": a, "b": b, "api_a": _client(agent_a), "api_b": _client(agent_b), "agent_a": agent_a}


def _space_tables():
    """Every table with a ``space`` column: each must be behind row-level security."""
    return sorted({m._meta.db_table for m in apps.get_models() if m._meta.app_label != "agents"
                   and any(f.name == "space" and f.is_relation for f in m._meta.get_fields())})


def test_every_table_that_holds_a_space_has_row_level_security():
    tables = _space_tables()
    assert len(tables) >= 16
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, relrowsecurity FROM pg_class WHERE relname = ANY(%s)", [tables])
        flags = dict(cursor.fetchall())
    assert {t: flags.get(t) for t in tables} == {t: True for t in tables}


def test_uploads_land_in_the_agents_default_space_and_say_so(teams):
    response = teams["api_a"].post(reverse("memory-upload"), SECRET_TOPIC, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["space"] == "team-a"
    assert Memory.objects.get(pk=response.json()["id"]).space_id == teams["a"].pk


def test_a_space_the_caller_may_not_write_is_refused_with_its_name(teams):
    response = teams["api_b"].post(reverse("memory-upload"), {**SECRET_TOPIC, "space": "team-a"}, format="json")
    assert response.status_code == 403
    assert "team-a" in response.json()["message"]
    # A space that does not exist answers the same: nobody learns which slugs are taken.
    other = teams["api_b"].post(reverse("memory-upload"), {**SECRET_TOPIC, "space": "team-zz"}, format="json")
    assert other.status_code == 403 and other.json()["message"].replace("team-zz", "team-a") == response.json()["message"]
    assert not Memory.objects.exists()


def test_nothing_of_another_space_is_found_counted_read_or_listed(teams):
    stored = teams["api_a"].post(reverse("memory-upload"), SECRET_TOPIC, format="json").json()
    api_b = teams["api_b"]
    found = api_b.post(reverse("memory-search"), {"query": "billing OOMKilled JVM heap"}, format="json").json()
    assert found["results"] == []
    details = api_b.post(reverse("memory-details"), {"ids": [stored["id"]]}, format="json").json()
    assert details == {"memories": [], "missing": [stored["id"]]}
    assert api_b.get(reverse("memory-stats")).json()["total"] == 0
    assert api_b.get(reverse("memory-list")).json()["count"] == 0
    context = api_b.post(reverse("context"), {"query": "billing JVM heap"}, format="json").json()
    assert context["memories"] == [] and "billing" not in context["context"]
    # Naming the other space is refused, not answered empty.
    assert api_b.post(reverse("memory-search"), {"query": "billing", "spaces": ["team-a"]},
                      format="json").status_code == 403
    # Team A sees its own.
    mine = teams["api_a"].post(reverse("memory-search"), {"query": "billing OOMKilled JVM heap"}, format="json").json()
    assert [hit["id"] for hit in mine["results"]] == [stored["id"]] and mine["results"][0]["space"] == "team-a"


def test_the_same_memory_in_two_spaces_is_two_memories(teams):
    first = teams["api_a"].post(reverse("memory-upload"), SECRET_TOPIC, format="json").json()
    second = teams["api_b"].post(reverse("memory-upload"), SECRET_TOPIC, format="json")
    # Not merged into team A's memory (which would tell B it exists, and count B's hit there).
    assert second.status_code == 201 and second.json()["merged"] is False
    assert second.json()["id"] != first["id"]
    assert Memory.objects.get(pk=first["id"]).hit_count == 1
    assert not MemoryContribution.objects.exists()


def test_a_reader_can_search_but_not_write(teams):
    reader = agent_create(name="reader-r", spaces=[(teams["a"], Role.READER)])
    teams["api_a"].post(reverse("memory-upload"), SECRET_TOPIC, format="json")
    client = _client(reader)
    assert client.post(reverse("memory-search"), {"query": "billing JVM heap"}, format="json").json()["results"]
    assert client.post(reverse("memory-upload"), SECRET_TOPIC, format="json").status_code == 403


def test_spaces_endpoint_lists_the_callers_spaces_only(teams):
    listed = teams["api_b"].get(reverse("spaces")).json()["results"]
    assert [(s["slug"], s["role"], s["default"]) for s in listed] == [("team-b", "writer", True)]


def test_agents_cannot_be_curators(teams):
    from agents.services import SpaceError, membership_set

    with pytest.raises(SpaceError):
        membership_set(space=teams["a"], user=teams["agent_a"].user, role=Role.CURATOR)


# --- the database's wall, alone ------------------------------------------------------------------


def _memory_in(space, text: str) -> Memory:
    return memory_upload(content=text, space=space).memory


@pytest.mark.spaces_enforced
def test_a_connection_with_no_scope_sees_nothing(teams):
    with maintenance():
        _memory_in(teams["a"], "a memory of team A about flaky integration tests")
        assert Memory.objects.count() == 1
    assert not scope_current().maintenance
    # No filter in the code at all: the table as the hub's role reads it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        assert cursor.fetchone()[0] == 0
    assert Memory.objects.count() == 0


def test_the_database_alone_keeps_every_table_apart(teams):
    """Data in both spaces across every table, then every table read without any filter as the
    hub's role scoped to team B: not one row of team A."""
    a_memory = _memory_in(teams["a"], "team A: the staging database password rotates every Monday")
    _memory_in(teams["b"], "team B: run the linters before pushing to main")
    tables = _space_tables()
    with space_scope(read=[teams["b"].pk]):
        with connection.cursor() as cursor:
            for table in tables:
                cursor.execute(f"SELECT count(*) FROM {table} WHERE space_id <> %s", [teams["b"].pk])
                assert cursor.fetchone()[0] == 0, table
            cursor.execute("SELECT count(*) FROM memories_memory WHERE id = %s", [a_memory.pk])
            assert cursor.fetchone()[0] == 0
            # The keyword counts (a side channel: which words another team's memories hold) too.
            cursor.execute("SELECT coalesce(sum(memories), 0) FROM memories_lexemecount WHERE lexeme = 'staging'")
            assert cursor.fetchone()[0] == 0
        assert Memory.objects.filter(pk=a_memory.pk).count() == 0


def test_keyword_search_reads_only_the_sessions_spaces_even_as_the_owner(teams):
    """The keyword side reads the GIN index through a function that runs as the tables' owner
    (migration memories.0014): it must apply the read policy itself, from the session's scope,
    whatever spaces its arguments name."""
    from memories.selectors.search import memory_search
    from memories.services.embedding_space import embed_texts

    words = "the nightly flamegraph export times out on the profiler host"
    in_a = _memory_in(teams["a"], f"team A: {words}")
    in_b = _memory_in(teams["b"], f"team B: {words}")
    vector = embed_texts(["flamegraph profiler"])[0]
    with space_scope(read=[teams["b"].pk]):
        for mode in ("keyword", "hybrid"):
            hits = memory_search(vector=vector, text="flamegraph profiler", mode=mode, limit=10)
            assert [h.id for h in hits] == [in_b.pk], mode
        assert memory_search(vector=vector, text="flamegraph", mode="keyword", space_ids=[teams["a"].pk]) == []
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM memories_keyword_matches('flamegraph'::tsquery, NULL, 10, %s, NULL, NULL, NULL, true)",
                           [[teams["a"].pk, teams["b"].pk]])
            assert [row[0] for row in cursor.fetchall()] == [in_b.pk]
            # Words alone, the spaces checked on each match: the same answer.
            cursor.execute("SELECT id FROM memories_keyword_matches('flamegraph'::tsquery, NULL, 10, %s, NULL, NULL, "
                           "NULL, false)", [[teams["a"].pk, teams["b"].pk]])
            assert [row[0] for row in cursor.fetchall()] == [in_b.pk]
    with space_scope(read=[teams["a"].pk, teams["b"].pk]):
        hits = memory_search(vector=vector, text="flamegraph profiler", mode="keyword", limit=10)
        assert {h.id for h in hits} == {in_a.pk, in_b.pk}


def test_the_database_refuses_writes_outside_the_write_spaces(teams):
    a_memory = _memory_in(teams["a"], "team A: the release branch is cut on Thursdays")
    with space_scope(read=[teams["a"].pk, teams["b"].pk], write=[teams["b"].pk]):
        # Reading A is allowed; inserting into A is not, whatever the code asked for.
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            Memory.objects.create(space_id=teams["a"].pk, content="smuggled", memory_type="pattern",
                                  embedding=[0.0] * 384, content_hash="x")
        # Deleting A's rows deletes nothing.
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM memories_memory WHERE id = %s", [a_memory.pk])
            assert cursor.rowcount == 0
        # Moving a readable row into a space not read is refused.
    with space_scope(read=[teams["a"].pk], write=[teams["a"].pk]):
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            Memory.objects.filter(pk=a_memory.pk).update(space_id=teams["b"].pk)
    assert Memory.objects.get(pk=a_memory.pk).space_id == teams["a"].pk


def test_the_hubs_role_may_not_truncate(teams):
    _memory_in(teams["a"], "team A: cache keys include the tenant id")
    with space_scope(read=[teams["b"].pk], write=[teams["b"].pk]):
        with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE memories_memory CASCADE")
    assert Memory.objects.count() == 1


def test_the_pipeline_runs_each_space_on_its_own(teams):
    """A step runs once per space, in that space's scope: what one run sees is its space alone,
    and a space whose run fails is named while the others finish."""
    from agents.scoping import each_space

    _memory_in(teams["a"], "team A: restart the worker after changing the queue name")
    _memory_in(teams["b"], "team B: pin the base image by digest")
    seen = []

    def step():
        spaces = set(Memory.objects.values_list("space_id", flat=True))
        seen.append(spaces)
        if spaces == {teams["b"].pk}:
            raise RuntimeError("team B's run breaks")
        return {"memories": len(spaces)}

    result = each_space(step)
    assert {frozenset(s) for s in seen if s} == {frozenset({teams["a"].pk}), frozenset({teams["b"].pk})}
    assert result["memories"] == 1 and list(result["failed_spaces"]) == ["team-b"]


def test_clusters_skills_and_jobs_of_another_space_are_missing(teams):
    from clusters.models import KnowledgeCluster, Skill

    for i in range(3):
        teams["api_a"].post(reverse("memory-upload"), {**SECRET_TOPIC, "content": f"{SECRET_TOPIC['content']} ({i})"},
                            format="json")
    cluster = KnowledgeCluster.objects.get(space=teams["a"])
    Skill.objects.create(space=teams["a"], slug="billing-jvm", name="Billing JVM heap", status="published")
    api_b = teams["api_b"]
    assert api_b.get(reverse("cluster-list")).json()["results"] == []
    assert api_b.get(reverse("cluster-detail", args=[cluster.pk])).status_code == 404
    assert api_b.get(reverse("skill-list")).json()["results"] == []
    assert api_b.get(reverse("skill-detail", args=["billing-jvm"])).status_code == 404
    assert api_b.get(reverse("skill-detail", args=["no-such-skill"])).status_code == 404  # the same answer
    assert api_b.get(reverse("skill-list") + "?spaces=team-a").status_code == 403
    assert api_b.get(reverse("skill-list") + "?spaces=team-b,team-a").status_code == 403  # one of them is enough
    # Team A sees them, each saying its space.
    listed = teams["api_a"].get(reverse("cluster-list")).json()["results"]
    assert [(c["id"], c["space"]) for c in listed] == [(cluster.pk, "team-a")]
    assert teams["api_a"].get(reverse("skill-detail", args=["billing-jvm"])).json()["space"] == "team-a"


def test_export_of_one_space_holds_only_its_rows_and_import_goes_to_the_space_named(teams, tmp_path):
    from django.core.management import call_command

    a_memory = _memory_in(teams["a"], "team A: feature flags are cleaned up every quarter")
    _memory_in(teams["b"], "team B: secrets live in the vault, never in the repository")
    path = tmp_path / "team-a.jsonl"
    call_command("export_memories", str(path), "--space", "team-a")
    text = path.read_text()
    assert "feature flags" in text and "vault" not in text
    Memory.objects.filter(pk=a_memory.pk).delete()
    call_command("import_memories", str(path), "--space", "team-c")
    moved = Memory.objects.get(pk=a_memory.pk)
    assert moved.space.slug == "team-c"
    # Ids are kept: the same file cannot go to a third space while team-c holds its memory.
    from agents.services import space_create as create
    from ultron_site.portable.load import import_lines

    with path.open() as stream:
        report = import_lines(stream, space_id=create(slug="team-d").pk)
    assert any("is in space 'team-c'" in reason for _, reason in report.bad), report.bad
    assert not Memory.objects.filter(space__slug="team-d").exists()


def test_every_read_names_its_spaces_the_same_way(teams):
    """``spaces`` everywhere: repeated or comma-separated on a GET, a list in a JSON body."""
    _memory_in(teams["a"], "team A: the canary deploy runs at noon")
    shared_reader = agent_create(name="reads-both", spaces=[(teams["a"], Role.READER), (teams["b"], Role.READER)])
    api = _client(shared_reader)
    for query in ("?spaces=team-a&spaces=team-b", "?spaces=team-a,team-b", ""):
        assert api.get(reverse("memory-list") + query).json()["count"] == 1, query
    assert api.get(reverse("memory-list") + "?spaces=team-b").json()["count"] == 0
    assert api.get(reverse("memory-stats") + "?spaces=team-b").json()["total"] == 0
    for name in ("memory-list", "memory-stats", "cluster-list", "skill-list"):
        response = api.get(reverse(name) + "?spaces=team-c")
        assert response.status_code == 403 and "team-c" in response.json()["message"], name
    assert api.post(reverse("skill-search"), {"query": "deploy", "spaces": ["team-c"]}, format="json").status_code == 403
    assert api.get(reverse("memory-list") + "?spaces=" + ",".join(["x"] * 51)).status_code == 400
