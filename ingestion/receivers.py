"""How ingestion answers the memory service: receivers of ``memories.signals``, connected in
``IngestionConfig.ready()``."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from memories import signals


@receiver(signals.calibration_requested, dispatch_uid="ingestion.calibration_requested")
def calibration_requested(*, embed: Any, **_: Any) -> list:
    from ingestion.calibration import shift_threshold_fit

    return shift_threshold_fit(embed)
