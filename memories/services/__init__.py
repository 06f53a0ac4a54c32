"""Every write of the memory service. API views, pages, tasks and commands call these
functions; none of them bypasses validation, redaction or the duplicate check.

- ``inputs``: validating and redacting a memory's fields;
- ``embedding_space``: the one embedding model every vector belongs to, re-embedding;
- ``calibration``: the embedding space's thresholds fitted on the labelled sets and stored;
- ``upload``: the upload funnel (dedup, contributions), one memory or a batch;
- ``merge``: LLM merges of contributions, summaries, consolidation of leftover pairs;
- ``uses``: agents' uses of memories (hits), buffered off the request path;
- ``tiers``: the HOT / WARM / COLD rebalance;
- ``lifecycle``: archive, restore, delete;
- ``promote``: a curator's copy of a memory into another space they curate;
- ``recall``: search, details and context for agents (they count hits);
- ``types``: types to confirm (unsure assignments), a curator's type changes and their undo;
- ``portable``: what an import of a portable export writes back (memories, contributions,
  merge candidates, as the file gives them): the import validates and redacts every line first,
  and keeps records as they were, without the duplicate check (docs/operations.md).
"""

from memories.services.calibration import CalibrationOutcome, embedding_space_calibrate
from memories.services.embedding_space import (
    EmbeddingSpaceMismatch,
    embed_texts,
    embedding_space_ensure,
    embedding_space_forget,
    memories_reembed,
)
from memories.services.inputs import (
    CleanMemory,
    MemoryInputError,
    memory_input_clean,
    memory_inputs_clean,
    tags_normalise,
)
from memories.services.lifecycle import memory_archive, memory_delete, memory_restore
from memories.services.merge import (
    memories_consolidate,
    memories_merge_retry,
    memory_merge_contributions,
    memory_summarize,
)
from memories.services.portable import (
    knowledge_change_import,
    memories_superseded_link,
    memory_contribution_import,
    memory_import,
    merge_candidate_import,
    type_change_import,
)
from memories.services.promote import PromoteError, memory_promote
from memories.services.recall import SearchOutcome, context_build, memories_read, memories_search
from memories.services.supersede import (
    ChangeError,
    changes_check,
    conflict_decide,
    conflict_llm_judge,
    memory_supersede,
    supersession_undo,
)
from memories.services.tiers import (
    RebalanceResult,
    tiers_rebalance,
)
from memories.services.types import (
    TypeChangeError,
    memory_type_set,
    memory_types_set,
    type_change_undo,
    type_review_decide,
    type_review_record,
)
from memories.services.upload import (
    UPLOAD_BATCH_MAX,
    UploadResult,
    memories_upload,
    memory_upload,
    upload_lock_register,
    upload_locks,
)
from memories.services.uses import memory_uses_record, uses_defer, uses_flush, uses_pending

__all__ = [
    "CalibrationOutcome",
    "UPLOAD_BATCH_MAX",
    "CleanMemory",
    "EmbeddingSpaceMismatch",
    "MemoryInputError",
    "PromoteError",
    "RebalanceResult",
    "SearchOutcome",
    "UploadResult",
    "context_build",
    "embed_texts",
    "embedding_space_calibrate",
    "embedding_space_ensure",
    "embedding_space_forget",
    "memories_consolidate",
    "memories_merge_retry",
    "memories_read",
    "memories_reembed",
    "memories_search",
    "memories_upload",
    "upload_lock_register",
    "upload_locks",
    "memory_archive",
    "memory_contribution_import",
    "memory_delete",
    "memory_uses_record",
    "uses_defer",
    "uses_flush",
    "uses_pending",
    "memory_import",
    "memory_input_clean",
    "memory_inputs_clean",
    "memory_merge_contributions",
    "memory_promote",
    "memory_supersede",
    "supersession_undo",
    "conflict_decide",
    "conflict_llm_judge",
    "changes_check",
    "ChangeError",
    "memory_restore",
    "memory_summarize",
    "memory_upload",
    "merge_candidate_import",
    "knowledge_change_import",
    "memories_superseded_link",
    "type_change_import",
    "tags_normalise",
    "TypeChangeError",
    "memory_type_set",
    "memory_types_set",
    "type_change_undo",
    "type_review_decide",
    "type_review_record",
    "tiers_rebalance",
]
