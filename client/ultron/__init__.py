"""Ultron Hub's Python client: ``from ultron import Ultron``.

    ultron = Ultron()            # ULTRON_URL / ULTRON_TOKEN, or what `ultron login` stored
    record = ultron.upload_memory(content="...", context="...", resolution="...", tags=["python"])
    for r in ultron.search_memories("python import error", limit=5):
        print(r.record.memory_type, r.record.summary_l0, r.similarity_score)

    team = Ultron(space="team-a")  # writes go to team-a; reads cover every space the token reads
"""

from ultron.client import AsyncUltron, Ultron, __version__
from ultron.errors import (
    APIError,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
    ServerError,
    UltronConnectionError,
    UltronError,
    UsageError,
    WaitTimeout,
)
from ultron.models import (
    BatchItem,
    Context,
    ContextEntry,
    Feedback,
    Health,
    IngestFile,
    IngestResult,
    JobFile,
    JobProgress,
    MemoryList,
    MemoryRecord,
    SearchResult,
    Skill,
    Space,
    Stats,
    TextIngestResult,
    UploadResult,
)

__all__ = [
    "APIError", "AsyncUltron", "AuthenticationError", "BatchItem", "Context", "ContextEntry", "Feedback", "Health",
    "IngestFile", "IngestResult", "InvalidRequestError", "JobFile", "JobProgress", "MemoryList", "MemoryRecord",
    "NotFoundError", "PermissionDeniedError", "RateLimitError", "RequestTooLargeError", "SearchResult",
    "ServerError", "Skill", "Space", "Stats", "TextIngestResult", "Ultron", "UltronConnectionError", "UltronError",
    "UploadResult", "UsageError", "WaitTimeout", "__version__",
]
