"""Deleting a space with everything in it: an operator's decision, never a click.

A space's memories, contributions, merge candidates, edits, sessions, segments, raw archives
(and their spooled files), ingest jobs, clusters and skills go together, in one transaction, as
the tables' owner: either all of it is gone or none of it. The shared space is never deleted
(every row created without a space goes there). Agents whose writes defaulted to it get no
default space (their uploads must name one, or an admin gives them another); memberships go.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from django.apps import apps
from django.db import connection, transaction

from agents.models import SHARED_SPACE, Agent, Membership, Space
from agents.services import SpaceError
from core.spaces import maintenance

logger = logging.getLogger("ultron.spaces")


@dataclass
class SpaceContents:
    """What a space holds: rows per table (only tables with rows), and spooled archive files."""

    slug: str
    rows: dict[str, int] = field(default_factory=dict)
    spooled: list[str] = field(default_factory=list)
    members: int = 0

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def _space_models() -> list:
    """Every model holding a space's rows (a ``space`` foreign key), derived rows last: the
    keyword counts and ranks that triggers keep follow the memories deleted before them."""
    models = [m for m in apps.get_models() if m._meta.app_label != "agents"
              and any(f.name == "space" and f.is_relation and f.many_to_one for f in m._meta.get_fields())]
    return sorted(models, key=lambda m: (not m._meta.get_field("space").db_constraint, m._meta.db_table))


def space_contents(*, space: Space) -> SpaceContents:
    """What deleting ``space`` would remove."""
    from ingestion.models import RawUpload

    contents = SpaceContents(slug=space.slug, members=Membership.objects.filter(space=space).count())
    with maintenance(), connection.cursor() as cursor:
        for model in _space_models():
            table = model._meta.db_table
            cursor.execute(f"SELECT count(*) FROM {table} WHERE space_id = %s", [space.pk])
            count = int(cursor.fetchone()[0])
            if count:
                contents.rows[table] = count
        contents.spooled = [p for p in RawUpload.objects.filter(space=space).exclude(spool_path="")
                            .values_list("spool_path", flat=True)]
    return contents


def space_delete(*, space: Space) -> SpaceContents:
    """Delete ``space`` and everything in it; returns what was removed. Refuses the shared space."""
    if space.slug == SHARED_SPACE:
        raise SpaceError("the shared space cannot be deleted: every row created without a space goes there")
    contents = SpaceContents(slug=space.slug)
    with maintenance(), transaction.atomic(), connection.cursor() as cursor:
        contents = space_contents(space=space)
        # The foreign keys between a space's tables are checked at commit, when all are gone.
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for model in _space_models():
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE space_id = %s", [space.pk])
        # The triggers of the memories deleted above wrote the keyword counts' last pieces.
        for model in _space_models():
            if not model._meta.get_field("space").db_constraint:
                cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE space_id = %s", [space.pk])
        Agent.objects.filter(default_space=space).update(default_space=None)
        Membership.objects.filter(space=space).delete()
        Space.objects.filter(pk=space.pk).delete()
    for path in contents.spooled:  # after the commit: a rolled-back deletion keeps its files
        Path(path).unlink(missing_ok=True)
    logger.warning("space %s deleted: %d rows (%s), %d spooled files, %d memberships", contents.slug, contents.total,
                   ", ".join(f"{t} {n}" for t, n in contents.rows.items()) or "none", len(contents.spooled),
                   contents.members)
    return contents
