"""A fake LLM/embedding HTTP server on loopback speaking DashScope's and OpenAI's shapes.

The real ``dashscope`` SDK and the real OpenAI-compatible client talk to it over HTTP; tests
script the replies they need.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import numpy as np

Reply = str | Callable[[dict], Any] | tuple[int, dict]

FAKE_DASHSCOPE_KEY = "sk-fake-dashscope-key-000000000000"  # the key the fake DashScope accepts


# The opening of each judgement's system prompt, and the kind of question it asks.
_KINDS = [
    ("You classify", "classify"),
    ("Summarise one", "summarize"),
    ("Merge several", "merge"),
    ("Two pieces of agent experience", "same_subject"),
    ("You split an agent", "segment"),
    ("You grade one task segment", "score"),
    ("Extract reusable", "extract"),
    ("Name the common topic", "cluster_topic"),
    ("Write a reusable skill", "skill_draft"),
    ("Check each numbered claim", "skill_verify"),
]


def fake_vector(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    vector = np.random.default_rng(seed).normal(size=dims)
    return list(vector / np.linalg.norm(vector))


class FakeLLMServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0
        # The OpenAI-style embedding endpoint: the dimension its "model" gives, the key it wants.
        self.embedding_dims = 384
        self.embedding_key = ""
        self.embedding_requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                # The reply is taken when the request arrives, so a request the client gave up
                # on (a timeout) still used its scripted reply.
                status, payload = server.respond(self.path, body, dict(self.headers))
                if server.delay:
                    time.sleep(server.delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> FakeLLMServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def assert_used_up(self) -> None:
        """Fail when scripted replies are left: the code under test made fewer model calls than
        the test expected (it took another path, or stopped early)."""
        unused = [r if isinstance(r, str | tuple) else getattr(r, "__name__", repr(r)) for r in self.replies]
        count = len(unused)
        assert not unused, f"{count} scripted LLM repl{'y' if count == 1 else 'ies'} left unused: {unused!r:.500}"

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if "generation" in r["path"] or "chat/completions" in r["path"]]

    def asked(self) -> list[tuple[str, str]]:
        """What the model was asked, in order: (kind, user message) per chat request, the kind
        told by the system prompt's opening (``other`` when none matches)."""
        asked = []
        for request in self.chat_requests():
            body = request["body"]
            messages = body.get("messages") or body.get("input", {}).get("messages") or []
            system = next((m["content"] for m in messages if m.get("role") == "system"), "")
            user = next((m["content"] for m in messages if m.get("role") == "user"), "")
            kind = next((name for opening, name in _KINDS if system.startswith(opening)), "other")
            asked.append((kind, user))
        return asked

    def asked_kinds(self) -> list[str]:
        return [kind for kind, _ in self.asked()]

    def _next_text(self, body: dict) -> tuple[int, str | dict]:
        if not self.replies:
            return 500, {"code": "NoScriptedReply", "message": "the test scripted no reply"}
        reply = self.replies.popleft()
        if isinstance(reply, tuple):
            return reply
        if callable(reply):
            reply = reply(body)
        return 200, reply if isinstance(reply, str) else json.dumps(reply)

    def respond(self, path: str, body: dict, headers: dict) -> tuple[int, dict]:
        if path.endswith("/services/embeddings/text-embedding/text-embedding"):
            texts = body["input"]["texts"]
            dims = int(body.get("parameters", {}).get("dimension", 1024))
            return 200, {
                "output": {"embeddings": [
                    {"text_index": i, "embedding": fake_vector(t, dims)} for i, t in enumerate(texts)
                ]},
                "usage": {"total_tokens": sum(len(t.split()) for t in texts)},
                "request_id": "fake-embed",
            }
        if path.endswith("/services/aigc/text-generation/generation"):
            if headers.get("Authorization") != f"Bearer {FAKE_DASHSCOPE_KEY}":
                return 401, {"code": "InvalidApiKey", "message": "Invalid API-key provided.", "request_id": "x"}
            status, text = self._next_text(body)
            if status != 200:
                return status, text if isinstance(text, dict) else {"code": "Error", "message": text}
            return 200, {
                "status_code": 200,
                "request_id": "fake-gen",
                "code": "",
                "message": "",
                "output": {
                    "text": None,
                    "finish_reason": None,
                    "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                },
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            }
        if path.endswith("/v1/embeddings"):  # OpenAI's shape, as Ollama, TEI and vLLM serve it
            if self.embedding_key and headers.get("Authorization") != f"Bearer {self.embedding_key}":
                return 401, {"error": {"message": "bad key"}}
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            self.embedding_requests.append(body)
            return 200, {"object": "list", "model": body.get("model"), "data": [
                {"object": "embedding", "index": i, "embedding": fake_vector(t, self.embedding_dims)}
                for i, t in reversed(list(enumerate(texts)))]}  # out of order: the index says which
        if path.endswith("/chat/completions"):
            status, text = self._next_text(body)
            if status != 200:
                return status, text if isinstance(text, dict) else {"error": {"message": text}}
            return 200, {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
            }
        return 404, {"code": "NotFound", "message": path}


@contextmanager
def served_embeddings(settings: Any, provider: str, dimensions: int, *, key: str = "") -> Iterator[FakeLLMServer]:
    """The hub embeds through this fake server for the duration (``dashscope`` or ``openai``);
    afterwards, whatever happened inside (a failed assertion included), the settings and the
    vector column are back as they were. The column change is DDL committed by a transactional
    test: left behind, it would break every later test."""
    from django.core.management import call_command

    from memories.selectors import embedding_column_dimensions

    chosen = {
        "dashscope": {"ULTRON_EMBEDDING_MODEL": "text-embedding-v4", "DASHSCOPE_API_KEY": FAKE_DASHSCOPE_KEY},
        "openai": {"ULTRON_EMBEDDING_MODEL": "nomic-embed-text", "ULTRON_EMBEDDING_API_KEY": key},
    }[provider]
    server = FakeLLMServer().start()
    server.embedding_dims, server.embedding_key = dimensions, key
    chosen.update({"ULTRON_EMBEDDING_PROVIDER": provider, "ULTRON_EMBEDDING_DIMENSIONS": dimensions,
                   "DASHSCOPE_BASE_URL" if provider == "dashscope" else "ULTRON_EMBEDDING_BASE_URL":
                       f"{server.url}/api/v1" if provider == "dashscope" else f"{server.url}/v1"})
    before = {name: getattr(settings, name) for name in chosen}
    try:
        for name, value in chosen.items():
            setattr(settings, name, value)
        yield server
    finally:
        server.stop()
        for name, value in before.items():
            setattr(settings, name, value)
        if embedding_column_dimensions() != settings.ULTRON_EMBEDDING_DIMENSIONS:
            call_command("reembed", stdout=StringIO(), stderr=StringIO())
