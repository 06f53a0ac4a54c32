"""The isolation suite, the agents' client (issue 34): team B's token, through every MCP tool and
resource and every ``ultron`` command, never surfaces team A's canary, slugs or ids.

The tools are read from the MCP server itself (``list_tools``, ``list_resource_templates``) and
the commands from the CLI's own parser, each called with arguments built from its schema or its
options and aimed at team A's rows (``tests/isolation.py``): its word as the query, its memory ids,
its skill's slug, its exact text and session file to upload. Team A's own token sends the same
reads first and finds the canary. A tool or command that reads one row answers for team A's
exactly as for one that never existed, naming ``team-a`` is refused like an unknown space, and
the writes change no row of team A.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from ultron.cli import AUTH, build_parser, main
from ultron.mcp_server import build_server

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

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTED_TOOLS = 9
MISSING_SLUG = "no-such-skill-anywhere"
# Commands that store something on the hub (or the login): their answers may repeat what team B
# sent (the canary), never team A's ids; every other command only reads.
WRITE_COMMANDS = {"upload", "ingest", "ingest-text", "watch", "login", "logout"}
# `ultron mcp` serves until it is stopped: its tools are the MCP server tested here. setup, hook,
# doctor and spool work on this machine's files (tests/client/test_setup.py, test_hooks.py); feedback
# needs a serve_id only the voter's own search issues (tests/memories/test_feedback.py).
NOT_RUN = {"mcp", "setup", "hook", "doctor", "spool", "feedback"}
# Reads that print counts, not rows (team A's own token finds no text of its rows in them either).
COUNTS_ONLY = {"status"}


@pytest.fixture
def teams(hub, settings) -> Teams:
    return two_teams(settings)


def _ids(team: TeamRows, teams: Teams) -> list[str]:
    return list(dict.fromkeys([*team.memory_ids, *(teams.a_uuids if team is teams.a else [])]))


# --- MCP -------------------------------------------------------------------------------------


def _tool_arguments(tool: Any, team: TeamRows, teams: Teams) -> dict[str, Any]:
    """Arguments aimed at ``team``'s rows, for every parameter of the tool's input schema that
    can reach them; a required parameter this does not know fails the test."""
    schema = tool.input_schema
    fields = team.memory_fields
    known = {"query": f"{team.word} Django PostgreSQL docker compose web container", "ids": _ids(team, teams),
             "slug": team.skill_slug, "content": fields["content"], "context": fields["context"],
             "resolution": fields["resolution"], "tags": [team.word], "text": text_lesson(team.word),
             "memory_id": _ids(team, teams)[0], "rating": "wrong", "serve_id": "not-a-serve-id"}
    arguments: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in known:
            arguments[name] = known[name]
        elif name in ("limit", "token_budget"):
            arguments[name] = prop.get("maximum", 10)
        else:
            assert name not in schema.get("required", []), f"{tool.name}: no value for the required {name}"
    return arguments


def _result_text(result: Any) -> str:
    texts = [getattr(block, "text", "") for block in result.content]
    return "\n".join(texts) + json.dumps(result.structured_content or {})


async def _tools(client: Client) -> list[Any]:
    return (await client.list_tools()).tools


def _mcp(url: str, token: str, scenario):
    async def run():
        async with Client(build_server(url, token)) as client:
            return await scenario(client)

    return asyncio.run(run())


def test_no_mcp_tool_or_resource_shows_team_a_to_team_b(hub, teams):
    async def listing(client):
        return await _tools(client), (await client.list_resource_templates()).resource_templates

    tools, templates = _mcp(hub.url, teams.b_token, listing)
    assert len(tools) == EXPECTED_TOOLS, sorted(t.name for t in tools)
    assert [t.uri_template for t in templates] == ["skill://{slug}"]
    reads = [t for t in tools if t.annotations and t.annotations.read_only_hint]
    writes = [t for t in tools if t not in reads]
    assert {t.name for t in writes} == {"upload_memory", "ingest_text", "feedback"}

    async def calls(client, team: TeamRows, which):
        results = {}
        for tool in which:
            results[tool.name] = await client.call_tool(tool.name, _tool_arguments(tool, team, teams))
        results["skill://"] = await _resource(client, team.skill_slug)
        return results

    # Team A's own token finds its rows with these very calls.
    found = _mcp(hub.url, teams.a_token, lambda c: calls(c, teams.a, reads))
    for name, result in found.items():
        assert not getattr(result, "is_error", False) and leaks(teams, _result_text(result) if name != "skill://"
                                                                else result), name
    before = a_rows_snapshot(teams)
    problems = []
    for token in (teams.b_token, teams.b_staff_token):
        shown = _mcp(hub.url, token, lambda c: calls(c, teams.a, reads))
        for name, result in shown.items():
            text = _result_text(result) if name != "skill://" else result
            if found_here := leaks(teams, text, allowed=(*_ids(teams.a, teams), teams.a.skill_slug)):
                problems.append(f"{name}: {found_here}")
    assert not problems, "\n".join(problems)
    assert a_rows_snapshot(teams) == before

    # Writes carrying team A's exact text go to team B, merge into nothing of team A's.
    written = _mcp(hub.url, teams.b_token, lambda c: calls(c, teams.a, writes))
    for name, result in written.items():
        if name == "feedback":  # a vote on team A's memory with no call that served it: refused, nothing shown
            assert result.is_error and not leaks(teams, _result_text(result), allowed=(*_ids(teams.a, teams),)), name
        elif name != "skill://":
            assert not result.is_error, (name, _result_text(result))
            assert not leaks(teams, _result_text(result), allowed=(CANARY,)), name
    assert a_rows_snapshot(teams) == before


async def _resource(client: Client, slug: str) -> str:
    """The skill resource's text, or the error it raised (as text)."""
    try:
        resource = await client.read_resource(f"skill://{slug}")
    except Exception as error:  # noqa: BLE001 - the SDK raises its own error for a resource refused
        return f"error: {error}"
    return "\n".join(getattr(c, "text", "") for c in resource.contents)


