"""The isolation suite, the API (issue 34): every operation of the OpenAPI schema, called by team
B's callers with team A's ids, slugs and words, shows nothing of team A.

Team A's space holds a row of every kind (memories with a contribution and merge candidates, a
cluster with a crystallized and published skill, an ingest job with its session, segments and
raw archives), each carrying the canary word (``tests/isolation.py``); team B holds the same
kinds of rows of its own. The operations are read from the schema the hub publishes, not listed
here: a new endpoint is called the moment it exists (and ``EXPECTED_OPERATIONS`` makes its
arrival a visible change of this file). Each is called as team B's agent (a writer) and as team
B's curator on the API (a staff agent writing to team B only: agents hold the API's tokens, and
staff is what the API's curator operations ask for), with

- path parameters of team A's rows, and request bodies and queries that would find the canary
  (its word as the search, team A's memory ids to read, its exact text to upload);

and every answer must hold no canary, no slug of team A (its space's or its skill's), no id of
its rows. An operation on one of team A's rows must answer what it answers for a row that never
existed (same status, same body but for the id), naming ``team-a`` where a request may name its
spaces must be refused like a space that does not exist, and no write may change a row of team
A (every table of its space is compared before and after). Team A's own callers send the same
requests first and find the canary: the requests reach the data they are meant to.
"""

from __future__ import annotations

import io
import uuid
import zipfile
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from tests.isolation import (
    CANARY,
    TeamRows,
    Teams,
    a_rows_snapshot,
    leaks,
    session_file,
    text_lesson,
    two_teams,
)

pytestmark = pytest.mark.django_db

# Every operation of the published schema; a new endpoint changes this number and is called below.
EXPECTED_OPERATIONS = 24
# POSTs that only read (their body is a query): the other POSTs are writes, checked as such.
READ_POSTS = {"context_create", "memories_details_create", "memories_search_create", "skills_search_create"}
# Read operations whose answer carries no text of the rows it counts (the control of team A's own
# callers finding the canary does not apply): health and the counts.
NO_ROW_TEXT = {"health_retrieve", "memories_stats_retrieve"}
# Body fields whose every value is sent, one request each (the search's modes reach different code).
VARIANT_FIELDS = {"mode", "detail_level"}
NEVER = {"cluster_id": 123_456_789, "slug": "no-such-skill-anywhere", "job_id": "0b8f1c1e-0000-4000-8000-00000000beef",
         "memory_id": "0b8f1c1e-0000-4000-8000-00000000f00d"}


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    path_params: tuple[str, ...]
    query: tuple[dict, ...]
    bodies: tuple[tuple[str, dict], ...]  # (media type, schema) for each body the operation takes

    @property
    def reads(self) -> bool:
        return self.method == "get" or self.id in READ_POSTS

    @property
    def takes_spaces(self) -> bool:
        return any(p["name"] == "spaces" for p in self.query) or any(
            "spaces" in option.get("properties", {}) for _, schema in self.bodies for option in _options(schema))

    @property
    def takes_space(self) -> bool:
        return any("space" in option.get("properties", {}) for _, schema in self.bodies for option in _options(schema))


_SCHEMA: dict[str, Any] = {}


def _schema() -> dict[str, Any]:
    if not _SCHEMA:
        _SCHEMA.update(SchemaGenerator().get_schema(request=None, public=True))
    return _SCHEMA


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = _schema()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _options(schema: dict) -> list[dict]:
    schema = _resolve(schema)
    return [_resolve(s) for s in schema.get("oneOf", [])] or [schema]


def operations() -> list[Operation]:
    """Every operation of the hub's OpenAPI schema (drf-spectacular's generator: what /api/schema/ serves)."""
    found = []
    for path, methods in _schema()["paths"].items():
        for method, op in methods.items():
            params = op.get("parameters", [])
            found.append(Operation(
                id=op["operationId"], method=method, path=path,
                path_params=tuple(p["name"] for p in params if p["in"] == "path"),
                query=tuple(p for p in params if p["in"] == "query"),
                bodies=tuple((media, body["schema"]) for media, body in
                             (op.get("requestBody") or {}).get("content", {}).items())))
    return found


# --- requests --------------------------------------------------------------------------------


def _path_values(team: TeamRows) -> dict[str, Any]:
    return {"cluster_id": team.cluster_id, "slug": team.skill_slug, "version": team.version, "job_id": team.job_id,
            "memory_id": team.memory_id}


def _url(op: Operation, values: dict[str, Any]) -> str:
    missing = [name for name in op.path_params if name not in values]
    assert not missing, f"{op.id}: no value of a team's rows for the path parameters {missing} (add it to _path_values)"
    return op.path.format(**{name: values[name] for name in op.path_params})


