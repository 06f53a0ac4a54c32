"""Migration operations for tables that hold a space's data."""

from __future__ import annotations

from django.db import migrations, models

from agents.models import shared_space_id
from core.spaces import rls_disable_sql, rls_enable_sql, space_column_drop_sql, space_column_sql


def space_field(model_name: str, table: str, *, constraint: bool = True) -> migrations.SeparateDatabaseAndState:
    """Give ``model_name`` (table ``table``) its ``space``, every existing row in ``shared``, and
    row-level security (``core.spaces.space_column_sql`` and ``rls_enable_sql``)."""
    field: models.ForeignKey = models.ForeignKey("agents.Space", on_delete=models.PROTECT if constraint else models.DO_NOTHING,
                              db_constraint=constraint, related_name="+", default=shared_space_id)
    return migrations.SeparateDatabaseAndState(
        database_operations=[migrations.RunSQL(
            space_column_sql(table, constraint=constraint) + rls_enable_sql(table),
            rls_disable_sql(table) + space_column_drop_sql(table),
        )],
        state_operations=[migrations.AddField(model_name=model_name, name="space", field=field)],
    )
