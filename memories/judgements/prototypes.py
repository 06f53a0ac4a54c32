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
— and the embedding carries what cue words miss. Training takes about a second; nothing is
downloaded or stored. ``bench/classify.py`` measures it on a separate labelled set.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memories.models import MemoryType
from memories.providers.embeddings import get_embedder
from memories.text import embedding_text

PROTOTYPES_PATH = Path(__file__).resolve().parent.parent / "data" / "type_prototypes.jsonl"
# Inverse regularisation strength of the logistic regression (scikit-learn's default scale).
REGULARISATION_C = 10.0


@dataclass(frozen=True)
class TypeModel:
    types: tuple[str, ...]
    words: Any
    chars: Any
    regression: Any

    def scores(self, text: str, vector: Any) -> dict[str, float]:
        from scipy.sparse import csr_matrix, hstack

        row = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        features = hstack([self.words.transform([text]), self.chars.transform([text]), csr_matrix(row)]).tocsr()
        probabilities = self.regression.predict_proba(features)[0]
        return {self.types[int(label)]: float(p) for label, p in zip(self.regression.classes_, probabilities, strict=True)}


_cache: dict[tuple[str, str, int], TypeModel] = {}
_lock = threading.Lock()


def prototype_examples() -> list[tuple[str, str]]:
    """(type, text) for every prototype, as shipped."""
    examples = []
    for number, line in enumerate(PROTOTYPES_PATH.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["type"] not in MemoryType.values:
            raise ValueError(f"{PROTOTYPES_PATH.name}:{number}: unknown type {row['type']!r}")
        examples.append((row["type"], row["text"]))
    return examples


def type_model() -> TypeModel:
    """The classifier for the configured embedding model (trained once per process)."""
    embedder = get_embedder()
    key = (embedder.provider, embedder.model, embedder.dimensions)
    found = _cache.get(key)
    if found is not None:
        return found
    with _lock:
        found = _cache.get(key)
        if found is None:
            found = _cache[key] = _train(embedder)
    return found


def _train(embedder: Any) -> TypeModel:
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    examples = prototype_examples()
    texts = [embedding_text(text, "", "") for _, text in examples]
    types = tuple(MemoryType.values)
    labels = np.array([types.index(t) for t, _ in examples])
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), min_df=2, sublinear_tf=True)
    features = hstack([words.fit_transform(texts), chars.fit_transform(texts), csr_matrix(vectors)]).tocsr()
    regression = LogisticRegression(C=REGULARISATION_C, max_iter=3000).fit(features, labels)
    return TypeModel(types, words, chars, regression)


def type_scores(content: str, context: str = "", resolution: str = "", *, vector: Any = None) -> dict[str, float]:
    """Each type's probability for one memory. ``vector`` is the memory's embedding
    (``embedding_text`` of its body) when the caller has it."""
    model = type_model()
    text = embedding_text(content, context, resolution)
    if vector is None:
        vector = get_embedder().embed([text])[0]
    return model.scores(text, vector)
