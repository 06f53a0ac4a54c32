"""Calibrating the configured embedding space: every threshold fitted on the labelled sets
(``memories.calibration``) and stored for the space, where ``model_thresholds()`` reads it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memories.calibration import Calibration, calibration_fit
from memories.models import EmbeddingCalibration
from memories.providers.embeddings import get_embedder
from memories.thresholds import configured_space_key, thresholds_forget


@dataclass(frozen=True)
class CalibrationOutcome:
    calibration: Calibration
    space: tuple[str, str, int, int]  # provider, model, dimensions, text format
    stored: bool


def embedding_space_calibrate(*, store: bool = True) -> CalibrationOutcome:
    """Fit every threshold with the configured embedder; with ``store``, keep the values for the
    configured embedding space (replacing an earlier calibration of it). Nothing else changes:
    stored vectors, clusters and segments stay as they are, and later decisions use the values."""
    space = configured_space_key()
    calibration = calibration_fit(get_embedder().embed)
    if store:
        provider, model, dimensions, text_format = space
        with transaction.atomic():
            EmbeddingCalibration.objects.update_or_create(
                provider=provider, model=model, dimensions=dimensions, text_format=text_format,
                defaults={"values": calibration.values(), "report": calibration.report(),
                          "calibrated_at": timezone.now()},
            )
        thresholds_forget()
    return CalibrationOutcome(calibration, space, store)
