from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from agents.models import ApiToken
from memories.models import EmbeddingSpace, Memory
from memories.services import EmbeddingSpaceMismatch, embedding_space_ensure, memory_upload
from tests.fakes import served_embeddings

pytestmark = pytest.mark.django_db


def test_create_agent_prints_a_working_token_once_and_stores_only_its_hash():
    out, err = StringIO(), StringIO()
    call_command("create_agent", "builder-bot", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert token.startswith("ult_") and "only this once" in err.getvalue()
    stored = ApiToken.objects.get(agent__name="builder-bot")
    assert token not in (stored.key_hash, stored.prefix) and len(stored.key_hash) == 64
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get(reverse("memory-stats")).status_code == 200
    # a second token for the same agent works too; the first stays valid
    call_command("create_agent", "builder-bot", stdout=StringIO(), stderr=StringIO())
    assert ApiToken.objects.filter(agent__name="builder-bot").count() == 2


def test_revoked_tokens_stop_working(api, agent):
    from agents.services import token_revoke

    assert api.get(reverse("memory-stats")).status_code == 200
    token_revoke(token=agent.tokens.get())
    assert api.get(reverse("memory-stats")).status_code == 401


def test_staff_flag_from_the_command():
    call_command("create_agent", "curator-script", "--staff", stdout=StringIO(), stderr=StringIO())
    assert ApiToken.objects.get(agent__name="curator-script").agent.user.is_staff


def test_rebalance_tiers_command_reports(agent):
    memory = memory_upload(content="Use pytest fixtures for shared setup", agent=agent).memory
    out = StringIO()
    call_command("rebalance_tiers", stdout=out)
    assert "hot=0 warm=1 cold=0" in out.getvalue()  # no other agent used it yet: not HOT
    Memory.objects.filter(pk=memory.pk).update(readers=2)
    call_command("rebalance_tiers", stdout=out)
    assert "hot=1 warm=0 cold=0" in out.getvalue()


def test_run_pipeline_all_fails_and_names_the_step_when_a_step_fails(monkeypatch):
    """A cron job or an operator's script reads the exit status: one failing step makes the
    whole run fail (CommandError is what gives manage.py its non-zero exit), while the steps
    after it still run and every result is still printed."""
    from ultron_site import pipeline

    def broken() -> dict:
        raise RuntimeError("the cluster table is locked")

    monkeypatch.setattr("memories.tasks.tier_rebalance_step", broken)
    out = StringIO()
    with pytest.raises(CommandError, match=r"failed: tier_rebalance$") as failure:
        call_command("run_pipeline", "--all", stdout=out)
    assert failure.value.returncode != 0
    printed = json.loads(out.getvalue())
    assert list(printed) == pipeline.step_names()
    assert printed["tier_rebalance"] == {"error": "RuntimeError: the cluster table is locked"}
    assert pipeline.failed_steps(printed) == ["tier_rebalance"]  # the later steps still ran, and passed


def test_run_pipeline_all_exits_zero_when_every_step_passes():
    out = StringIO()
    call_command("run_pipeline", "--all", stdout=out)
    assert "error" not in json.loads(out.getvalue())["tier_rebalance"]


def test_run_pipeline_one_step_fails_with_its_name(monkeypatch):
    def broken() -> dict:
        raise RuntimeError("boom")

    monkeypatch.setattr("memories.tasks.merge_retry_step", broken)
    with pytest.raises(CommandError, match="merge_retry: RuntimeError: boom"):
        call_command("run_pipeline", "--step", "merge_retry", stdout=StringIO())


def test_ensure_admin_creates_one_superuser_once(settings, tmp_path):
    settings.ULTRON_DATA_DIR = tmp_path
    out = StringIO()
    call_command("ensure_admin", stdout=out)
    assert "password" in out.getvalue()
    again = StringIO()
    call_command("ensure_admin", stdout=again)
    assert again.getvalue() == ""


def test_embedding_model_change_is_refused_until_reembed(agent, settings):
    memory_upload(content="Pin torch to the CPU build to avoid CUDA downloads", agent=agent)
    # Pretend the stored vectors came from another model.
    EmbeddingSpace.objects.update(model="some-other-model")
    from memories.services import embedding_space_forget

    embedding_space_forget()
    with pytest.raises(EmbeddingSpaceMismatch, match="reembed"):
        embedding_space_ensure()
    with pytest.raises(CommandError, match="reembed"):
        call_command("check_embedding_space", stdout=StringIO())
    # The API says so too, as a 503, not a 500.
    client = APIClient()
    from agents.services import token_issue

    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(agent=agent).token}")
    response = client.post(reverse("memory-search"), {"query": "torch"}, format="json")
    assert response.status_code == 503 and "reembed" in response.json()["message"]
    out = StringIO()
    call_command("reembed", stdout=out, stderr=StringIO())
    assert "re-embedded 1" in out.getvalue()
    embedding_space_ensure()
    assert EmbeddingSpace.objects.get().model == "all-MiniLM-L6-v2"


