"""Every read of the memory service, including the pgvector queries.

- ``space``: the stored embedding space;
- ``duplicates``: the neighbours a new text may duplicate, near-duplicate pairs;
- ``keywords``: the keyword side of search (lexemes, selective terms, tsquery);
- ``search``: ranked search in SQL;
- ``records``: details, lists, counts;
- ``context``: context assembly within a token budget;
- ``review``: what the merge-review page and the dashboard read.
"""

from memories.selectors.context import AssembledContext, ContextBlock, context_assemble
from memories.selectors.duplicates import memory_duplicate_neighbours, memory_pairs_near_duplicate
from memories.selectors.keywords import (
    QueryTerms,
    keyword_query,
    lexeme_counts_compact,
    query_terms,
    selective_terms,
)
from memories.selectors.records import (
    memories_superseded_by,
    memory_details,
    memory_history,
    memory_list,
    memory_page,
    memory_stats,
)
from memories.selectors.review import merge_candidates_open
from memories.selectors.search import SEARCH_MODES, SearchHit, memory_search, query_embedding_text
from memories.selectors.space import (
    embedding_calibration_get,
    embedding_column_dimensions,
    embedding_space_get,
)

__all__ = [
    "memories_superseded_by",
    "memory_history",
    "SEARCH_MODES",
    "AssembledContext",
    "ContextBlock",
    "SearchHit",
    "context_assemble",
    "embedding_calibration_get",
    "embedding_column_dimensions",
    "embedding_space_get",
    "keyword_query",
    "lexeme_counts_compact",
    "memory_details",
    "memory_duplicate_neighbours",
    "memory_list",
    "memory_page",
    "memory_pairs_near_duplicate",
    "merge_candidates_open",
    "memory_search",
    "memory_stats",
    "QueryTerms",
    "query_embedding_text",
    "query_terms",
    "selective_terms",
]