def _query(op: Operation, word: str) -> dict[str, Any]:
    """The query that reads the most: the team's word as the tag, every size and score allowed."""
    query: dict[str, Any] = {}
    for param in op.query:
        schema, name = param.get("schema", {}), param["name"]
        if name == "tag":
            query[name] = word
        elif name == "limit":
            query[name] = schema.get("maximum", 50)
        elif name in ("min_score", "min_size"):
            query[name] = schema.get("minimum", 0)
        else:
            assert not param.get("required"), f"{op.id}: no value for the required query parameter {name}"
    return query


def _field_value(name: str, prop: dict, word: str, team: TeamRows, teams: Teams) -> Any:
    """A body field's value that would reach the team's rows; None: leave the field out."""
    prop = _resolve(prop)
    ids = list(dict.fromkeys([*team.memory_ids, *(teams.a_uuids if team is teams.a else [])]))[:100]
    fields = team.memory_fields
    return {
        "query": f"{word} Django PostgreSQL docker compose web container",
        "ids": ids,
        "content": fields["content"], "context": fields["context"], "resolution": fields["resolution"],
        "tags": [word],
        "text": text_lesson(word),
        "memories": [fields, {**fields, "content": f"{word}: the nightly build pins pip to 24.0"}],
        "paths": [f"/nowhere/{word}.jsonl"],
        "files": [SimpleUploadedFile(f"{word}-session.jsonl", session_file(word))],
        "limit": prop.get("maximum", 10),
        "token_budget": prop.get("maximum", 2000),
        "min_score": prop.get("minimum", 0),
        # A vote names a call that served the memory: team B's callers hold none for team A's (a
        # forged one is tried in test_a_vote_on_team_as_memory_answers_as_one_on_a_memory_that_never_existed).
        "rating": "wrong", "reason": f"{word}: outdated", "serve_id": "not-a-serve-id",
    }.get(name)


def _bodies(op: Operation, word: str, team: TeamRows, teams: Teams) -> list[tuple[str, dict]]:
    """One body per schema of the operation (a single upload and a batch are two), one per value
    of a ``VARIANT_FIELDS`` field."""
    if not op.bodies:
        return [("", {})]
    bodies = []
    for media, schema in op.bodies:
        for option in _options(schema):
            body: dict[str, Any] = {}
            for name, prop in option.get("properties", {}).items():
                value = _field_value(name, prop, word, team, teams)
                if value is not None:
                    body[name] = value
                else:
                    assert name not in option.get("required", []), f"{op.id}: no value for the required field {name}"
            variants = [(name, _resolve(prop).get("enum", [])) for name, prop in option.get("properties", {}).items()
                        if name in VARIANT_FIELDS]
            bodies.append((media, body))
            bodies += [(media, {**body, name: value}) for name, values in variants for value in values]
    return bodies


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def _send(client: APIClient, op: Operation, url: str, query: dict, media: str, body: dict):
    if op.method == "get":
        return client.get(url, query)
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    if media.startswith("multipart/"):
        for upload in body.get("files", []):
            upload.seek(0)
        return client.post(url, body, format="multipart")
    return client.post(url, body, format="json")


def body_text(response) -> str:
    """What a response shows, as text: a streamed body read to its end, a zip's file names and files."""
    content = b"".join(response.streaming_content) if response.streaming else response.content
    if response.get("Content-Type", "").startswith("application/zip") and response.status_code == 200:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            content = b"\n".join(name.encode() + b"\n" + archive.read(name) for name in archive.namelist())
    return content.decode("utf-8", "replace")


def _calls(op: Operation, team: TeamRows, teams: Teams):
    """The requests of ``op`` aimed at ``team``'s rows: (url, query, media, body)."""
    url = _url(op, _path_values(team))
    query = _query(op, team.word)
    for media, body in _bodies(op, team.word, team, teams):
        yield url, query, media, body


@pytest.fixture
def teams(settings) -> Teams:
    from ultron_site.warmup import warm_up

    warm_up()  # a served hub answers once warm (/api/health says 503 until then)
    return two_teams(settings)


# --- the tests -----------------------------------------------------------------------------


def test_the_suite_calls_every_operation_of_the_schema():
    ops = operations()
    assert len(ops) == EXPECTED_OPERATIONS, sorted(op.id for op in ops)
    ids = {op.id for op in ops}
    assert READ_POSTS <= ids and NO_ROW_TEXT <= ids
    # Every read that can be narrowed to spaces says so in the schema (the 403 test below relies on it).
    assert {op.id for op in ops if op.reads and not op.takes_spaces} == {
        "health_retrieve", "spaces_list", "memories_details_create", "ingest_retrieve"}


