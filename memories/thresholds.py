"""Similarity thresholds belong to the embedding space.

Two texts that mean the same thing sit at a different cosine similarity under different
models (MiniLM's similarities run lower than a 1024-dimension hosted model's for the same
relatedness), so one constant cannot serve every model. The values in force, highest
precedence first:

1. the environment, one value at a time (``ULTRON_DUPLICATE_THRESHOLD``,
   ``ULTRON_DUPLICATE_SOFT_THRESHOLD``, ``ULTRON_CLUSTER_SIMILARITY_THRESHOLD``,
   ``ULTRON_CLUSTER_MERGE_THRESHOLD``, ``ULTRON_SEGMENT_SHIFT_THRESHOLD``,
   ``ULTRON_SEARCH_RELEVANCE_FLOOR``);
2. what ``manage.py calibrate`` measured and stored for the configured embedding space
   (provider, model, dimensions, text format: ``memories.models.EmbeddingCalibration``);
3. the model's row in the table below;
4. ``FALLBACK``, strict values for a model nobody measured.

The values:

- ``duplicate``: at or above it, with no conflicting details, an upload merges into the
  memory it duplicates automatically. Chosen for precision (a wrong merge hides a memory).
- ``soft``: from here up to ``duplicate`` (and above it when details conflict) the pair is a
  *merge candidate*: the LLM judges it when one is configured, a curator otherwise. Chosen for
  recall (a duplicate below it is stored twice).
- ``cluster``: a memory joins the nearest cluster whose centroid is at least this similar;
- ``cluster_merge``: two clusters whose centroids are at least this similar are one topic
  (the pipeline's repair merges them). Centroids average their members' noise away, so two
  halves of one topic sit closer than a member to its centroid: this is the higher value.
- ``shift``: the offline segmenter starts a new task where a user turn is less similar than
  this to the goals of the current one.
- ``floor``: search drops a memory less similar than this to the query unless a keyword
  match supports it, so a query about nothing in the hub answers nothing. Chosen for recall
  (losing the obvious match is worse than listing a weak one); -1 is no floor.

``memories.calibration`` holds the rules that fit them (``manage.py calibrate`` prints what each
value is expected to give on every labelled set); ``bench/dedup.py`` and
``bench/clusters.py --topics`` measure them end to end.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class ModelThresholds:
    duplicate: float
    soft: float
    cluster: float
    cluster_merge: float
    shift: float
    floor: float
    calibration: str  # where the values come from


#: The fitted values, by name (what ``manage.py calibrate`` stores).
VALUES = ("duplicate", "soft", "cluster", "cluster_merge", "shift", "floor")
# The setting that overrides each value.
OVERRIDES = {
    "duplicate": "ULTRON_DUPLICATE_THRESHOLD",
    "soft": "ULTRON_DUPLICATE_SOFT_THRESHOLD",
    "cluster": "ULTRON_CLUSTER_SIMILARITY_THRESHOLD",
    "cluster_merge": "ULTRON_CLUSTER_MERGE_THRESHOLD",
    "shift": "ULTRON_SEGMENT_SHIFT_THRESHOLD",
    "floor": "ULTRON_SEARCH_RELEVANCE_FLOOR",
}
NO_FLOOR = -1.0

MODEL_THRESHOLDS: dict[str, ModelThresholds] = {
    # Measured by bench/dedup.py and bench/clusters.py (see bench/README.md); manage.py calibrate
    # on this model lands near them (README: "Switching the embedding model").
    "all-MiniLM-L6-v2": ModelThresholds(
        duplicate=0.92, soft=0.70, cluster=0.55, cluster_merge=0.75, shift=0.55, floor=0.20,
        calibration="bench/dedup.py (STS dev+test, hard negatives, session and LoCoMo pairs), "
                    "bench/clusters.py --topics, manage.py calibrate (segmentation, relevance floor)",
    ),
    # Not measured here (no network in the bench): the values of the system the hub
    # re-implements, which used this model. Run `manage.py calibrate` against it before relying on them.
    "text-embedding-v4": ModelThresholds(
        duplicate=0.85, soft=0.75, cluster=0.75, cluster_merge=0.85, shift=0.75, floor=NO_FLOOR,
        calibration="uncalibrated: the original system's values",
    ),
}
# A model missing from the table gets strict values: few automatic merges, more candidates, no
# relevance floor (nothing relevant is dropped) until `manage.py calibrate` has measured it.
FALLBACK = ModelThresholds(duplicate=0.95, soft=0.75, cluster=0.70, cluster_merge=0.85, shift=0.70,
                           floor=NO_FLOOR, calibration="fallback for unknown models")

# The stored calibration, per process and embedding space, read again after this many seconds
# (so a running hub follows `manage.py calibrate` within a minute, at one small query a minute).
STORED_TTL_SECONDS = 60.0
_stored: dict[tuple, tuple[float, dict[str, Any] | None]] = {}
_stored_lock = threading.Lock()


def thresholds_forget() -> None:
    """Drop this process's copy of the stored calibrations (after storing one; tests)."""
    with _stored_lock:
        _stored.clear()


