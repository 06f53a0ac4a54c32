"""How much a single token looks like a secret: a logistic regression over its characters.

Each token is read as a bag of binary features, L2-normalised:

- its character 1–3-grams, with ``^`` and ``$`` at the ends (``^sk``, ``_li``, ``==$``);
- the 2–5-grams of its shape (``a`` a small letter, ``A`` a capital, ``9`` a digit, punctuation
  as itself: ``Summer2024!`` is ``Aaaaaa9999!``) and its shape with runs collapsed (``Aa9!``);
- bins of its length, of its entropy against the most its length allows, of the share of its
  characters in dictionary words (the model's own vocabulary: the words of the lessons it was
  fitted on), of its digits, of case changes and of class changes per character.

Fitted on ``samples.examples()`` (about 60,000 tokens) at first use and cached under the data
directory by a digest of the examples; scoring is a dictionary lookup per feature (~20 µs).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import pickle
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("ultron.redaction")

MAX_LENGTH = 120  # characters of a token read; the rest adds nothing
REGULARISATION_C = 4.0
_WORD_RE = re.compile(r"[A-Za-z]{3,}")
_VERSION = 1  # bump when the features change: the cache key


_SHAPE_TABLE = str.maketrans({**{c: "a" for c in "abcdefghijklmnopqrstuvwxyz"},
                              **{c: "A" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, **{c: "9" for c in "0123456789"}})
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")
_CAMEL_RE = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])")
_RUNS_RE = re.compile(r"(.)\1+")


def _shape(token: str) -> str:
    """``Summer2024!`` as ``Aaaaaa9999!``: small letters, capitals, digits; punctuation as itself."""
    return _NON_ASCII_RE.sub("u", token.translate(_SHAPE_TABLE))


def _bin(value: float, edges: tuple[float, ...]) -> int:
    return sum(value >= edge for edge in edges)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _word_share(token: str, vocabulary: frozenset[str]) -> float:
    """The share of the token's characters in dictionary words, camelCase split at case changes."""
    words = _WORD_RE.findall(token)
    covered = sum(len(w) for w in words if w.lower() in vocabulary)
    whole = set(words)
    covered += sum(len(p) for p in _CAMEL_RE.findall(token) if p not in whole and p.lower() in vocabulary)
    return min(1.0, covered / max(1, len(token)))


def features(token: str, vocabulary: frozenset[str]) -> list[str]:
    token = token[:MAX_LENGTH]
    padded = f"^{token}$"
    out = [f"c{n}:{padded[i:i + n]}" for n in (1, 2, 3) for i in range(len(padded) - n + 1)]
    shape = _shape(token)
    out += [f"s{n}:{shape[i:i + n]}" for n in (2, 3, 4, 5) for i in range(len(shape) - n + 1)]
    collapsed = _RUNS_RE.sub(r"\1", shape)
    out.append(f"shape:{collapsed[:12]}")
    length = len(token)
    entropy_share = _entropy(token) / math.log2(min(max(length, 2), 64))
    classes = sum(1 for test in (str.islower, str.isupper, str.isdigit) if any(test(c) for c in token))
    changes = sum(1 for a, b in zip(shape, shape[1:], strict=False) if a != b) / max(1, length - 1)
    digits = sum(c.isdigit() for c in token) / length if length else 0.0
    out += [
        f"len:{_bin(length, (8, 12, 16, 20, 24, 32, 40, 48, 64, 80))}",
        f"ent:{_bin(entropy_share, (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95))}",
        f"words:{_bin(_word_share(token, vocabulary), (0.2, 0.4, 0.6, 0.8, 0.95))}",
        f"digits:{_bin(digits, (0.01, 0.1, 0.2, 0.35, 0.5, 0.8))}",
        f"changes:{_bin(changes, (0.1, 0.2, 0.3, 0.4, 0.5, 0.6))}",
        f"classes:{classes}",
    ]
    return out


