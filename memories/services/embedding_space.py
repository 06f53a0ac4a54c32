"""The embedding space: every stored vector comes from one model with one dimension.

The first upload adopts the configured embedder; later, a different configuration is refused
(``EmbeddingSpaceMismatch``) until ``manage.py reembed`` re-embeds every memory with it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import connection, transaction

from core import errors
from core.errors import ApplicationError
from memories import signals
from memories.models import EmbeddingSpace, Memory
from memories.providers.embeddings import get_embedder
from memories.selectors import embedding_column_dimensions
from memories.text import EMBEDDING_TEXT_FORMAT, embedding_text
from memories.vectors import vector_literal


class EmbeddingSpaceMismatch(ApplicationError):
    """The stored vectors are in another embedding space than the configured model's."""

    default_code = errors.EMBEDDING_UNAVAILABLE


_verified_space: tuple[str, str, int, int] | None = None
_SPACE_LOCK = int.from_bytes(hashlib.sha256(b"ultron:embedding-space").digest()[:8], "big", signed=True)


def configured_space() -> tuple[str, str, int, int]:
    """The embedding space this process embeds in: provider, model, dimensions, text format."""
    embedder = get_embedder()
    return embedder.provider, embedder.model, embedder.dimensions, EMBEDDING_TEXT_FORMAT


def embedding_space_forget() -> None:
    """Drop this process's memory of a verified embedding space (after external changes)."""
    global _verified_space
    _verified_space = None


def embedding_space_ensure() -> None:
    """Make sure stored vectors and the configured embedder agree; adopt the configuration
    while nothing is stored yet. Raises :class:`EmbeddingSpaceMismatch` otherwise."""
    global _verified_space
    wanted = configured_space()
    # Checked once per process and configuration: embed_texts runs on every upload and search.
    if _verified_space == wanted:
        return
    provider, model, dims, text_format = wanted
    with transaction.atomic():
        # One process at a time: on a fresh hub, a second process must not read "no space yet"
        # and then, once the first has adopted it and stored a memory, "memories but no space".
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SPACE_LOCK])
        space = EmbeddingSpace.objects.first()
        column_dims = embedding_column_dimensions()
        matches = space is not None and (space.provider, space.model, space.dimensions, space.text_format) == wanted
        if matches and column_dims == dims:
            _verified_space = wanted
            return
        if Memory.objects.exists():
            # Same model, older text format (format 1 embedded "<type>: " in front): no setting to restore, only
            # a re-embed helps.
            if space is not None and (space.provider, space.model, space.dimensions) == wanted[:3]:
                raise EmbeddingSpaceMismatch(
                    f"Stored memories were embedded in an older text format ({space.text_format}; this "
                    f"version embeds format {text_format}: a memory's body without its type). Run "
                    "`python manage.py reembed` once to re-embed them."
                )
            stored = f"{space.provider}:{space.model} ({space.dimensions} dims)" if space else f"{column_dims} dims"
            raise EmbeddingSpaceMismatch(
                f"Stored memories were embedded with {stored}, but the hub is configured for "
                f"{provider}:{model} ({dims} dims). Run `python manage.py reembed` to re-embed "
                "them with the configured model, or restore the previous embedding settings."
            )
        if column_dims != dims:
            _embedding_column_resize(dims)
        EmbeddingSpace.objects.all().delete()
        EmbeddingSpace.objects.create(provider=provider, model=model, dimensions=dims, text_format=text_format)
    _verified_space = wanted


# Vectors stay in their rows (migration memories.0027): a column made anew gets the type's default
# (out of line) unless told again.
EMBEDDING_INLINE_SQL = f"ALTER TABLE {Memory._meta.db_table} ALTER COLUMN embedding SET STORAGE MAIN"


def _embedding_indexes() -> list:
    return [index for index in Memory._meta.indexes if "embedding" in index.fields]


def _embedding_column_resize(dims: int) -> None:
    """Change the (empty) vector column's dimension, re-creating its HNSW indexes."""
    table = Memory._meta.db_table
    with connection.schema_editor() as editor:
        for index in _embedding_indexes():
            editor.remove_index(Memory, index)
        editor.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dims)}) USING NULL")
        editor.execute(EMBEDDING_INLINE_SQL)
        for index in _embedding_indexes():
            editor.add_index(Memory, index)
    signals.embedding_dimensions_changed.send(sender=Memory, dimensions=dims)


def embed_texts(texts: list[str]) -> list[list[float]]:
    embedding_space_ensure()
    return [list(map(float, row)) for row in get_embedder().embed(texts)]


def memories_reembed(*, batch_size: int = 256, progress: Any = None) -> int:
    """Re-embed every memory (active and archived) with the configured embedder and record
    the new embedding space. A new dimension is filled into a fresh column that replaces the
    old one at the end, all in one transaction: a failure leaves the old vectors in place."""
    global _verified_space
    provider, model, dims, text_format = configured_space()
    embedder = get_embedder()
    table = Memory._meta.db_table
    total = Memory.objects.count()
    done = 0
    with transaction.atomic(), connection.cursor() as cursor:
        resize = embedding_column_dimensions() != dims
        column = "embedding_reembed" if resize else "embedding"
        if resize:
            signals.embedding_dimensions_changed.send(sender=Memory, dimensions=dims)
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN {column} vector({int(dims)})")
        ids = list(Memory.objects.order_by("created_at", "pk").values_list("pk", flat=True))
        for start in range(0, len(ids), batch_size):
            rows = list(
                Memory.objects.filter(pk__in=ids[start : start + batch_size])
                .values_list("pk", "content", "context", "resolution")
            )
            vectors = embedder.embed([embedding_text(*row[1:]) for row in rows])
            cursor.executemany(
                f"UPDATE {table} SET {column} = %s::vector WHERE id = %s",
                [(vector_literal(vector), row[0])
                 for row, vector in zip(rows, vectors, strict=True)],
            )
            done += len(rows)
            if progress:
                progress(done, total)
        if resize:
            with connection.schema_editor() as editor:
                for index in _embedding_indexes():
                    editor.remove_index(Memory, index)
                editor.execute(f"ALTER TABLE {table} DROP COLUMN embedding")
                editor.execute(f"ALTER TABLE {table} RENAME COLUMN {column} TO embedding")
                editor.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET NOT NULL")
                editor.execute(EMBEDDING_INLINE_SQL)
                for index in _embedding_indexes():
                    editor.add_index(Memory, index)
        EmbeddingSpace.objects.all().delete()
        EmbeddingSpace.objects.create(provider=provider, model=model, dimensions=dims, text_format=text_format)
        _verified_space = (provider, model, dims, text_format)
        # Whatever else holds vectors of the old space (clusters, skills) rebuilds them now.
        signals.memories_reembedded.send(sender=Memory)
    return done