def test_mcp_answers_for_team_as_rows_as_for_rows_that_never_existed(hub, teams):
    fresh = [str(uuid.uuid4()) for _ in _ids(teams.a, teams)]

    async def pairs(client):
        a_ids = _ids(teams.a, teams)
        return [
            (await client.call_tool("get_memory_details", {"ids": a_ids}),
             await client.call_tool("get_memory_details", {"ids": fresh}), list(zip(a_ids, fresh, strict=True))),
            (await client.call_tool("get_skill", {"slug": teams.a.skill_slug}),
             await client.call_tool("get_skill", {"slug": MISSING_SLUG}), [(teams.a.skill_slug, MISSING_SLUG)]),
            (await _resource(client, teams.a.skill_slug), await _resource(client, MISSING_SLUG),
             [(teams.a.skill_slug, MISSING_SLUG)]),
        ]

    for token in (teams.b_token, teams.b_staff_token):
        for seen, missing, swaps in _mcp(hub.url, token, pairs):
            shown = seen if isinstance(seen, str) else _result_text(seen)
            for old, new in swaps:
                shown = shown.replace(old, new)
            assert shown == (missing if isinstance(missing, str) else _result_text(missing))
            if not isinstance(seen, str):
                assert seen.is_error == missing.is_error


def test_mcp_naming_team_a_is_refused_like_a_space_that_does_not_exist(hub, teams):
    async def named(client):
        answers = []
        for tool in await _tools(client):
            properties = tool.input_schema.get("properties", {})
            key = "spaces" if "spaces" in properties else "space" if "space" in properties else None
            if key is None:
                continue
            arguments = _tool_arguments(tool, teams.b, teams)
            pair = []
            for slug in ("team-a", "team-zz"):
                result = await client.call_tool(tool.name, {**arguments, key: [slug] if key == "spaces" else slug})
                pair.append((result.is_error, _result_text(result).replace(slug, "SLUG")))
            answers.append((tool.name, pair))
        return answers

    before = a_rows_snapshot(teams)
    answers = _mcp(hub.url, teams.b_token, named)
    assert {name for name, _ in answers} == {"search_memories", "get_context", "list_skills", "get_skill",
                                             "upload_memory", "ingest_text"}
    for name, (team_a, unknown) in answers:
        assert team_a == unknown and team_a[0] and "403" in team_a[1], name
    assert a_rows_snapshot(teams) == before


# --- the CLI ---------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every command the parser runs (``skills list`` is ("skills", "list")), with its parser."""
    found = {}
    for action in parser._actions:  # argparse keeps its sub-commands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                inner = _subcommands(sub, (*prefix, name))
                found.update(inner or {(*prefix, name): sub})
    return found


def _argv(command: tuple[str, ...], parser: argparse.ArgumentParser, team: TeamRows, teams: Teams,
          tmp_path: Path, hub_url: str, token: str) -> list[str]:
    """``command``'s arguments aimed at ``team``'s rows; a required one this does not know fails."""
    sessions = tmp_path / f"sessions-{team.word}"
    sessions.mkdir(exist_ok=True)
    (sessions / f"{team.word}-session.jsonl").write_bytes(session_file(team.word))
    lesson = tmp_path / f"{team.word}-lesson.txt"
    lesson.write_text(text_lesson(team.word))
    known = {"query": [f"{team.word} Django PostgreSQL docker compose web container"], "ids": _ids(team, teams),
             "slug": [team.skill_slug], "paths": [str(sessions)], "file": [str(lesson)], "dir": [str(sessions)],
             "content": ["--content", team.memory_fields["content"]]}
    argv = list(command)
    for action in parser._actions:
        if action.dest in ("help", "version") or not (action.required or not action.option_strings):
            continue
        assert action.dest in known, f"ultron {' '.join(command)}: no value for the required {action.dest}"
        if action.option_strings and action.dest != "content":
            argv.append(action.option_strings[-1])
        argv += known[action.dest]
    if command == ("login",):
        argv += ["--url", hub_url, "--token", token]
    if command == ("watch",):
        argv += ["--once", "--settle", "0", "--interval", "0"]  # the files are complete: no waiting
    return argv


