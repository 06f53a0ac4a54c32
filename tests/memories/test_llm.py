from __future__ import annotations

import json

import numpy as np
import pytest

from memories.judgements.classify import classify
from memories.judgements.summarize import summarize
from memories.providers.embeddings import DashScopeEmbedder, get_embedder
from memories.providers.llm import (
    InvalidReply,
    LLMClient,
    LLMError,
    LLMUnavailable,
    get_llm,
    parse_json_reply,
)


@pytest.mark.parametrize(
    "reply",
    [
        '{"memory_type": "error"}',
        '```json\n{"memory_type": "error"}\n```',
        'Here you go:\n```\n{"memory_type": "error"}\n```\nAnything else?',
        '<think>hmm, {"memory_type": "pattern"} maybe?</think>{"memory_type": "error"}',
        'The answer is {"memory_type": "error"} as requested.',
        '{bad} then {"memory_type": "error"}',
    ],
)
def test_json_is_found_in_messy_replies(reply):
    assert parse_json_reply(reply) == {"memory_type": "error"}


@pytest.mark.parametrize("reply", ["", "   ", "no json here", "{unclosed", None])
def test_replies_without_json_are_invalid(reply):
    with pytest.raises(InvalidReply):
        parse_json_reply(reply)


class ScriptedTransport:
    name = "scripted"
    model = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = 0

    def chat(self, messages, *, max_tokens, timeout):
        self.calls += 1
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def _validate(data):
    if data.get("ok") is not True:
        raise InvalidReply("not ok")
    return "fine"


def test_client_retries_with_backoff_until_a_valid_reply():
    sleeps = []
    transport = ScriptedTransport(TimeoutError("slow"), '{"ok": false}', '{"ok": true}')
    client = LLMClient(transport, attempts=3, backoff=0.5, sleep=sleeps.append)
    assert client.ask_json(system="s", user="u", validate=_validate) == "fine"
    assert transport.calls == 3
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0]


def test_client_gives_up_after_the_last_attempt():
    client = LLMClient(ScriptedTransport("nope", "nope"), attempts=2, backoff=0)
    with pytest.raises(LLMError, match="after 2 attempts"):
        client.ask_json(system="s", user="u", validate=_validate)


def test_offline_client_is_unavailable():
    client = get_llm()
    assert not client.available
    with pytest.raises(LLMUnavailable):
        client.ask_json(system="s", user="u", validate=_validate)


def test_dashscope_generation_through_the_real_sdk(dashscope_llm):
    dashscope_llm.script('{"memory_type": "security"}')
    assert classify("something vague", "", "") == "security"
    request = dashscope_llm.chat_requests()[0]
    assert request["path"] == "/api/v1/services/aigc/text-generation/generation"
    assert request["body"]["model"] == "qwen3.6-flash"
    assert request["body"]["input"]["messages"][0]["role"] == "system"
    assert request["headers"]["Authorization"].startswith("Bearer sk-fake")


def test_dashscope_errors_fall_back_to_rules(dashscope_llm, settings):
    dashscope_llm.script((500, {"code": "InternalError", "message": "x"}), "garbage", '{"memory_type": "bogus"}')
    assert classify("Traceback: ValueError raised", "", "") == "error"
    assert len(dashscope_llm.chat_requests()) == 3


def test_dashscope_bad_key_falls_back(dashscope_llm, settings):
    settings.DASHSCOPE_API_KEY = "sk-wrong"
    assert classify("I prefer tabs over spaces", "", "") == "preference"
    # the model was asked, with the wrong key, and refused: the rules decided
    asked = dashscope_llm.chat_requests()
    assert asked and all(r["headers"]["Authorization"] == "Bearer sk-wrong" for r in asked)


def test_llm_timeout_is_enforced(openai_llm, settings):
    settings.ULTRON_LLM_TIMEOUT_SECONDS = 0.3
    settings.ULTRON_LLM_MAX_ATTEMPTS = 2
    openai_llm.delay = 1.0
    openai_llm.script('{"memory_type": "security"}', '{"memory_type": "security"}')
    # Both attempts time out: the rules decide.
    assert classify("I prefer tabs over spaces", "", "") == "preference"
    assert openai_llm.asked_kinds() == ["classify", "classify"]


def test_the_fake_server_fails_a_test_that_leaves_scripted_replies_unused(settings):
    """The check the fake_llm_server fixture makes after every test: a reply the code never
    asked for means the LLM path the test meant to exercise did not run as scripted."""
    from tests.fakes import FakeLLMServer

    server = FakeLLMServer().start()
    try:
        settings.ULTRON_LLM_PROVIDER = "openai"
        settings.OPENAI_BASE_URL = f"{server.url}/v1"
        settings.ULTRON_LLM_MODEL = "fake-model"
        server.script('{"memory_type": "security"}', '{"summary_l0": "s", "overview_l1": "o"}')
        assert classify("I prefer tabs over spaces", "", "") == "security"
    finally:
        server.stop()
    with pytest.raises(AssertionError, match="1 scripted LLM reply left unused"):
        server.assert_used_up()
    server.replies.clear()
    server.assert_used_up()


def test_llm_summaries_are_held_to_their_budgets(openai_llm):
    long = " ".join(["word"] * 500)
    openai_llm.script(json.dumps({"summary_l0": long, "overview_l1": long}))
    l0, l1 = summarize("content", "", "")
    assert len(l0.split()) <= 66 and len(l1.split()) <= 258
    assert l0.startswith("word word") and openai_llm.asked_kinds() == ["summarize"]


def test_dashscope_embeddings_through_the_real_sdk(dashscope_llm, settings):
    embedder = DashScopeEmbedder(
        api_key=settings.DASHSCOPE_API_KEY, model="text-embedding-v4", dimensions=512,
        base_url=settings.DASHSCOPE_BASE_URL, timeout=5,
    )
    texts = [f"text {i}" for i in range(13)]  # two batches (10 + 3)
    vectors = embedder.embed(texts)
    assert vectors.shape == (13, 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    calls = [r for r in dashscope_llm.requests if "embedding" in r["path"]]
    assert [len(c["body"]["input"]["texts"]) for c in calls] == [10, 3]
    assert calls[0]["body"]["parameters"]["dimension"] == 512


def test_local_embedder_handles_texts_longer_than_the_model_window():
    embedder = get_embedder()
    short = "The deployment failed because the database migration timed out."
    long = short + " " + " ".join(f"filler sentence number {i} about gardening." for i in range(200))
    vectors = embedder.embed([short, long])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # The long text is dominated by its tail, so it must not equal the short text's vector
    # (which is what truncation to the first window would give).
    assert float(vectors[0] @ vectors[1]) < 0.9
