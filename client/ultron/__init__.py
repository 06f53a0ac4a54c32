"""Ultron Hub's Python client: ``from ultron import Ultron``.

    ultron = Ultron()            # ULTRON_URL / ULTRON_TOKEN, or what `ultron login` stored
    record = ultron.upload_memory(content="...", context="...", resolution="...", tags=["python"])
    for r in ultron.search_memories("python import error", limit=5):
        print(r.record.memory_type, r.record.summary_l0, r.similarity_score)

    team = Ultron(space="team-a")  # writes go to team-a; reads cover every space the token reads
"""

from typing import TYPE_CHECKING, Any

# The names are imported on first use (PEP 562): a hook that only reads its config and spool
# starts without loading httpx and asyncio (about 0.2 s per hook call).
_HOMES = {
    "ultron.client": ("AsyncUltron", "Ultron", "__version__"),
    "ultron.errors": ("APIError", "AuthenticationError", "InvalidRequestError", "NotFoundError",
                      "PermissionDeniedError", "RateLimitError", "RequestTooLargeError", "ServerError",
                      "UltronConnectionError", "UltronError", "UsageError", "WaitTimeout"),
    "ultron.models": ("BatchItem", "Context", "ContextEntry", "Feedback", "Health", "IngestFile", "IngestResult",
                      "JobFile", "JobProgress", "MemoryList", "MemoryRecord", "SearchResult", "Skill", "Space",
                      "Stats", "TextIngestResult", "UploadResult"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'ultron' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # what type checkers and editors see: the same names, imported eagerly
    from ultron.client import AsyncUltron, Ultron, __version__  # noqa: F401
    from ultron.errors import (  # noqa: F401
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
    from ultron.models import (  # noqa: F401
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