def _run(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out + err


def test_no_command_shows_team_a_to_team_b(hub, teams, capsys, monkeypatch, tmp_path):
    parser = build_parser()
    commands = _subcommands(parser)
    assert {" ".join(c) for c in commands} == {
        "login", "logout", "status", "spaces", "search", "details", "feedback", "upload", "ingest", "ingest-text",
        "watch", "context", "export", "skills list", "skills show", "skills install", "mcp", "setup", "hook",
        "doctor", "spool list", "spool drain"}, sorted(commands)
    run = {c: p for c, p in commands.items() if c[0] not in NOT_RUN}
    reads = {c: p for c, p in run.items() if c[0] not in WRITE_COMMANDS}

    def each(token: str, which: dict, team: TeamRows, *extra: str):
        monkeypatch.setenv("ULTRON_TOKEN", token)
        outputs = {}
        for command, sub in which.items():
            for flags in ((), ("--json",)):
                argv = _argv(command, sub, team, teams, tmp_path / token[:16], hub.url, token)
                outputs[(*command, *flags)] = _run(capsys, [*argv, *flags, *extra])
        return outputs

    (tmp_path / teams.a_token[:16]).mkdir()
    for command, (code, shown) in each(teams.a_token, reads, teams.a).items():
        if command[0] not in COUNTS_ONLY:
            assert code == 0 and leaks(teams, shown), (command, shown)  # team A's token finds its rows
    before = a_rows_snapshot(teams)
    problems = []
    allowed = (*_ids(teams.a, teams), teams.a.skill_slug)
    for token in (teams.b_token, teams.b_staff_token):
        (tmp_path / token[:16]).mkdir()
        for command, (_code, shown) in each(token, reads, teams.a).items():
            if found := leaks(teams, shown, allowed=allowed):
                problems.append(f"ultron {' '.join(command)}: {found}")
        installed = list((tmp_path / token[:16] / f"sessions-{CANARY}").rglob("SKILL.md"))
        assert not installed, "team A's skill was installed for team B"
    assert not problems, "\n".join(problems)
    assert a_rows_snapshot(teams) == before
    # The writes, carrying team A's text and session: into team B, nothing of team A in the answers.
    for command, (code, shown) in each(teams.b_token, {c: p for c, p in run.items() if c not in reads},
                                       teams.a).items():
        assert code == 0, (command, shown)
        assert not leaks(teams, shown, allowed=(CANARY,)), (command, shown)
    assert a_rows_snapshot(teams) == before


def test_commands_answer_for_team_as_rows_as_for_rows_that_never_existed(hub, teams, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ULTRON_TOKEN", teams.b_token)
    a_ids = _ids(teams.a, teams)
    fresh = [str(uuid.uuid4()) for _ in a_ids]
    pairs = [(["details", *a_ids], ["details", *fresh], list(zip(a_ids, fresh, strict=True))),
             (["skills", "show", teams.a.skill_slug], ["skills", "show", MISSING_SLUG],
              [(teams.a.skill_slug, MISSING_SLUG)]),
             (["skills", "install", teams.a.skill_slug, "--dir", str(tmp_path)],
              ["skills", "install", MISSING_SLUG, "--dir", str(tmp_path)], [(teams.a.skill_slug, MISSING_SLUG)])]
    for seen_argv, missing_argv, swaps in pairs:
        for flags in ((), ("--json",)):
            code, shown = _run(capsys, [*seen_argv, *flags])
            for old, new in swaps:
                shown = shown.replace(old, new)
            assert (code, shown) == _run(capsys, [*missing_argv, *flags]), seen_argv
    assert not list(tmp_path.rglob("SKILL.md"))


def test_commands_naming_team_a_are_refused_like_a_space_that_does_not_exist(hub, teams, capsys, monkeypatch,
                                                                              tmp_path):
    monkeypatch.setenv("ULTRON_TOKEN", teams.b_token)
    before = a_rows_snapshot(teams)
    parser = build_parser()
    checked = []
    for command, sub in _subcommands(parser).items():
        if command[0] in NOT_RUN | {"login", "logout", "status", "spaces"}:
            continue  # login checks the space itself (tests/client/test_spaces.py); the others name none
        argv = _argv(command, sub, teams.b, teams, tmp_path, hub.url, teams.b_token)
        if command == ("details",):
            continue  # details reads ids, in every space the token reads: it takes no --space
        answers = []
        for slug in ("team-a", "team-zz"):
            code, shown = _run(capsys, [*argv, "--space", slug])
            answers.append((code, shown.replace(slug, "SLUG")))
        assert answers[0] == answers[1] and answers[0][0] == AUTH, (command, answers)
        checked.append(" ".join(command))
    assert len(checked) >= 9, checked
    assert a_rows_snapshot(teams) == before
