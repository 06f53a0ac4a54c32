"""LLM access: DashScope (``dashscope`` SDK), any OpenAI-compatible endpoint, or none.

Callers ask for JSON with :meth:`LLMClient.ask_json` and a validator. Every reply is parsed
defensively (thinking blocks, code fences, stray prose around the object), validated, and the
call retried with exponential backoff; each request is time-limited. When no LLM is
configured the client is *unavailable* and callers use their offline (rule-based) path.
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import httpx
from django.conf import settings

from memories.providers.cache import ProviderCache

logger = logging.getLogger("ultron.llm")

T = TypeVar("T")


class LLMError(RuntimeError):
    """The LLM could not give a usable answer (after retries)."""


class LLMUnavailable(LLMError):
    """No LLM is configured: the caller must use its offline path."""


class InvalidReply(ValueError):
    """The reply was not the JSON shape asked for."""


class Transport(Protocol):
    name: str
    model: str

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int, timeout: float) -> str: ...


_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> Any:
    """Extract the first JSON object (or array) from a model reply.

    Handles ``<think>`` blocks, Markdown code fences and prose before or after the JSON.
    Raises :class:`InvalidReply` when no JSON value can be found.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidReply("empty reply")
    # A thinking block may hold braces or a draft of the answer: it goes before any JSON is looked for.
    text = _THINK_RE.sub("", text).strip()
    # A fenced block is the model marking its JSON: it is tried before the prose around it.
    candidates = [m.group(1).strip() for m in _FENCE_RE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for index, char in enumerate(candidate):
            if char not in "{[":
                continue
            try:
                value, _ = decoder.raw_decode(candidate, index)
            except json.JSONDecodeError:
                continue
            return value
    raise InvalidReply("no JSON object in reply")


class DashScopeTransport:
    name = "dashscope"

    def __init__(self, *, api_key: str, model: str, base_url: str):
        self.api_key = api_key
        self.model = model
        self.base_url = base_url

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int, timeout: float) -> str:
        from dashscope import Generation

        kwargs: dict[str, Any] = {"request_timeout": max(1, int(round(timeout)))}
        if self.base_url:
            kwargs["base_address"] = self.base_url
        response = Generation.call(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]  # the SDK also takes plain dicts
            api_key=self.api_key,
            result_format="message",
            max_tokens=max_tokens,
            temperature=0.2,
            enable_thinking=False,
            **kwargs,
        )
        status = getattr(response, "status_code", None)
        if status != 200:
            raise LLMError(f"DashScope HTTP {status}: {getattr(response, 'code', '')}")
        try:
            return str(response.output["choices"][0]["message"]["content"])  # type: ignore[union-attr]
        except (KeyError, IndexError, TypeError) as exc:
            raise InvalidReply("DashScope reply has no message content") from exc


class OpenAICompatibleTransport:
    name = "openai"

    def __init__(self, *, base_url: str, api_key: str, model: str):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int, timeout: float) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0.2}
        try:
            response = httpx.post(
                f"{self.base_url}/chat/completions", json=body, headers=headers, timeout=timeout
            )
        except httpx.HTTPError as exc:
            raise LLMError(f"OpenAI-compatible request failed: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise LLMError(f"OpenAI-compatible HTTP {response.status_code}")
        try:
            return str(response.json()["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise InvalidReply("OpenAI-compatible reply has no message content") from exc


class LLMClient:
    def __init__(
        self,
        transport: Transport | None,
        *,
        attempts: int = 3,
        backoff: float = 1.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.transport = transport
        self.attempts = attempts
        self.backoff = backoff
        self.timeout = timeout
        self._sleep = sleep

    @property
    def available(self) -> bool:
        return self.transport is not None

    @property
    def name(self) -> str:
        return self.transport.name if self.transport else "offline"

    @property
    def model(self) -> str:
        return self.transport.model if self.transport else "rules"

    def ask_json(
        self,
        *,
        system: str,
        user: str,
        validate: Callable[[Any], T],
        max_tokens: int = 1024,
        purpose: str = "llm",
    ) -> T:
        """Send one prompt, return ``validate(parsed_json)``; retry on any failure.

        ``validate`` raises ``InvalidReply`` (or ``ValueError``/``KeyError``/``TypeError``)
        for a reply of the wrong shape. Raises :class:`LLMUnavailable` when no LLM is
        configured and :class:`LLMError` after the last failed attempt.
        """
        if self.transport is None:
            raise LLMUnavailable("no LLM is configured")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        last_error = ""
        for attempt in range(1, self.attempts + 1):
            try:
                reply = self.transport.chat(messages, max_tokens=max_tokens, timeout=self.timeout)
                return validate(parse_json_reply(reply))
            except (InvalidReply, ValueError, KeyError, TypeError) as exc:
                last_error = f"invalid reply: {exc}"
            except LLMError as exc:
                last_error = str(exc)
            except Exception as exc:  # network errors from the SDK, timeouts, ...
                last_error = f"{type(exc).__name__}: {exc}"[:300]
            logger.warning(
                "%s: %s attempt %d/%d failed: %s",
                purpose, self.name, attempt, self.attempts, last_error,
            )
            if attempt < self.attempts and self.backoff > 0:
                # Doubling, with ±25 % jitter (flow.md#llm), so that callers failing together do not retry together.
                delay = self.backoff * (2 ** (attempt - 1))
                self._sleep(delay * (0.75 + random.random() / 2))
        raise LLMError(f"{purpose}: no usable reply after {self.attempts} attempts ({last_error})")


@dataclass(frozen=True)
class _Key:
    provider: str
    model: str
    dashscope_key: str
    dashscope_url: str
    openai_url: str
    openai_key: str
    attempts: int
    backoff: float
    timeout: float


_cache: ProviderCache[LLMClient] = ProviderCache()


def _build(key: _Key) -> LLMClient:
    transport: Transport | None
    if key.provider == "dashscope":
        transport = DashScopeTransport(api_key=key.dashscope_key, model=key.model, base_url=key.dashscope_url)
    elif key.provider == "openai":
        transport = OpenAICompatibleTransport(base_url=key.openai_url, api_key=key.openai_key, model=key.model)
    else:
        transport = None
    return LLMClient(transport, attempts=key.attempts, backoff=key.backoff, timeout=key.timeout)


def get_llm() -> LLMClient:
    """The LLM client the settings ask for (``offline`` gives an unavailable client)."""
    key = _Key(
        settings.ULTRON_LLM_PROVIDER,
        settings.ULTRON_LLM_MODEL,
        settings.DASHSCOPE_API_KEY,
        settings.DASHSCOPE_BASE_URL,
        settings.OPENAI_BASE_URL,
        settings.OPENAI_API_KEY,
        settings.ULTRON_LLM_MAX_ATTEMPTS,
        settings.ULTRON_LLM_BACKOFF_SECONDS,
        settings.ULTRON_LLM_TIMEOUT_SECONDS,
    )
    return _cache.get(key, lambda: _build(key))
