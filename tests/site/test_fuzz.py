"""API fuzzing: schemathesis sends every operation of the live hub's OpenAPI schema generated
requests, valid and invalid, as a curator and as an ordinary agent, and every response must be
declared: no status >= 500, a status code, content type and body the schema lists for that
operation, and errors in the API's shape ``{error, message, field?}``.

The tokens work in the shared space; a second space (``bench.fuzz.FOREIGN_SPACE``) holds rows of
every kind with a canary word, and the operations are also called with its ids and slugs: no
response may hold its canary, slugs or ids (``no_foreign_data``).

A few examples per operation and mode, with a fixed seed, keep this to a minute or two;
``bench/fuzz.py`` runs the same checks with many more (see bench/README.md).
"""

from __future__ import annotations

import pytest

from agents.services import agent_create, token_issue
from bench.fuzz import fuzz, report

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EXAMPLES = 2
COVERAGE = 10  # coverage cases per operation (bench/fuzz.py sends them all)
SEED = 16


@pytest.fixture
def stored_rows(agent) -> dict:
    """A published skill from a cluster of six memories, and an ingest job: path parameters
    that reach the detail endpoints past their 404."""
    from clusters.services import cluster_crystallize
    from ingestion.services import files_ingest
    from memories.services import embedding_space_ensure
    from tests.clusters.test_services import _fill

    embedding_space_ensure()
    members = _fill(6)
    version = cluster_crystallize(cluster_id=members[0].cluster_member.cluster_id)
    assert version is not None
    job, _ = files_ingest(agent=agent, files=[("notes.md", b"# Notes\n\nThe build failed; pinning setuptools fixed it.\n")])
    return {"cluster_id": members[0].cluster_member.cluster_id, "slug": version.skill.slug,
            "version": version.version, "job_id": str(job.pk)}


@pytest.fixture
def foreign_rows(stored_rows):
    """A space the tokens cannot read, stored after their own rows: what none of its responses may
    show, and its rows as path parameters."""
    from bench.fuzz import seed_foreign_space

    return seed_foreign_space()


@pytest.mark.parametrize("role", ["curator", "agent"])
def test_every_operation_answers_as_its_schema_declares(live_server, agent, stored_rows, foreign_rows, role):
    from ultron_site.warmup import warm_up

    warm_up()  # a served hub answers once warm (/api/health says "warming", 503, until then)
    staff = role == "curator"
    token = token_issue(agent=agent_create(name="fuzz-curator", staff=True) if staff else agent).token
    foreign, foreign_known = foreign_rows
    results = fuzz(base_url=live_server.url, tokens={role: token}, examples=EXAMPLES, seed=SEED, coverage=COVERAGE,
                   path_parameters=stored_rows, foreign=foreign, foreign_path_parameters=foreign_known)
    assert len({r.operation for r in results}) >= 19, "the schema lost operations"
    assert sum(r.requests for r in results) > 0
    found = report(results)
    assert not found, f"fuzzing found:\n{found}"


def test_no_foreign_data_reads_every_kind_of_answer():
    """The check itself: the canary and slugs as text (a zip's files too), ids as JSON numbers or
    in links; what the request itself sent may come back (a 404 naming the slug asked for)."""
    import io
    import json
    import zipfile

    from bench.fuzz import ForeignData

    foreign = ForeignData(strings=["zebraquartz", "team-a", "fix-the-build"], ints={9100007})
    assert foreign.found(b'{"results": [{"id": 9100007}]}') == ["integer id 9100007"]
    assert foreign.found(b'{"count": 9100006}') == []
    assert foreign.found(b'<a href="/admin/clusters/knowledgecluster/9100007/change/">') == ["integer id 9100007"]
    assert foreign.found(b'{"messages": []}\n{"id": 9100007}\n') == ["integer id 9100007"]
    assert foreign.found(b"# Skill\nThe ZebraQuartz build") == ["zebraquartz"]
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("fix-the-build/SKILL.md", "zebraquartz " * 50)
    assert foreign.found(archive.getvalue(), "application/zip") == ["zebraquartz", "fix-the-build"]
    missing = json.dumps({"error": "not_found", "message": "No skill 'fix-the-build'."}).encode()
    assert foreign.found(missing, sent='{"slug": "fix-the-build"}') == []
