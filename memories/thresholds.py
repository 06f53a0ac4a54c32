"""Similarity thresholds belong to the embedding model.

Two texts that mean the same thing sit at a different cosine similarity under different
models (MiniLM's similarities run lower than a 1024-dimension hosted model's for the same
relatedness), so one constant cannot serve every model. This table holds each model's
defaults; the environment can override any of them (``ULTRON_DUPLICATE_THRESHOLD``,
``ULTRON_DUPLICATE_SOFT_THRESHOLD``, ``ULTRON_CLUSTER_SIMILARITY_THRESHOLD``,
``ULTRON_CLUSTER_MERGE_THRESHOLD``).

- ``duplicate``: at or above it, with no conflicting details, an upload merges into the
  memory it duplicates automatically. Chosen for precision (a wrong merge hides a memory).
- ``soft``: from here up to ``duplicate`` (and above it when details conflict) the pair is a
  *merge candidate*: the LLM judges it when one is configured, a curator otherwise.
- ``cluster``: a memory joins the nearest cluster whose centroid is at least this similar;
- ``cluster_merge``: two clusters whose centroids are at least this similar are one topic
  (the pipeline's repair merges them). Centroids average their members' noise away, so two
  halves of one topic sit closer than a member to its centroid: this is the higher value.

``bench/dedup.py`` and ``bench/clusters.py --topics`` measure a model's values on labelled
pairs and topics; re-run them when adding a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class ModelThresholds:
    duplicate: float
    soft: float
    cluster: float
    cluster_merge: float
    calibration: str  # where the values come from


MODEL_THRESHOLDS: dict[str, ModelThresholds] = {
    # Measured by bench/dedup.py and bench/clusters.py (see bench/README.md).
    "all-MiniLM-L6-v2": ModelThresholds(
        duplicate=0.92, soft=0.70, cluster=0.55, cluster_merge=0.75,
        calibration="bench/dedup.py (STS dev+test, hard negatives, session and LoCoMo pairs), "
                    "bench/clusters.py --topics",
    ),
    # Not measured here (no network in the bench): the values of the system the hub
    # re-implements, which used this model. Run the benches against it before relying on them.
    "text-embedding-v4": ModelThresholds(
        duplicate=0.85, soft=0.75, cluster=0.75, cluster_merge=0.85, calibration="uncalibrated: the original system's values",
    ),
}
# A model missing from the table gets strict values: few automatic merges, more candidates.
FALLBACK = ModelThresholds(duplicate=0.95, soft=0.75, cluster=0.70, cluster_merge=0.85, calibration="fallback for unknown models")


def model_thresholds(model: str | None = None) -> ModelThresholds:
    """The thresholds in force: the model's row (the configured embedding model by default),
    with any value set in the environment taking precedence."""
    if model is None:
        from memories.providers.embeddings import get_embedder

        model = get_embedder().model
    row = MODEL_THRESHOLDS.get(model, FALLBACK)
    duplicate = settings.ULTRON_DUPLICATE_THRESHOLD
    soft = settings.ULTRON_DUPLICATE_SOFT_THRESHOLD
    cluster = settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD
    cluster_merge = settings.ULTRON_CLUSTER_MERGE_THRESHOLD
    chosen = ModelThresholds(
        duplicate=row.duplicate if duplicate is None else duplicate,
        soft=row.soft if soft is None else soft,
        cluster=row.cluster if cluster is None else cluster,
        cluster_merge=row.cluster_merge if cluster_merge is None else cluster_merge,
        calibration=row.calibration,
    )
    # Soft above duplicate would end duplicate_decide's search (below soft: stop) before pairs the
    # duplicate threshold should merge.
    if chosen.soft > chosen.duplicate:
        raise ImproperlyConfigured(
            f"The duplicate soft threshold ({chosen.soft}) must not exceed the duplicate threshold "
            f"({chosen.duplicate}) for {model}: check ULTRON_DUPLICATE_SOFT_THRESHOLD and "
            "ULTRON_DUPLICATE_THRESHOLD."
        )
    return chosen
