"""MEMORY.md: current knowledge as one Markdown file — grouped by topic and type, superseded
memories left out, a topic's published skill named; through the API, the admin and the client."""

from __future__ import annotations

import pytest
from django.urls import reverse

from clusters.knowledge_file import knowledge_markdown
from memories.services import memory_upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator_client():
    from django.http import HttpRequest
    from django.test import Client

    from ultron_site.people import person_create

    person = person_create(username="cora", role="curator", password_once=False)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client


@pytest.fixture
def knowledge():
    from agents.selectors import space_shared

    old = memory_upload(content="Install dependencies with `poetry install`; the lock file is poetry.lock.",
                        context="billing-api repository", resolution="Run poetry install --with dev.").memory
    new = memory_upload(content="We moved from Poetry to uv: dependencies install with `uv sync`.",
                        context="billing-api repository", resolution="Run uv sync --frozen.").memory
    error = memory_upload(content="docker compose up fails: port 5432 is already allocated",
                          context="local development", resolution="Stop the host PostgreSQL or map 5433:5432.").memory
    return {"old": old, "new": new, "error": error, "space": space_shared()}


def test_the_file_holds_current_knowledge_by_topic_and_type(knowledge):
    text = knowledge_markdown(space_ids=[knowledge["space"].pk], space_slugs=["shared"])
    assert text.startswith("# MEMORY.md") and "from shared: 2 current memories" in text
    assert "uv sync --frozen" in text and "poetry install --with dev" not in text  # superseded: left out
    assert "### Errors and fixes" in text and "Stop the host PostgreSQL or map 5433:5432." in text
    assert f"id {knowledge['error'].pk}" in text
    assert "## " in text  # every memory sits under a topic heading (or "Not yet in a topic")


def test_the_api_and_the_admin_serve_it_for_the_callers_spaces(knowledge, api, curator_client):
    response = api.get(reverse("memory-export-md"))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    assert 'filename="MEMORY.md"' in response["Content-Disposition"]
    assert "uv sync --frozen" in response.content.decode()
    assert api.get(reverse("memory-export-md") + "?spaces=team-nope").status_code == 403
    page = curator_client.get(reverse("admin:memories_memory_changelist")).content.decode()
    assert reverse("admin:clusters_knowledgecluster_memory_file") in page
    download = curator_client.get(reverse("admin:clusters_knowledgecluster_memory_file"))
    assert download.status_code == 200 and "uv sync --frozen" in download.content.decode()


def test_another_spaces_knowledge_is_not_in_the_file(knowledge, api):
    from agents.services import space_create

    memory_upload(content="team B only: the canary deploy runs at noon", space=space_create(slug="team-b"))
    assert "canary deploy" not in api.get(reverse("memory-export-md")).content.decode()