def _stored_calibration(space: tuple[str, str, int, int]) -> dict[str, Any] | None:
    """``{"values": {...}, "calibrated_at": datetime}`` stored for ``space``, or None."""
    now = time.monotonic()
    with _stored_lock:
        cached = _stored.get(space)
    if cached is not None and now - cached[0] < STORED_TTL_SECONDS:
        return cached[1]
    from django.db import ProgrammingError, transaction
    from psycopg.errors import UndefinedTable

    from memories.selectors.space import embedding_calibration_get

    try:
        with transaction.atomic():  # a savepoint: a missing table must not spoil the caller's transaction
            row = embedding_calibration_get(*space)
    except ProgrammingError as exc:
        # A database not migrated yet (a bench reading a fresh hub, a command run before `migrate`): nothing stored.
        if not isinstance(exc.__cause__, UndefinedTable):
            raise
        row = None
    found = {"values": dict(row.values), "calibrated_at": row.calibrated_at} if row is not None else None
    with _stored_lock:
        _stored[space] = (now, found)
    return found


def configured_space_key() -> tuple[str, str, int, int]:
    """The configured embedding space: provider, model, dimensions, text format."""
    from memories.providers.embeddings import get_embedder
    from memories.text import EMBEDDING_TEXT_FORMAT

    embedder = get_embedder()
    return embedder.provider, embedder.model, embedder.dimensions, EMBEDDING_TEXT_FORMAT


def model_thresholds(model: str | None = None) -> ModelThresholds:
    """The thresholds in force. Without ``model``: the configured embedding space's — its stored
    calibration over its model's row; with it: that model's row. Any value set in the
    environment takes precedence either way."""
    row: ModelThresholds
    if model is None:
        space = configured_space_key()
        model = space[1]
        row = MODEL_THRESHOLDS.get(model, FALLBACK)
        stored = _stored_calibration(space)
        if stored is not None:
            known = {name: float(value) for name, value in stored["values"].items() if name in VALUES}
            row = replace(row, **known,
                          calibration=f"manage.py calibrate, {stored['calibrated_at']:%Y-%m-%d %H:%M} UTC")
    else:
        row = MODEL_THRESHOLDS.get(model, FALLBACK)
    overridden = {name: getattr(settings, setting) for name, setting in OVERRIDES.items()
                  if getattr(settings, setting) is not None}
    chosen = replace(row, **overridden) if overridden else row
    # Soft above duplicate would end duplicate_decide's search (below soft: stop) before pairs the
    # duplicate threshold should merge.
    if chosen.soft > chosen.duplicate:
        raise ImproperlyConfigured(
            f"The duplicate soft threshold ({chosen.soft}) must not exceed the duplicate threshold "
            f"({chosen.duplicate}) for {model}: check ULTRON_DUPLICATE_SOFT_THRESHOLD and "
            "ULTRON_DUPLICATE_THRESHOLD, or run `manage.py calibrate` again."
        )
    return chosen

