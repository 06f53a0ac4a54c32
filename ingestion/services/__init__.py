"""Every write of the ingestion service.

- ``accept``: sessions arriving (uploaded files or server paths), the raw archive;
- ``text``: plain text turned into memories while the caller waits;
- ``work``: claiming pipeline items with a lease, retries with backoff, parking;
- ``pipeline``: the steps over sessions — segmentation, scoring, extraction.
"""

from ingestion.services.accept import (
    FileResult,
    IngestError,
    acting_agent,
    files_ingest,
    paths_collect,
    paths_ingest,
    raw_archive,
    raw_bytes,
    session_ingest,
    text_uploads,
    uploads_check,
    uploads_ingest,
)
from ingestion.services.pipeline import (
    segment_extract,
    segment_score,
    segments_extract,
    segments_score,
    session_process,
    session_segment,
    sessions_segment,
)
from ingestion.services.text import TextIngestResult, text_ingest

__all__ = [
    "FileResult",
    "IngestError",
    "TextIngestResult",
    "acting_agent",
    "files_ingest",
    "paths_collect",
    "paths_ingest",
    "raw_archive",
    "raw_bytes",
    "segment_extract",
    "segment_score",
    "segments_extract",
    "segments_score",
    "session_ingest",
    "session_process",
    "session_segment",
    "sessions_segment",
    "text_ingest",
    "text_uploads",
    "uploads_check",
    "uploads_ingest",
]
