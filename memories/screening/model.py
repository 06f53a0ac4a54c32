"""The screen's own learned judgement: how much a memory reads like an attempt to steer the
agents that read it, learned from labelled memories rather than listed.

``memories/data/screen_train_*.jsonl`` hold written examples of attacks and of benign lessons
full of the same words (installers piped to a shell, force-pushes on one's own branch, security
advice quoting attacks). Once per process and embedding model a logistic regression is fitted on
three views of each, as the type classifier does (``memories.judgements.prototypes``):

- the sentence embedding the hub computes for every memory anyway (what it asks for);
- word unigrams and bigrams, TF-IDF weighted ("send the", "instead of", "do not tell");
- character 2-4-grams within words (identifiers, flags, Chinese).

Scoring a memory costs well under a millisecond (its embedding is the upload's own); fitting
takes a few seconds once the examples are embedded (their vectors are cached under the data
directory). Nothing is downloaded. ``bench/screen.py`` measures it on sets it was not fitted on.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from memories.judgements.prototypes import _prototype_vectors, _TermView, prototype_bodies
from memories.providers.embeddings import get_embedder
from memories.screening.links import ALLOWED_DEFAULT, allowed_checker, host_of
from memories.text import embedding_text

DATA = Path(__file__).resolve().parent.parent / "data"
TRAINING_GLOB = "screen_train_*.jsonl"
# Inverse regularisation of the regression: 10 against 1 on the dev set the model is not fitted on
# (bench/screen.py --c; bench/README.md): more catches at the same false holds.
REGULARISATION_C = 10.0


@dataclass(frozen=True)
class ScreenModel:
    views: tuple[_TermView, ...]
    embedding_weights: np.ndarray  # (dims,)
    intercept: float
    examples: int

    def probability(self, text: str, vector: Any, allowed: Callable[[str], bool] | None = None) -> float:
        """How likely ``text`` (a memory's fields joined, with ``vector`` its embedding) is an
        attack; ``allowed``: the space's allowed-host check."""
        decision = self.intercept + float(self.embedding_weights @ np.asarray(vector, dtype=np.float64))
        words = model_text(text, allowed)
        for view in self.views:
            decision += float(view.decision(words)[0])
        return float(1.0 / (1.0 + np.exp(-decision)))


def training_rows(paths: list[Path] | None = None) -> list[dict]:
    """The labelled examples: the screen's own (attacks and benign lessons full of the same
    words), and the type classifier's prototypes as benign ones — ordinary errors, rules,
    preferences and corrections, many of them imperative ("run the linters before pushing"), so
    the model does not take an order to the reader for an attack by its form alone."""
    rows: list[dict] = []
    if paths is None:
        rows.extend({"label": "benign", "content": content, "context": context, "resolution": resolution}
                    for _, content, context, resolution in prototype_bodies())
    for path in paths if paths is not None else sorted(DATA.glob(TRAINING_GLOB)):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in ("attack", "benign"):
                raise ValueError(f"{path.name}:{number}: label must be attack or benign")
            rows.append(row)
    return rows + framed(rows)


# What the hub's own session extraction writes around a lesson (ingestion/judgements/lessons.py): the
# user's confirmation in the context, numbered steps in the resolution. Those words are the hub's,
# not the writer's; a quarter of the examples of both labels are repeated inside them so that the
# framing says nothing about the label (without it, long extracted lessons read as orders).
_FRAMINGS = (("confirmed by the user: {context}", "Steps that worked: 1. {resolution}"),
             ("confirmed by the user: that fixed it, thanks", "{resolution}"),
             ("{context}", "Steps that worked: 1. {resolution}; 2. re-ran the failing step"))


def framed(rows: list[dict]) -> list[dict]:
    out = []
    for index, row in enumerate(rows):
        if index % 4:
            continue
        context_form, resolution_form = _FRAMINGS[(index // 4) % len(_FRAMINGS)]
        context = row.get("context") or "works now"
        resolution = row.get("resolution") or row.get("content") or ""
        out.append({**row, "id": f"{row.get('id', index)}-framed",
                    "context": context_form.format(context=context),
                    "resolution": resolution_form.format(resolution=resolution)})
    return out


# Hosts and addresses are left to the rules and the allow-list: written examples name attacker hosts
# from reserved ranges (x.example, 203.0.113.7) that real attacks do not use, and a model that learned
# them would judge the name, not the request. The words and characters the model reads see one token.
_URL = re.compile(r"\b(?:https?|ftp|wss?)://\S+|\bwww\.\S+", re.IGNORECASE)
_HOSTNAME = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:example|test|invalid|local|internal|com|net|org|io|dev|cn|co)\b", re.IGNORECASE)
_ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")


def model_text(text: str, allowed: Callable[[str], bool] | None = None) -> str:
    """``text`` as the model's word and character views read it: links, host names and IP
    addresses as placeholders, those ``allowed`` (the space's allowed hosts, the reader's own
    network) apart from the others: a link to the allowed documentation is not a link elsewhere."""
    allowed = allowed or _DEFAULT_ALLOWED

    def link(match: re.Match) -> str:
        return " doclink " if allowed(host_of(match.group(0))) else " weblink "

    def host(match: re.Match) -> str:
        return " dochost " if allowed(match.group(0).lower()) else " hostname "

    def address(match: re.Match) -> str:
        return " localaddr " if allowed(match.group(0).split(":")[0]) else " ipaddr "

    return _ADDRESS.sub(address, _HOSTNAME.sub(host, _URL.sub(link, text)))


_DEFAULT_ALLOWED = allowed_checker(ALLOWED_DEFAULT)


def row_text(row: dict) -> str:
    return embedding_text(row.get("content") or "", row.get("context") or "", row.get("resolution") or "").strip()


def screen_model_fit(texts: list[str], labels: np.ndarray, vectors: np.ndarray, *,
                     regularisation: float | None = None) -> ScreenModel:
    """A model fitted on these examples (``labels``: 1 attack, 0 benign; ``vectors`` their embeddings)."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    # Vocabularies capped: every web and worker process holds the model (~10 MB this way, ~60 MB uncapped).
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, max_features=30000)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), min_df=3, sublinear_tf=True, max_features=30000)
    normalised = [model_text(text) for text in texts]
    blocks = [words.fit_transform(normalised), chars.fit_transform(normalised)]
    features = hstack([*blocks, csr_matrix(vectors)]).tocsr()
    regression = LogisticRegression(C=regularisation or REGULARISATION_C, solver="liblinear",
                                    class_weight="balanced", max_iter=2000).fit(features, labels)
    coef = regression.coef_  # (1, features)
    views, start = [], 0
    for vectorizer, block in zip((words, chars), blocks, strict=True):
        width = block.shape[1]
        views.append(_TermView(vectorizer.build_analyzer(), dict(vectorizer.vocabulary_),
                               vectorizer.idf_.astype(np.float64), coef[:, start : start + width]))
        start += width
    return ScreenModel(tuple(views), coef[0, start:], float(regression.intercept_[0]), len(texts))


_cache: dict[tuple[str, str, int], ScreenModel | None] = {}
_lock = threading.Lock()


def screen_model() -> ScreenModel | None:
    """The model for the configured embedding model (fitted once per process); None when no
    training examples are shipped."""
    embedder = get_embedder()
    key = (embedder.provider, embedder.model, embedder.dimensions)
    if key in _cache:
        return _cache[key]
    with _lock:
        if key not in _cache:
            rows = training_rows()
            if not rows:
                _cache[key] = None
            else:
                texts = [row_text(row) for row in rows]
                labels = np.array([row["label"] == "attack" for row in rows], dtype=int)
                _cache[key] = _fitted(embedder, texts, labels)
    return _cache[key]


def _fitted(embedder: Any, texts: list[str], labels: np.ndarray) -> ScreenModel:
    """The model fitted on these examples, kept under ``$ULTRON_DATA_DIR/cache`` keyed by the
    examples, their labels, the embedding model, the regularisation and scikit-learn's version:
    fitting takes ~15 s on two cores, and every process (each web worker, each test worker) needs it."""
    import sklearn

    digest = hashlib.sha256("\x1e".join([*texts, labels.tobytes().hex(), str(REGULARISATION_C), sklearn.__version__,
                                         embedder.provider, embedder.model]).encode()).hexdigest()[:16]
    path = Path(settings.ULTRON_DATA_DIR) / "cache" / f"screen-model-{digest}.pickle"
    try:
        with path.open("rb") as handle:
            found = pickle.load(handle)  # noqa: S301 - the hub's own file, written below
        if isinstance(found, ScreenModel):
            return found
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ValueError):
        pass
    model = screen_model_fit(texts, labels, _prototype_vectors(embedder, texts, kind="screen-examples"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".pickle", delete=False) as written:
            pickle.dump(model, written)
        os.replace(written.name, path)
    except OSError:  # a read-only data directory costs time, not correctness
        pass
    return model
