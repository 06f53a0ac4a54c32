"""Retries, against a tiny loopback server that answers from a script: 429 (with Retry-After),
502, 503 and 504 and connection errors are retried with backoff; other 4xx never are."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ultron import (
    AsyncUltron,
    InvalidRequestError,
    RateLimitError,
    ServerError,
    Ultron,
    UltronConnectionError,
    UltronError,
)
from ultron._protocol import RetryPolicy

STATS = {"total": 3, "by_status": {"active": 3}, "by_tier": {}, "by_type": {}, "merge_pending": 0,
         "embedding": None}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up (the timeout tests) leaves a broken pipe behind


class Scripted:
    """Answers each request with the next (status, body, headers) of the script."""

    def __init__(self, *answers: tuple[int, object, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.seen: list[tuple[str, str, float]] = []
        self.keys: list[str | None] = []  # each request's Idempotency-Key header
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                scripted.seen.append((self.command, self.path, time.monotonic()))
                scripted.keys.append(self.headers.get("Idempotency-Key"))
                status, body, headers = scripted.answers.pop(0)
                time.sleep(float(headers.get("X-Delay", 0)))
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    servers: list[Scripted] = []

    def make(*answers):
        servers.append(Scripted(*answers))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def busy(status: int, **headers: str) -> tuple[int, object, dict[str, str]]:
    return status, {"error": "busy", "message": "try again"}, headers


def test_503_then_200_is_retried_after_a_backoff(scripted):
    server = scripted(busy(503), busy(502), busy(504), (200, STATS, {}))
    stats = Ultron(url=server.url, token="t", backoff=0.05).stats()
    assert stats.total == 3 and len(server.seen) == 4
    gaps = [b[2] - a[2] for a, b in zip(server.seen, server.seen[1:], strict=False)]
    assert gaps[0] >= 0.04 and gaps[1] >= 0.09 and gaps[2] >= 0.19  # doubling from 0.05 s


def test_429_waits_as_retry_after_says(scripted):
    server = scripted(busy(429, **{"Retry-After": "0.3"}), (200, STATS, {}))
    started = time.monotonic()
    Ultron(url=server.url, token="t", backoff=0).stats()
    assert time.monotonic() - started >= 0.3 and len(server.seen) == 2


def test_other_4xx_are_never_retried(scripted):
    body = {"error": "invalid", "message": "content: This field may not be blank.", "field": "content"}
    server = scripted((400, body, {}), (200, STATS, {}))
    with pytest.raises(InvalidRequestError) as caught:
        Ultron(url=server.url, token="t", backoff=0).upload_memory(content=" ")
    assert caught.value.field == "content" and len(server.seen) == 1


def test_retries_run_out_into_the_last_error(scripted):
    server = scripted(*[busy(503)] * 3)
    with pytest.raises(ServerError) as caught:
        Ultron(url=server.url, token="t", retries=2, backoff=0).stats()
    assert caught.value.status == 503 and caught.value.message == "try again" and len(server.seen) == 3
    server = scripted(*[busy(429, **{"Retry-After": "0"})] * 2)
    with pytest.raises(RateLimitError):
        Ultron(url=server.url, token="t", retries=1, backoff=0).stats()


def test_an_embedding_mismatch_is_not_waited_for(scripted):
    body = {"error": "embedding_unavailable", "message": "run manage.py reembed"}
    server = scripted((503, body, {}), (200, STATS, {}))
    with pytest.raises(ServerError, match="reembed"):
        Ultron(url=server.url, token="t", backoff=0).stats()
    assert len(server.seen) == 1


def test_a_page_that_is_not_the_hubs_is_an_error_not_a_crash(scripted):
    server = scripted((404, "<html>Not Found</html>", {}), (200, "<html>welcome</html>", {}))
    with pytest.raises(UltronError, match="no such endpoint"):
        Ultron(url=server.url, token="t").stats()
    with pytest.raises(UltronError, match="not JSON"):
        Ultron(url=server.url, token="t").stats()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_errors_are_retried_then_reported():
    url = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    with pytest.raises(UltronConnectionError, match="cannot reach the hub") as caught:
        Ultron(url=url, token="t", retries=2, backoff=0.1).stats()
    assert time.monotonic() - started >= 0.3  # 0.1 + 0.2
    assert caught.value.status is None


def test_the_async_twin_retries_the_same_way(scripted):
    server = scripted(busy(503), busy(429, **{"Retry-After": "0"}), (200, STATS, {}))

    async def scenario():
        async with AsyncUltron(url=server.url, token="t", backoff=0.01) as ultron:
            return await ultron.stats()

    assert asyncio.run(scenario()).total == 3 and len(server.seen) == 3


def test_retry_after_as_an_http_date_and_the_backoff_cap():
    policy = RetryPolicy(backoff=1, max_backoff=4)
    assert [policy.delay(n) for n in range(4)] == [1, 2, 4, 4]
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= policy.delay(0, later) <= 31
    assert policy.delay(0, "soon") == 1  # unreadable: the backoff


UPLOADED = {"id": "0b8f2f4e-7d1c-4a8e-9f39-0e1c2d3b4a5f", "memory_type": "error", "tier": "warm",
            "status": "active", "hit_count": 1, "merged": False, "merge_pending": False,
            "similarity_score": None, "candidate_of": None}


def test_an_upload_that_times_out_is_sent_again_with_the_same_idempotency_key(scripted):
    """The hub may have stored the first attempt; the key makes the retry answer what it did."""
    server = scripted((201, UPLOADED, {"X-Delay": "1"}), (201, UPLOADED, {}))
    result = Ultron(url=server.url, token="t", timeout=0.3, backoff=0).upload_memory(content="x")
    assert result.hit_count == 1 and len(server.seen) == 2
    assert server.keys[0] and server.keys[0] == server.keys[1]
    # A second logical upload gets a key of its own.
    server.answers.append((201, UPLOADED, {}))
    Ultron(url=server.url, token="t", backoff=0).upload_memory(content="x")
    assert server.keys[2] not in (None, server.keys[0])


def test_a_repeat_the_hub_is_still_running_is_asked_again_after_retry_after(scripted):
    running = (409, {"error": "idempotency_in_progress", "message": "still running"}, {"Retry-After": "0"})
    server = scripted(running, (201, UPLOADED, {}))
    assert Ultron(url=server.url, token="t", backoff=0).upload_memory(content="x").hit_count == 1
    assert len(server.seen) == 2 and server.keys[0] == server.keys[1]


def test_a_post_without_a_key_that_timed_out_is_not_sent_again():
    import httpx
    from ultron._protocol import Request, _retryable

    search = Request("POST", "/api/memories/search", json={"query": "x"})
    assert not _retryable(search, None, httpx.ReadTimeout("slow"), None)
    assert _retryable(Request("POST", "/api/memories/upload", idempotency_key="k"), None,
                      httpx.ReadTimeout("slow"), None)


def test_a_get_that_times_out_is_asked_again(scripted):
    server = scripted((200, STATS, {"X-Delay": "1"}), (200, STATS, {}))
    assert Ultron(url=server.url, token="t", timeout=0.3, backoff=0).stats().total == 3
    assert len(server.seen) == 2