def test_vectors_of_an_older_text_format_are_refused_until_reembed(agent):
    """Earlier versions embedded "<type>: " before the body (format 1)."""
    from memories.models import Memory
    from memories.services import embedding_space_forget
    from memories.text import EMBEDDING_TEXT_FORMAT, embedding_text

    result = memory_upload(content="Pin torch to the CPU build to avoid CUDA downloads", agent=agent)
    EmbeddingSpace.objects.update(text_format=1)
    old = services_embed(f"{result.memory.memory_type}: {result.memory.content}")
    Memory.objects.filter(pk=result.memory.pk).update(embedding=old)
    embedding_space_forget()
    with pytest.raises(EmbeddingSpaceMismatch, match="older text format"):
        embedding_space_ensure()
    call_command("reembed", stdout=StringIO(), stderr=StringIO())
    embedding_space_ensure()
    assert EmbeddingSpace.objects.get().text_format == EMBEDDING_TEXT_FORMAT
    stored = list(Memory.objects.get(pk=result.memory.pk).embedding)
    assert stored == pytest.approx(services_embed(embedding_text(result.memory.content, "", "")), abs=1e-5)


def services_embed(text: str) -> list[float]:
    from memories.providers.embeddings import get_embedder

    return [float(x) for x in get_embedder().embed([text])[0]]


@pytest.mark.django_db(transaction=True)
def test_reembed_into_a_new_dimension_rebuilds_the_column(agent, settings):
    """A real dimension change: DashScope-sized vectors from the fake server, then back."""
    memory_upload(content="Use a partial HNSW index per memory type", agent=agent)
    from memories.selectors import embedding_column_dimensions

    assert _vector_storage() == "m"  # kept in the row (migration memories.0027)
    with served_embeddings(settings, "dashscope", 256):
        call_command("reembed", stdout=StringIO(), stderr=StringIO())
        assert embedding_column_dimensions() == 256
        assert len(Memory.objects.get().embedding) == 256
        assert _vector_storage() == "m"  # the new column too
    assert embedding_column_dimensions() == 384
    assert len(Memory.objects.get().embedding) == 384
    assert _vector_storage() == "m"


def _vector_storage() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = 'memories_memory'::regclass "
                       "AND attname = 'embedding'")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_test_failing_after_a_dimension_change_still_restores_the_column(settings):
    from memories.selectors import embedding_column_dimensions

    with pytest.raises(AssertionError, match="the test body failed"):
        with served_embeddings(settings, "dashscope", 128):
            call_command("reembed", stdout=StringIO(), stderr=StringIO())
            assert embedding_column_dimensions() == 128
            raise AssertionError("the test body failed")
    assert embedding_column_dimensions() == settings.ULTRON_EMBEDDING_DIMENSIONS == 384


def test_admin_pages_render_for_a_superuser(client, agent):
    from django.contrib.auth import get_user_model

    memory_upload(content="Use select_related to avoid N+1 queries in list views", agent=agent)
    admin = get_user_model().objects.create_superuser("root", "", "pw")
    client.force_login(admin)
    for url in ("/admin/memories/memory/", "/admin/agents/agent/", "/admin/memories/embeddingspace/"):
        assert client.get(url).status_code == 200, url
    memory = Memory.objects.get()
    assert client.get(f"/admin/memories/memory/{memory.pk}/change/").status_code == 200