def test_team_bs_callers_read_nothing_of_team_a(teams):
    check_reads_show_nothing_of_team_a(teams)


def check_reads_show_nothing_of_team_a(teams: Teams) -> None:
    """Every read, as team A's callers first (they find the canary: the requests reach the rows),
    then as team B's agent and curator: no canary, slug or id of team A, and no hit counted on
    its memories (its rows are the same afterwards). Also run with reads on a replica
    (tests/core/test_replicas.py)."""
    reads = [op for op in operations() if op.reads]
    for op in reads:
        if op.id in NO_ROW_TEXT:
            continue
        found = [leaks(teams, body_text(_send(_client(token), op, *call)))
                 for token in (teams.a_token, teams.a_staff_token) for call in _calls(op, teams.a, teams)]
        assert any(found), f"{op.id}: team A's own callers do not find team A's rows with these requests"
    before = a_rows_snapshot(teams)
    problems = []
    for op in reads:
        for role, token in (("agent", teams.b_token), ("curator", teams.b_staff_token)):
            client = _client(token)
            for url, query, media, body in _calls(op, teams.a, teams):
                response = _send(client, op, url, query, media, body)
                assert response.status_code < 500, (op.id, role, response.status_code)
                # The ids asked for may come back as missing (as ids nothing has: the test below).
                if found := leaks(teams, body_text(response), allowed=tuple(body.get("ids", ()))):
                    problems.append(f"{op.id} as team B's {role} ({url} {body or query}): {found}")
    assert not problems, "\n".join(problems)
    assert a_rows_snapshot(teams) == before


def test_team_as_rows_answer_as_rows_that_never_existed(teams):
    """An operation on team A's rows (its cluster, skill, skill version, ingest job in the path; its
    memories' ids in the body) answers team B's callers exactly what it answers for ids or a slug
    nothing has: same status, same body once the ids are swapped."""
    compared = set()
    for op in operations():
        if not op.path_params and "ids" not in _field_names(op):
            continue
        a_values, never = _path_values(teams.a), {**_path_values(teams.a), **NEVER}
        swaps = [(str(a_values[name]), str(never[name])) for name in op.path_params]
        for token in (teams.b_token, teams.b_staff_token):
            client = _client(token)
            query = _query(op, teams.a.word)
            for media, body in _bodies(op, teams.a.word, teams.a, teams):
                fresh = [str(uuid.uuid4()) for _ in body.get("ids", ())]
                seen = _send(client, op, _url(op, a_values), query, media, body)
                missing = _send(client, op, _url(op, never), query, media,
                                {**body, "ids": fresh} if "ids" in body else body)
                shown = body_text(seen)
                for old, new in [*swaps, *zip(body.get("ids", ()), fresh, strict=True)]:
                    shown = shown.replace(old, new)
                assert (seen.status_code, shown) == (missing.status_code, body_text(missing)), op.id
                allowed = (teams.a.skill_slug, teams.a.job_id, *body.get("ids", ()))
                assert not leaks(teams, body_text(seen), allowed=allowed), op.id
        compared.add(op.id)
    assert len(compared) >= 9, compared


def _naming(op: Operation, query: dict, body: dict, slug: str) -> tuple[dict, dict] | None:
    """The request naming space ``slug``: in ``?spaces=``, a body's ``spaces`` list or a write's
    ``space``; None when this body has no such field (a multipart form names its space too)."""
    if any(p["name"] == "spaces" for p in op.query):
        return {**query, "spaces": slug}, body
    fields = _field_names(op)
    if "spaces" in fields:
        return query, {**body, "spaces": [slug]}
    if "space" in fields:
        return query, {**body, "space": slug}
    return None


def test_naming_team_a_is_refused_like_a_space_that_does_not_exist(teams):
    """``spaces=team-a`` on a read (query or body) and ``space: team-a`` on a write are refused
    (403) with the answer a made-up slug gets, and write nothing; naming team B's own space is
    answered (the same requests are not refused for naming a space at all)."""
    before = a_rows_snapshot(teams)
    checked = set()
    for op in operations():
        if not (op.takes_spaces or op.takes_space):
            continue
        for token in (teams.b_token, teams.b_staff_token):
            client = _client(token)
            for url, query, media, body in _calls(op, teams.b, teams):
                answers = []
                for slug in ("team-a", "team-zz"):
                    named = _naming(op, query, body, slug)
                    assert named is not None, op.id
                    answer = _send(client, op, url, named[0], media, named[1])
                    answers.append((answer.status_code, body_text(answer).replace(slug, "SLUG")))
                assert answers[0] == answers[1] and answers[0][0] == 403, (op.id, answers)
                named = _naming(op, query, body, "team-b")
                assert named is not None
                own = _send(client, op, url, named[0], media, named[1])
                # Answered, or refused for something else (reading server paths is off here).
                assert own.status_code < 400 or (own.status_code < 500 and "team-b" not in body_text(own)), (
                    op.id, own.status_code, body_text(own)[:300])
                checked.add(op.id)
    assert {"memories_search_create", "skills_list", "trajectories_export_retrieve", "memories_upload_create",
            "ingest_create", "ingest_text_create", "skills_SKILL.md_retrieve", "context_create"} <= checked, checked
    assert a_rows_snapshot(teams) == before


