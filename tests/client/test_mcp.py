"""``ultron mcp`` driven by the MCP SDK's own client against the live hub: a real ``ultron mcp``
subprocess over stdio, one over streamable HTTP, and the SDK's in-process connection for the
rest of the tools."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import pytest
from mcp import Client, StdioServerParameters
from ultron.mcp_server import build_server

pytestmark = pytest.mark.django_db(transaction=True)
TOOLS = {"search_memories", "get_memory_details", "upload_memory", "get_context", "ingest_text", "list_skills",
         "get_skill", "list_spaces", "feedback"}
MEMORY = {"content": "npm ERR! EACCES: permission denied, mkdir '/usr/lib/node_modules'",
          "context": "npm install -g as a normal user", "resolution": "set npm's prefix to ~/.npm-global",
          "tags": ["npm", "node"]}


def _env(hub, tmp_path) -> dict[str, str]:
    # PYTHONPATH: the stdio client passes a few variables only; the server must be this checkout's.
    return {"ULTRON_URL": hub.url, "ULTRON_TOKEN": hub.token, "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


def test_stdio_subprocess_serves_the_hub(hub, tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "ultron", "mcp"], env=_env(hub, tmp_path))

    async def scenario():
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            uploaded = await client.call_tool("upload_memory", MEMORY)
            found = await client.call_tool("search_memories", {"query": "npm EACCES global install", "limit": 3})
            return tools, uploaded, found

    tools, uploaded, found = asyncio.run(scenario())
    assert set(tools) == TOOLS
    assert all(len(t.description or "") > 80 for t in tools.values())  # they say when to use them
    assert tools["search_memories"].annotations.read_only_hint is True
    assert not uploaded.is_error and uploaded.structured_content["merged"] is False
    memory_id = uploaded.structured_content["id"]
    assert found.structured_content["results"][0]["id"] == memory_id
    assert found.structured_content["results"][0]["memory_type"] == "error"


def test_every_tool_and_the_skill_resource(hub, skill):
    server = build_server(hub.url, hub.token)

    async def scenario():
        async with Client(server) as client:
            up = await client.call_tool("upload_memory", MEMORY)
            memory_id = up.structured_content["id"]
            details = await client.call_tool("get_memory_details", {"ids": [memory_id]})
            context = await client.call_tool("get_context", {"query": "npm permission denied", "token_budget": 300})
            text = await client.call_tool("ingest_text", {"text": (
                "Error: ECONNREFUSED 127.0.0.1:5432 when the web container starts.\n"
                "Cause: the database was not ready yet.\nFix: add a healthcheck and a depends_on condition.\n")})
            skills = await client.call_tool("list_skills", {})
            one = await client.call_tool("get_skill", {"slug": skill, "spaces": ["shared"]})
            missing = await client.call_tool("get_skill", {"slug": "no-such-skill"})
            bad = await client.call_tool("upload_memory", {"content": "   "})
            resource = await client.read_resource(f"skill://{skill}")
            templates = await client.list_resource_templates()
            return memory_id, details, context, text, skills, one, missing, bad, resource, templates

    memory_id, details, context, text, skills, one, missing, bad, resource, templates = asyncio.run(scenario())
    assert details.structured_content["memories"][0]["resolution"] == MEMORY["resolution"]
    assert "[error]" in context.content[0].text and "EACCES" in context.content[0].text
    assert text.structured_content["extractor"] == "offline" and text.structured_content["memories"]
    assert [(s["slug"], s["space"]) for s in skills.structured_content["skills"]] == [(skill, "shared")]
    assert one.structured_content["markdown"].startswith("---") and one.structured_content["space"] == "shared"
    assert missing.is_error and "404" in missing.content[0].text
    assert bad.is_error and "content:" in bad.content[0].text  # the hub's own message
    assert resource.contents[0].text == one.structured_content["markdown"]
    assert [t.uri_template for t in templates.resource_templates] == ["skill://{slug}"]


def test_a_refused_token_is_a_tool_error_the_model_can_read(hub):
    async def scenario():
        async with Client(build_server(hub.url, "ult_000000000000_nope")) as client:
            return await client.call_tool("search_memories", {"query": "anything"})

    result = asyncio.run(scenario())
    assert result.is_error and "401" in result.content[0].text and "ULTRON_TOKEN" in result.content[0].text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_streamable_http(hub, tmp_path):
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "ultron", "mcp", "--http", "--port", str(port)],
                               env={**os.environ, **_env(hub, tmp_path)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                time.sleep(0.1)

        async def scenario():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                found = await client.call_tool("search_memories", {"query": "anything"})
                return names, found

        names, found = asyncio.run(scenario())
        assert names == TOOLS and not found.is_error and found.structured_content == {"results": []}
    finally:
        process.terminate()
        process.wait(timeout=10)
