"""The client's logic without I/O, shared by ``Ultron`` and ``AsyncUltron``.

An operation is a generator: it yields a ``Request`` (or a ``Sleep``) and is sent back the
decoded JSON answer, or has the ``UltronError`` thrown into it. ``exchange`` turns one
``Request`` into HTTP attempts with retries, yielding ``Http`` and ``Sleep`` steps; ``drive``
runs an operation through it. The two clients only perform those two steps, one with
``httpx.Client`` and ``time.sleep``, the other with ``httpx.AsyncClient`` and
``asyncio.sleep``, so every mapping and retry rule exists once.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from ultron.errors import UltronConnectionError, UltronError, error_from_response

T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Errors raised before the request left: safe to retry whatever the method. Once a POST was
# sent, a read timeout may mean the hub stored it, so only GETs retry those.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_MAX_RETRY_AFTER = 120.0


@dataclass
class Request:
    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    files: list[tuple[str, tuple[str, bytes, str]]] | None = None
    data: dict[str, Any] | None = None
    timeout: float | None = None
    ok_statuses: tuple[int, ...] = ()  # error statuses whose body is an answer (health's 503)
    # Sent as the Idempotency-Key header: the hub runs a POST once per key, so its retries are
    # safe even after a timeout (the hub may have carried the first attempt out).
    idempotency_key: str | None = None
    text: bool = False  # the answer is a file (Markdown), not JSON: returned as text


@dataclass
class Sleep:
    seconds: float


@dataclass
class Http:
    kwargs: dict[str, Any] = field(default_factory=dict)


Step = Request | Sleep
Operation = Generator[Step, Any, T]
IOStep = Http | Sleep


@dataclass
class RetryPolicy:
    """``retries`` more attempts after the first on 429 (waiting as ``Retry-After`` says),
    502, 503, 504 and connection errors; the wait doubles from ``backoff`` seconds up to
    ``max_backoff``. Other errors, 4xx above all, are never retried."""

    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            seconds = _retry_after_seconds(retry_after)
            if seconds is not None:
                return min(seconds, _MAX_RETRY_AFTER)
        return min(self.max_backoff, self.backoff * (2 ** attempt))


def _retry_after_seconds(value: str) -> float | None:
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _retryable(request: Request, status: int | None, error: Exception | None, body: Any) -> bool:
    if error is not None:
        return isinstance(error, _NOT_SENT) or request.method == "GET" or request.idempotency_key is not None
    if status == 409 and isinstance(body, dict) and body.get("error") == "idempotency_in_progress":
        return True  # the first attempt still runs: its answer comes after Retry-After
    if status == 503 and isinstance(body, dict) and body.get("error") == "embedding_unavailable":
        return False  # needs an operator (manage.py reembed), not patience
    return status in RETRY_STATUSES


def _transport_message(exc: httpx.TransportError, request: Request, base_url: str) -> str:
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, _NOT_SENT):
        return f"cannot reach the hub at {base_url}: {reason}"
    if isinstance(exc, httpx.TimeoutException):
        done = "; it may have been carried out all the same" if request.method != "GET" else ""
        return f"the hub at {base_url} did not answer {request.method} {request.path} in time ({reason}){done}"
    return f"the connection to the hub at {base_url} failed during {request.method} {request.path}: {reason}"


def _decode(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def exchange(request: Request, *, base_url: str, policy: RetryPolicy,
             slow_timeouts: bool = True) -> Generator[IOStep, Any, Any]:
    """One request with its retries; returns the decoded JSON answer or raises UltronError.
    ``slow_timeouts``: give slow operations their longer timeout (off when the caller chose one)."""
    kwargs: dict[str, Any] = {"method": request.method, "url": base_url + request.path}
    for name in ("json", "params", "files", "data"):
        if getattr(request, name) is not None:
            kwargs[name] = getattr(request, name)
    if request.timeout is not None and slow_timeouts:
        kwargs["timeout"] = request.timeout
    if request.idempotency_key is not None:
        kwargs["headers"] = {"Idempotency-Key": request.idempotency_key}
    attempt = 0
    while True:
        try:
            response: httpx.Response = yield Http(kwargs)
        except httpx.TransportError as exc:
            if attempt < policy.retries and _retryable(request, None, exc, None):
                yield Sleep(policy.delay(attempt))
                attempt += 1
                continue
            raise UltronConnectionError(_transport_message(exc, request, base_url)) from exc
        status = response.status_code
        if request.text and status < 400:
            return response.text
        body = _decode(response)
        if status < 400 or status in request.ok_statuses:
            if body is None and response.content:
                raise UltronError(f"the hub's answer to {request.method} {request.path} is not JSON "
                                  f"(is {base_url} the hub's URL?)", status=status, error="not_json")
            return body
        if attempt < policy.retries and _retryable(request, status, None, body):
            yield Sleep(policy.delay(attempt, response.headers.get("Retry-After")))
            attempt += 1
            continue
        raise error_from_response(status, body, response.text)


def drive(operation: Operation[T], *, base_url: str, policy: RetryPolicy,
          slow_timeouts: bool = True) -> Generator[IOStep, Any, T]:
    """Run an operation: each Request through ``exchange``, its answer or error sent back in."""
    value: Any = None
    error: UltronError | None = None
    while True:
        try:
            step = operation.throw(error) if error is not None else operation.send(value)
        except StopIteration as stop:
            return stop.value
        value, error = None, None
        if isinstance(step, Sleep):
            yield step
            continue
        try:
            value = yield from exchange(step, base_url=base_url, policy=policy, slow_timeouts=slow_timeouts)
        except UltronError as exc:
            error = exc