def _field_names(op: Operation) -> set[str]:
    return {name for _, schema in op.bodies for option in _options(schema) for name in option.get("properties", {})}


def test_team_bs_writes_change_nothing_of_team_a(teams, django_capture_on_commit_callbacks):
    """Every write, as team B's agent and curator, aimed at team A's rows (crystallize its cluster,
    publish its skill's version) or carrying its exact text (an upload, a batch, a text ingest, its
    session file): not one row of team A's space changes (no merge into its memories, no member
    joins its cluster, no hit counted), and no answer shows team A's ids or slugs."""
    writes = [op for op in operations() if not op.reads]
    assert {op.id for op in writes} >= {"memories_upload_create", "ingest_create", "ingest_text_create",
                                        "clusters_crystallize_create", "skills_versions_publish_create"}
    before = a_rows_snapshot(teams)
    problems = []
    with django_capture_on_commit_callbacks(execute=True):  # the queued segmentation runs too
        for op in writes:
            for role, token in (("agent", teams.b_token), ("curator", teams.b_staff_token)):
                client = _client(token)
                for url, query, media, body in _calls(op, teams.a, teams):
                    response = _send(client, op, url, query, media, body)
                    assert response.status_code < 500, (op.id, role, response.status_code)
                    # Team B sent the canary itself: its own new rows may repeat it, never team A's ids.
                    if found := leaks(teams, body_text(response), allowed=(CANARY,)):
                        problems.append(f"{op.id} as team B's {role}: {found}")
    assert not problems, "\n".join(problems)
    assert a_rows_snapshot(teams) == before
    # The uploads went to team B as new memories (same text, another space: another memory).
    from memories.models import Memory

    copies = Memory.objects.filter(space=teams.b.space, content=teams.a.memory_fields["content"])
    assert copies.count() == 1 and str(copies.get().pk) not in teams.a_uuids


def test_team_bs_counts_are_its_own(teams):
    check_counts_are_team_bs(teams)


def check_counts_are_team_bs(teams: Teams) -> None:
    """Counts show team B's rows only: the stats, the memory list's count, cluster sizes."""
    from clusters.models import KnowledgeCluster
    from memories.models import Memory

    client = _client(teams.b_token)
    mine = Memory.objects.filter(space=teams.b.space, status="active").count()
    assert client.get("/api/memories/stats").json()["total"] == Memory.objects.filter(space=teams.b.space).count()
    assert client.get("/api/memories/", {"limit": 200}).json()["count"] == mine
    assert client.get("/api/memories/", {"tag": CANARY}).json()["count"] == 0
    sizes = {c["id"]: c["size"] for c in client.get("/api/clusters").json()["results"]}
    assert sizes == dict(KnowledgeCluster.objects.filter(space=teams.b.space, member_count__gt=0)
                         .values_list("pk", "member_count"))


def test_a_vote_on_team_as_memory_answers_as_one_on_a_memory_that_never_existed(teams):
    """Even with a serve_id naming team A's memory (signed by the hub: as if one leaked or the key
    were known), team B's vote is refused exactly as one on a memory that never was."""
    from memories.models import MemoryFeedback, MemoryReport
    from memories.services.feedback import serve_id_issue

    never = NEVER["memory_id"]
    for agent, token in ((teams.b_reader, teams.b_token), (teams.b_staff, teams.b_staff_token)):
        serve_id = serve_id_issue(reader_id=agent.pk, memory_ids=[teams.a.memory_id, never])
        client = _client(token)
        answers = [client.post(f"/api/memories/{memory_id}/feedback", {"rating": "wrong", "serve_id": serve_id},
                               format="json") for memory_id in (teams.a.memory_id, never)]
        assert answers[0].status_code == answers[1].status_code == 404
        assert body_text(answers[0]) == body_text(answers[1])
    assert not MemoryFeedback.objects.filter(memory_id=teams.a.memory_id).exists()
    assert not MemoryReport.objects.filter(memory_id=teams.a.memory_id).exists()
