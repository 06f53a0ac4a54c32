"""The search path's cache of recent queries: redacted and embedded once per process."""

from __future__ import annotations

import pytest

from memories import services
from memories.services import recall

pytestmark = pytest.mark.django_db

SECRET = "ghp_" + "x7Kq9vLm2Rt5Wz8Yb3Nc6Hd1Jf4Gs0Pa2Qe"


def test_a_repeated_query_is_redacted_and_embedded_once(monkeypatch):
    services.memory_upload(content="docker build fails behind the corporate proxy; set HTTP_PROXY build args")
    embedded, redacted = [], []
    real_embed, real_redact = recall.embed_texts, recall.redact_one_for
    monkeypatch.setattr(recall, "embed_texts", lambda texts: embedded.append(texts) or real_embed(texts))
    monkeypatch.setattr(recall, "redact_one_for",
                        lambda occasion, text: redacted.append(text) or real_redact(occasion, text))
    query = f"docker proxy build failing with token {SECRET}"
    first = services.memories_search(query=query)
    second = services.memories_search(query=query)
    assert [h.id for h in first.hits] == [h.id for h in second.hits] != []
    assert len(embedded) == 1 and len(redacted) == 1
    assert SECRET not in embedded[0][0]  # what was embedded is the redacted query
    services.memories_search(query="something else entirely")
    assert len(embedded) == 2
    # nothing of the raw query is kept: keys are digests, values the redacted text and vector
    for key, (text, _) in recall._query_cache.items():
        assert SECRET not in text and all(SECRET not in str(part) for part in key)


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(recall, "QUERY_CACHE_SIZE", 3)
    for i in range(5):
        recall.query_prepare(f"query number {i}")
    assert len(recall._query_cache) == 3


def test_a_blank_query_embeds_nothing():
    assert recall.query_prepare("   ") == ("", None)
    assert services.memories_search(query="  ").hits == []
