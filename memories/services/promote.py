"""Promoting a memory: a copy of it in another space, for a curator of both.

A team's lesson that another team (or the whole hub, in ``shared``) should have is copied, not
moved: the new memory goes through the upload funnel in the target space (validation and
redaction again, the target's own duplicate check, classification kept from the source), and
its provenance says where it came from. The source stays in its space, unchanged."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from agents.models import Role, Space
from agents.scoping import in_space
from agents.selectors import space_access
from core.errors import FORBIDDEN, INVALID, NOT_FOUND, ApplicationError
from memories.models import Memory, Source
from memories.services.upload import UploadResult, memory_upload


class PromoteError(ApplicationError):
    """A promotion the hub refuses (the person does not curate both spaces, same space, …)."""


def memory_promote(*, memory_id: Any, target: Space, user: Any) -> UploadResult:
    """Copy memory ``memory_id`` (its text, type and tags) into space ``target`` as a new
    upload by the curator ``user``, who must curate both the memory's space and ``target``.
    A memory of a space the person does not curate is missing (``not_found``), as if it never
    existed; a target they do not curate is refused (``permission_denied``). When the target
    already holds the same memory, the copy merges into it (``UploadResult.merged``)."""
    access = space_access(user=user)
    curated = access.ids(Role.CURATOR)
    source = (Memory.objects.filter(pk=memory_id, space_id__in=curated).select_related("space")
              .only("pk", "content", "context", "resolution", "tags", "memory_type", "space__slug").first())
    if source is None:
        raise PromoteError(f"No memory {memory_id} that you curate.", code=NOT_FOUND)
    if not access.can(target.pk, Role.CURATOR):
        raise PromoteError(f"You do not curate space {target.slug!r}.", code=FORBIDDEN, field="space")
    if target.pk == source.space_id:
        raise PromoteError(f"The memory is already in space {target.slug!r}.", code=INVALID, field="space")
    provenance = {"promoted_from": {"space": source.space.slug, "memory": str(source.pk),
                                    "by": user.get_username(), "at": timezone.now().isoformat()}}
    # The target's own scope: its rows are read (the duplicate check) and written, whatever
    # spaces the caller's request had open.
    with in_space(target.pk):
        return memory_upload(content=source.content, context=source.context, resolution=source.resolution,
                             tags=list(source.tags), memory_type=source.memory_type, source=Source.CURATOR,
                             provenance=provenance, space=target)
