"""django-q2 tasks of the ingestion service: load by id, call the service."""

from __future__ import annotations

from typing import Any

from ingestion import services


def session_process_task(session_id: int) -> dict[str, Any]:
    return services.session_process(session_id=session_id)


def segmentation_step() -> dict[str, int]:
    return services.sessions_segment()


def scoring_step() -> dict[str, int]:
    return services.segments_score()


def extraction_step() -> dict[str, int]:
    return services.segments_extract()
