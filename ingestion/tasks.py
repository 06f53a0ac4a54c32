"""django-q2 tasks of the ingestion service: load by id, call the service."""

from __future__ import annotations

from typing import Any

from agents.scoping import in_space_of
from ingestion import services
from ingestion.models import SessionRecord


def session_process_task(session_id: int) -> dict[str, Any]:
    with in_space_of(SessionRecord._meta.db_table, session_id):  # the session's space, and only it
        return services.session_process(session_id=session_id)


def segmentation_step() -> dict[str, int]:
    return services.sessions_segment()


def scoring_step() -> dict[str, int]:
    return services.segments_score()


def extraction_step() -> dict[str, int]:
    return services.segments_extract()
