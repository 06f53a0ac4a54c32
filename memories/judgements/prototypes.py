"""The offline type judgement: a small classifier trained on labelled examples of each type.

``memories/data/type_prototypes.jsonl`` holds written examples of the six memory types (the
"prototypes"). Once per process and embedding model they are embedded and a multinomial
logistic regression is fitted on three views of each text:

- the sentence embedding the hub computes for every memory anyway (what it is about);
- word unigrams and bigrams, TF-IDF weighted ("I thought", "we always", "instead of");
- character 2-4-grams within words, TF-IDF weighted (inflections, identifiers, Chinese).

The embedding alone places a memory by topic, which is not its type: "redis connection reset
when the pool is exhausted" (an error) and "size the redis pool to the worker count" (a
pattern) are neighbours. The n-grams carry the form — an incident, a rule, a corrected belief
— and the embedding carries what cue words miss. Training takes about a second once the
prototypes are embedded (their vectors are cached under the data directory); nothing is
downloaded. ``bench/classify.py`` measures it on a separate labelled set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from memories.models import MemoryType
from memories.providers.embeddings import get_embedder
from memories.text import embedding_text

logger = logging.getLogger("ultron.memories")

PROTOTYPES_PATH = Path(__file__).resolve().parent.parent / "data" / "type_prototypes.jsonl"
# Inverse regularisation strength of the logistic regression (scikit-learn's default scale).
# Chosen by ``bench/classify.py --grid`` as the value of 10, 30, 100, 300 with the lowest
# log-loss of the whole offline classifier on five-fold cross-validation of the prototypes
# (0.468, 0.450, 0.445, 0.446 with the nearest prototypes' weight in force); the dev half of the
# labelled set agrees (bench/README.md).
REGULARISATION_C = 100.0
# How many of a type's prototypes nearest to a memory speak for the type in ``TypeModel.nearest``.
NEAREST = 5


@dataclass(frozen=True)
class _TermView:
    """One fitted TF-IDF view, applied without scikit-learn's per-call validation (a few ms per
    text there, a fraction of one here): analyzer, vocabulary, idf, and its block of weights."""

    analyzer: Any
    vocabulary: dict[str, int]
    idf: np.ndarray
    weights: np.ndarray  # (types, terms)

    def decision(self, text: str) -> np.ndarray:
        counts: dict[int, int] = {}
        for term in self.analyzer(text):
            index = self.vocabulary.get(term)
            if index is not None:
                counts[index] = counts.get(index, 0) + 1
        if not counts:
            return np.zeros(self.weights.shape[0])
        indexes = np.fromiter(counts, dtype=np.int64)
        # What the fitted TfidfVectorizer computes (sublinear tf, idf, L2 norm), so its regression weights
        # apply unchanged.
        values = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64))) * self.idf[indexes]
        values /= np.linalg.norm(values)
        return self.weights[:, indexes] @ values


@dataclass(frozen=True)
class TypeModel:
    types: tuple[str, ...]
    views: tuple[_TermView, ...]
    embedding_weights: np.ndarray  # (types, dims)
    intercept: np.ndarray
    # The prototypes' unit vectors (float32) grouped by type, for ``nearest``: type i's are rows
    # type_bounds[i] to type_bounds[i + 1]. Contiguous rows in float32 halve the time of a plain
    # boolean mask over float64 rows, which grew with every prototype added.
    prototype_vectors: np.ndarray  # (prototypes, dims)
    type_bounds: tuple[int, ...]  # (types + 1,)

    def scores(self, text: str, vector: Any) -> dict[str, float]:
        """Each type's probability (softmax of the regression's decision values)."""
        decision = self.intercept + self.embedding_weights @ np.asarray(vector, dtype=np.float64)
        for view in self.views:
            decision = decision + view.decision(text)
        # Subtracting the maximum keeps exp() from overflowing; the softmax is unchanged by it.
        decision = np.exp(decision - decision.max())
        probabilities = decision / decision.sum()
        return {t: float(p) for t, p in zip(self.types, probabilities, strict=True)}

    def nearest(self, vector: Any) -> dict[str, float]:
        """Each type's mean cosine similarity of its ``NEAREST`` prototypes closest to ``vector``."""
        vector = np.asarray(vector, dtype=np.float32)
        similarities = self.prototype_vectors @ (vector / (np.linalg.norm(vector) or 1.0))
        found = {}
        for index, memory_type in enumerate(self.types):
            own = similarities[self.type_bounds[index] : self.type_bounds[index + 1]]
            found[memory_type] = float(np.partition(own, len(own) - NEAREST)[-NEAREST:].mean())
        return found


_cache: dict[tuple[str, str, int], TypeModel] = {}
_lock = threading.Lock()


