"""Spaces through the client, the CLI and the MCP server, against the live hub: where writes
go (the client's ``space``, a call's own, ``--space``, ``ULTRON_SPACE``, the stored login),
which spaces reads cover (``spaces``), every result naming its space, and a space the caller
may not write to refused with the hub's own message."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest
from mcp import Client
from ultron import AsyncUltron, PermissionDeniedError, Ultron, UsageError
from ultron.cli import AUTH, OK, USAGE, main
from ultron.config import config_path
from ultron.mcp_server import build_server

from tests.ingestion.test_services import DOCKER_TASK, jsonl

pytestmark = pytest.mark.django_db(transaction=True)

JVM = dict(content="Deploys of the billing service fail with OOMKilled when the JVM heap is left at its default",
           context="Kubernetes pods with a 512Mi memory limit",
           resolution="Set -XX:MaxRAMPercentage=75 so the heap follows the container limit", tags=["jvm"])
PANDAS = dict(content="ModuleNotFoundError: No module named 'pandas'",
              context="Running a data analysis script inside a Docker container",
              resolution="add pandas to requirements.txt and rebuild the image", tags=["python"])


@dataclass
class Teams:
    url: str
    smith: str  # the hub fixture's agent: a writer of shared only
    builder_a: str  # writes to team-a (its default), reads shared
    builder_b: str  # writes to team-b only


@pytest.fixture
def teams(hub) -> Teams:
    from agents.models import Role
    from agents.services import agent_create, space_create, space_get, token_issue

    a = space_create(slug="team-a", name="Team A")
    b = space_create(slug="team-b", name="Team B")
    builder_a = agent_create(name="builder-a", spaces=[(a, Role.WRITER), (space_get(slug="shared"), Role.READER)])
    builder_b = agent_create(name="builder-b", spaces=[(b, Role.WRITER)])
    return Teams(url=hub.url, smith=hub.token, builder_a=token_issue(agent=builder_a).token,
                 builder_b=token_issue(agent=builder_b).token)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_client_writes_to_its_space_and_reads_the_spaces_it_names(teams, tmp_path):
    from core.spaces import maintenance
    from ingestion.models import IngestJob

    shared = Ultron(url=teams.url, token=teams.smith).upload_memory(**PANDAS)
    assert shared.space == "shared"

    ultron = Ultron(url=teams.url, token=teams.builder_a)
    assert [(s.slug, s.role, s.default) for s in ultron.spaces()] == [("shared", "reader", False),
                                                                       ("team-a", "writer", True)]
    stored = ultron.upload_memory(**JVM)  # no space named: the agent's default
    assert stored.space == "team-a" and not stored.merged

    everywhere = ultron.search_memories("JVM heap OOMKilled pandas import", limit=10)
    assert {r.record.id: r.record.space for r in everywhere} == {stored.id: "team-a", shared.id: "shared"}
    only_shared = ultron.search_memories("JVM heap OOMKilled pandas import", limit=10, spaces=["shared"])
    assert [r.record.id for r in only_shared] == [shared.id]
    assert ultron.get_memory_details([stored.id])[0].space == "team-a"
    assert ultron.stats().total == 2 and ultron.stats(spaces="team-a").total == 1
    context = ultron.get_context("JVM heap", spaces=["team-a"])
    assert [m.id for m in context.memories] == [stored.id]

    narrowed = Ultron(url=teams.url, token=teams.builder_a, spaces=["shared"])  # the client's reads
    assert [r.record.id for r in narrowed.search_memories("JVM heap OOMKilled pandas import")] == [shared.id]
    assert narrowed.stats().total == 1 and narrowed.stats(spaces=["shared", "team-a"]).total == 2

    # A write to a space the agent only reads is refused with the hub's message, naming it.
    with pytest.raises(PermissionDeniedError) as refused:
        ultron.upload_memory(content="Set the heap to half the container", space="shared")
    assert refused.value.status == 403 and "'shared'" in refused.value.message
    with pytest.raises(PermissionDeniedError, match="team-b"):
        Ultron(url=teams.url, token=teams.builder_a, space="team-b").ingest_text("Error: X failed. Fix: Y.")
    with pytest.raises(UsageError):
        ultron.search_memories("heap", spaces=[""])

    (tmp_path / "run.jsonl").write_bytes(jsonl(DOCKER_TASK[:4]))
    ingested = Ultron(url=teams.url, token=teams.builder_b, space="team-b").ingest([str(tmp_path)])
    with maintenance():
        assert IngestJob.objects.get(pk=ingested.job_id).space.slug == "team-b"
    with pytest.raises(PermissionDeniedError, match="team-a"):
        Ultron(url=teams.url, token=teams.builder_b).ingest([str(tmp_path)], space="team-a")


def test_the_async_twin_sends_the_same_spaces(teams):
    async def scenario():
        async with AsyncUltron(url=teams.url, token=teams.builder_a, space="team-a", spaces="team-a") as ultron:
            batch = await ultron.upload_memories([JVM, PANDAS])
            text = await ultron.ingest_text("Error: ECONNREFUSED 127.0.0.1:5432 when the web container starts.\n"
                                            "Fix: add a healthcheck and a depends_on condition.\n")
            found = await ultron.search_memories("pandas module missing", limit=5)
            with pytest.raises(PermissionDeniedError) as refused:
                await ultron.upload_memories([PANDAS], space="shared")
            return batch, text, found, refused.value, await ultron.spaces()

    batch, text, found, refused, spaces = asyncio.run(scenario())
    assert [i.result.space for i in batch] == ["team-a", "team-a"]
    assert text.memories and {m.space for m in text.memories} == {"team-a"}
    assert found and {r.record.space for r in found} == {"team-a"}
    assert "'shared'" in refused.message and [s.slug for s in spaces if s.default] == ["team-a"]


def test_cli_spaces_and_space_on_upload_and_search(teams, capsys, monkeypatch):
    run(capsys, "upload", "--content", PANDAS["content"], "--context", PANDAS["context"])  # smith: shared
    monkeypatch.setenv("ULTRON_TOKEN", teams.builder_a)

    code, out, _ = run(capsys, "spaces")
    lines = [line.split() for line in out.splitlines()]
    assert code == OK and lines[0] == ["slug", "role", "default", "name"]
    assert lines[1:] == [["shared", "reader", "Shared"], ["team-a", "writer", "yes", "Team", "A"]]
    code, out, _ = run(capsys, "spaces", "--json")
    assert [(s["slug"], s["default"]) for s in json.loads(out)] == [("shared", False), ("team-a", True)]

    code, out, _ = run(capsys, "upload", "--space", "team-a", "--content", JVM["content"], "--context", JVM["context"])
    assert code == OK and out.startswith("Stored ") and out.rstrip().endswith("in space team-a.")
    code, out, err = run(capsys, "upload", "--space", "shared", "--content", "Pin the JVM heap")
    assert code == AUTH and "403" in err and "'shared'" in err and out == ""
    code, _, err = run(capsys, "upload", "--space", "team-a", "--space", "shared", "--content", "x")
    assert code == USAGE and "one space" in err

    code, out, _ = run(capsys, "search", "JVM heap pandas module", "--limit", "5")
    header, *rows = [line.split() for line in out.splitlines()]
    assert code == OK and header == ["score", "sim", "space", "type", "tier", "hits", "id", "summary"]
    assert sorted(row[2] for row in rows) == ["shared", "team-a"]
    code, out, _ = run(capsys, "search", "JVM heap pandas module", "--space", "team-a", "--json")
    assert code == OK and [hit["space"] for hit in json.loads(out)] == ["team-a"]
    code, _, err = run(capsys, "search", "JVM heap", "--space", "team-b")
    assert code == AUTH and "'team-b'" in err  # a space it may not read: the hub's 403

    # ULTRON_SPACE is where writes go when --space names none; a login may store it too.
    monkeypatch.setenv("ULTRON_SPACE", "shared")
    code, _, err = run(capsys, "upload", "--content", "Pin the JVM heap")
    assert code == AUTH and "'shared'" in err
    monkeypatch.delenv("ULTRON_SPACE")
    code, _, err = run(capsys, "login", "--token", teams.builder_a, "--space", "shared")
    assert code == AUTH and "may not write to space 'shared'" in err and not config_path().exists()
    code, out, _ = run(capsys, "login", "--token", teams.builder_a, "--space", "team-a")
    assert code == OK and "Writes go to space team-a." in out
    assert json.loads(config_path().read_text())["space"] == "team-a"
    assert Ultron(token=teams.builder_a).space == "team-a"
    code, out, _ = run(capsys, "status")
    assert code == OK and f"writes to team-a  (from {config_path()})" in out


def test_mcp_tools_take_space_and_spaces(teams):
    server = build_server(teams.url, teams.builder_a)

    async def scenario():
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            spaces = await client.call_tool("list_spaces", {})
            up = await client.call_tool("upload_memory", {**JVM, "space": "team-a"})
            default = await client.call_tool("upload_memory", PANDAS)
            found = await client.call_tool("search_memories", {"query": "pandas JVM heap", "spaces": ["team-a"]})
            refused = await client.call_tool("upload_memory", {**PANDAS, "space": "team-b"})
            text = await client.call_tool("ingest_text", {"text": "Error: X failed.\nFix: Y.", "space": "shared"})
            return tools, spaces, up, default, found, refused, text

    tools, spaces, up, default, found, refused, text = asyncio.run(scenario())
    for name, argument in [("upload_memory", "space"), ("ingest_text", "space"), ("search_memories", "spaces"),
                           ("get_context", "spaces"), ("list_skills", "spaces"), ("get_skill", "spaces")]:
        schema = tools[name].input_schema
        assert argument in schema["properties"] and argument not in schema.get("required", []), name
        assert argument in tools[name].description, name  # the description says how to use it
    assert [s["slug"] for s in spaces.structured_content["spaces"] if s["default"]] == ["team-a"]
    assert up.structured_content["space"] == default.structured_content["space"] == "team-a"
    assert {hit["space"] for hit in found.structured_content["results"]} == {"team-a"}
    assert refused.is_error and "403" in refused.content[0].text and "'team-b'" in refused.content[0].text
    assert text.is_error and "'shared'" in text.content[0].text
