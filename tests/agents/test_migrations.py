"""A database made before agents moved into their own app upgrades with plain ``migrate``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from agents.services import token_hash

# The newest migration of each app before the agents app existed.
BEFORE_AGENTS_APP = [
    ("ultron_site", "0001_initial"),
    ("memories", "0004_hot_updates"),
    ("ingestion", "0001_initial"),
    ("clusters", "0001_initial"),
    ("agents", None),
]


def _migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


def _latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_an_existing_database_keeps_its_agents_tokens_and_links_after_migrate():
    state_nodes = [target for target in BEFORE_AGENTS_APP if target[1] is not None]
    old = _migrate(BEFORE_AGENTS_APP).loader.project_state(state_nodes).apps
    try:
        user = User.objects.create(username="agent:veteran")
        agent = old.get_model("ultron_site", "Agent").objects.create(name="veteran", user_id=user.pk)
        token = "ult_0123456789ab_" + "s" * 40
        old.get_model("ultron_site", "ApiToken").objects.create(
            agent=agent, prefix="0123456789ab", key_hash=token_hash(token), label="from before")
        old.get_model("ingestion", "IngestJob").objects.create(agent=agent, files=[])
        content_type, _ = ContentType.objects.get_or_create(app_label="ultron_site", model="agent")
    finally:
        _migrate(_latest())

    from agents.models import Agent, ApiToken
    from ingestion.models import IngestJob

    moved = Agent.objects.get(name="veteran")
    assert moved.user.username == "agent:veteran"
    assert ApiToken.objects.get(agent=moved).label == "from before"
    assert IngestJob.objects.get().agent == moved
    # Permissions and admin history follow the model: its content type was relabelled, not replaced.
    assert ContentType.objects.get(pk=content_type.pk).app_label == "agents"
    # And the old token still opens the API.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/memories/stats").status_code == 200