def prototype_bodies() -> list[tuple[str, str, str, str]]:
    """(type, content, context, resolution) for every prototype, as shipped. A prototype is
    either one ``text`` (its content) or a memory's fields (``content`` with optional
    ``context`` and ``resolution``)."""
    bodies = []
    for number, line in enumerate(PROTOTYPES_PATH.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["type"] not in MemoryType.values:
            raise ValueError(f"{PROTOTYPES_PATH.name}:{number}: unknown type {row['type']!r}")
        if "text" in row:
            bodies.append((row["type"], row["text"], "", ""))
        else:
            bodies.append((row["type"], row["content"], row.get("context", ""), row.get("resolution", "")))
    return bodies


def prototype_examples() -> list[tuple[str, str]]:
    """(type, text) for every prototype: its fields joined the way the hub joins an uploaded
    memory's fields before it classifies them."""
    return [(memory_type, embedding_text(content, context, resolution))
            for memory_type, content, context, resolution in prototype_bodies()]


def type_model() -> TypeModel:
    """The classifier for the configured embedding model (trained once per process)."""
    embedder = get_embedder()
    # One classifier per embedding model: its embedding weights fit only that model's vectors.
    key = (embedder.provider, embedder.model, embedder.dimensions)
    found = _cache.get(key)
    if found is not None:
        return found
    with _lock:
        # Looked up again under the lock: two threads may both have missed, and only one should train.
        found = _cache.get(key)
        if found is None:
            found = _cache[key] = _train(embedder)
    return found


def _train(embedder: Any) -> TypeModel:
    examples = prototype_examples()
    texts = [text.strip() for _, text in examples]
    types = tuple(MemoryType.values)
    labels = np.array([types.index(t) for t, _ in examples])
    return type_model_fit(texts, labels, _prototype_vectors(embedder, texts))


def type_model_fit(texts: list[str], labels: np.ndarray, vectors: np.ndarray, *,
                   regularisation: float | None = None) -> TypeModel:
    """A classifier fitted on these examples (``labels`` index ``MemoryType.values``; ``vectors``
    are the texts' embeddings; ``regularisation`` defaults to ``REGULARISATION_C``).
    ``type_model`` fits it on every prototype; ``bench/classify.py`` also fits it on parts of
    them, to cross-validate."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    types = tuple(MemoryType.values)
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), min_df=2, sublinear_tf=True)
    blocks = [words.fit_transform(texts), chars.fit_transform(texts)]
    features = hstack([*blocks, csr_matrix(vectors)]).tocsr()
    regression = LogisticRegression(C=regularisation or REGULARISATION_C, solver="newton-cg",
                                    max_iter=1000).fit(features, labels)
    if list(regression.classes_) != list(range(len(types))):
        raise ValueError(f"{PROTOTYPES_PATH.name} must hold examples of every type")
    coef = regression.coef_
    views, start = [], 0
    for vectorizer, block in zip((words, chars), blocks, strict=True):
        width = block.shape[1]
        views.append(_TermView(vectorizer.build_analyzer(), dict(vectorizer.vocabulary_),
                               vectorizer.idf_.astype(np.float64), coef[:, start : start + width]))
        start += width
    if min(np.bincount(labels, minlength=len(types))) < NEAREST:
        raise ValueError(f"{PROTOTYPES_PATH.name} must hold at least {NEAREST} examples of every type")
    order = np.argsort(labels, kind="stable")
    unit: np.ndarray = vectors[order].astype(np.float32)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    counts = np.bincount(labels, minlength=len(types))
    bounds = (0, *(int(total) for total in np.cumsum(counts)))
    return TypeModel(types, tuple(views), coef[:, start:], regression.intercept_, unit, bounds)


def _prototype_vectors(embedder: Any, texts: list[str], kind: str = "type-prototypes") -> np.ndarray:
    """The prototypes' embeddings, kept under ``$ULTRON_DATA_DIR/cache`` keyed by the model and
    the file's content: embedding a thousand texts takes a while on a CPU, every process needs
    them, and they only change with the file or the model."""
    digest = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:16]
    name = f"{kind}-{embedder.provider}-{embedder.model}-{embedder.dimensions}-{digest}.npy"
    path = Path(settings.ULTRON_DATA_DIR) / "cache" / name.replace("/", "_")
    try:
        cached = np.load(path)
        if cached.shape == (len(texts), embedder.dimensions):
            return cached
    except (OSError, ValueError):
        pass
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside the target and renamed: another process never loads a half-written cache.
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as handle:
            np.save(handle, vectors)
        os.replace(handle.name, path)
    except OSError as exc:  # a read-only data directory costs time, not correctness
        logger.warning("could not cache the type prototypes' embeddings: %s", exc)
    return vectors


def type_scores(content: str, context: str = "", resolution: str = "", *, vector: Any = None) -> dict[str, float]:
    """Each type's probability for one memory. ``vector`` is the memory's embedding
    (``embedding_text`` of its body) when the caller has it."""
    model = type_model()
    text = embedding_text(content, context, resolution)
    if vector is None:
        vector = get_embedder().embed([text])[0]
    return model.scores(text, vector)