@dataclass(frozen=True)
class LikenessModel:
    weights: dict[str, float]
    intercept: float
    vocabulary: frozenset[str]
    examples: int

    def score(self, token: str) -> float:
        """The probability that ``token`` is a secret (the last 4,096 tokens' scores are kept)."""
        return _score(self, token)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def compute(self, token: str) -> float:
        found = set(features(token, self.vocabulary))
        if not found:
            return 0.0
        total = sum(self.weights.get(f, 0.0) for f in found) / math.sqrt(len(found))
        decision = self.intercept + total
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, decision))))


@functools.lru_cache(maxsize=4096)
def _score(model: LikenessModel, token: str) -> float:
    return model.compute(token)


def fit(tokens: list[str], labels: list[int], vocabulary: frozenset[str], *,
        regularisation: float = REGULARISATION_C) -> LikenessModel:
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    index: dict[str, int] = {}
    rows, cols, values = [], [], []
    for row, token in enumerate(tokens):
        found = set(features(token, vocabulary))
        weight = 1.0 / math.sqrt(len(found)) if found else 0.0
        for feature in found:
            column = index.setdefault(feature, len(index))
            rows.append(row)
            cols.append(column)
            values.append(weight)
    matrix = csr_matrix((values, (rows, cols)), shape=(len(tokens), len(index)))
    regression = LogisticRegression(C=regularisation, max_iter=2000, solver="liblinear")
    regression.fit(matrix, np.asarray(labels))
    coefficients = regression.coef_[0]
    weights = {feature: float(coefficients[column]) for feature, column in index.items()
               if abs(coefficients[column]) > 1e-6}
    return LikenessModel(weights, float(regression.intercept_[0]), vocabulary, len(tokens))


def vocabulary_of(texts: list[str]) -> frozenset[str]:
    counts = Counter(w.lower() for text in texts for w in _WORD_RE.findall(text))
    return frozenset(w for w, n in counts.items() if n >= 2)


_lock = threading.Lock()
_model: LikenessModel | None = None


def _cache_path(name: str, digest: str) -> Path | None:
    from django.conf import settings

    root = getattr(settings, "ULTRON_DATA_DIR", None)
    return Path(root) / "cache" / f"{name}-{digest}.pickle" if root else None


def likeness_model() -> LikenessModel:
    """The fitted model, loaded from the cache or fitted once per process."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = load_or_fit("secret-likeness", inputs_digest(), LikenessModel, _fit_from_samples)
    return _model


def inputs_digest() -> str:
    """What the fitted model depends on, cheap to compute: the example makers' source, the
    shipped lessons, the detector catalogue's version, Python's (its standard library is read)."""
    from importlib import metadata

    from memories.redaction.likeness import samples

    digest = hashlib.sha256()
    digest.update(Path(samples.__file__).read_bytes())
    digest.update(f"|v{_VERSION}|C{REGULARISATION_C}|{sys.version}|".encode())
    try:
        digest.update(metadata.version("kingfisher-secret-scanner").encode())
    except metadata.PackageNotFoundError:
        digest.update(b"no-kingfisher")
    for path in samples.data_files():
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def _fit_from_samples() -> LikenessModel:
    from memories.redaction.likeness import samples

    tokens, labels = samples.examples()
    return fit(tokens, labels, vocabulary_of(list(samples.shipped_texts())))


def load_or_fit(name: str, digest: str, kind: type, fit_model: Callable[[], Any]) -> Any:
    """A model fitted from shipped examples: read from the data directory's cache by the digest of
    its inputs, or fitted (``fit_model``) and cached for the next process."""
    path = _cache_path(name, digest)
    if path is not None and path.exists():
        try:
            with path.open("rb") as handle:
                loaded = pickle.load(handle)  # our own file, written below
            if isinstance(loaded, kind):
                return loaded
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            logger.warning("%s: the cached model could not be read, fitting again", name)
    fitted = fit_model()
    logger.info("%s: fitted on %d examples", name, fitted.examples)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            with temporary.open("wb") as handle:
                pickle.dump(fitted, handle)
            temporary.replace(path)
        except OSError:
            logger.warning("%s: could not cache the fitted model at %s", name, path)
    return fitted
