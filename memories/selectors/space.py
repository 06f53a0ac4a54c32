"""The stored embedding space: the vector column's dimension and the recorded model."""

from __future__ import annotations

from django.db import connection

from memories.models import EmbeddingCalibration, EmbeddingSpace, Memory


def embedding_column_dimensions() -> int | None:
    """The dimension of the stored vector column, read from the catalog."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'",
            [Memory._meta.db_table],
        )
        row = cursor.fetchone()
    # atttypmod is -1 for a vector column without a fixed dimension.
    return int(row[0]) if row and row[0] and row[0] > 0 else None


def embedding_space_get() -> EmbeddingSpace | None:
    return EmbeddingSpace.objects.first()


def embedding_calibration_get(provider: str, model: str, dimensions: int, text_format: int) -> EmbeddingCalibration | None:
    """What ``manage.py calibrate`` stored for this embedding space, if it ran."""
    return EmbeddingCalibration.objects.filter(
        provider=provider, model=model, dimensions=dimensions, text_format=text_format,
    ).first()
