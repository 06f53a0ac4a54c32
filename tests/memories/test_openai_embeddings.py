"""Any embedding server: the ``openai`` provider posts to ``<base>/embeddings`` the way Ollama,
Hugging Face TEI, vLLM, LM Studio and OpenAI serve it. Tested against a fake server on loopback,
through the real upload, search and reembed paths."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from memories.models import EmbeddingSpace, Memory
from memories.text import embedding_text
from tests.fakes import fake_vector, served_embeddings

pytestmark = pytest.mark.django_db(transaction=True)

def test_a_hub_on_an_embedding_server_stores_and_finds_with_its_vectors(settings, api):
    with served_embeddings(settings, "openai", 256, key="sk-local-embed") as server:
        call_command("reembed", stdout=StringIO(), stderr=StringIO())  # adopt the server's space
        content = "Ollama answers 404 on /api/embeddings: the OpenAI route is /v1/embeddings"
        created = api.post("/api/memories/upload", {"content": content}, format="json")
        assert created.status_code == 201, created.json()
        space = EmbeddingSpace.objects.get()
        assert (space.provider, space.model, space.dimensions) == ("openai", "nomic-embed-text", 256)
        stored = np.asarray(Memory.objects.get().embedding)
        assert np.allclose(stored, fake_vector(embedding_text(content, "", ""), 256), atol=1e-5)
        assert all(r["model"] == "nomic-embed-text" for r in server.embedding_requests)
        found = api.post("/api/memories/search", {"query": content, "mode": "semantic"}, format="json").json()
        assert found["results"][0]["id"] == created.json()["id"]


def test_a_server_with_another_dimension_or_down_is_a_503_naming_what_to_do(settings, api):
    with served_embeddings(settings, "openai", 128) as server:
        call_command("reembed", stdout=StringIO(), stderr=StringIO())
        server.embedding_dims = 768  # the operator switched the server's model underneath
        wrong = api.post("/api/memories/upload", {"content": "a memory that cannot be embedded"}, format="json")
        assert wrong.status_code == 503 and wrong.json()["error"] == "embedding_failed"
        assert "768-dimension" in wrong.json()["message"] and "ULTRON_EMBEDDING_DIMENSIONS" in wrong.json()["message"]
        assert wrong["Retry-After"] == "5"
        server.stop()
        down = api.post("/api/memories/upload", {"content": "another memory"}, format="json")
        assert down.status_code == 503 and "did not answer" in down.json()["message"]
        assert not Memory.objects.exists()


def test_the_openai_provider_needs_its_url_and_model():
    import subprocess
    import sys

    base = {"DJANGO_SECRET_KEY": "x", "DATABASE_URL": "postgresql://x@localhost/x", "PATH": "/usr/bin:/bin",
            "ULTRON_EMBEDDING_PROVIDER": "openai"}
    check = [sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='ultron_site.settings'; "
                                   "from django.conf import settings; settings.INSTALLED_APPS"]
    no_url = subprocess.run(check, env=base, capture_output=True, text=True)
    assert no_url.returncode != 0 and "needs ULTRON_EMBEDDING_BASE_URL" in no_url.stderr
    no_model = subprocess.run(check, env={**base, "ULTRON_EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1"},
                              capture_output=True, text=True)
    assert no_model.returncode != 0 and "needs ULTRON_EMBEDDING_MODEL" in no_model.stderr
