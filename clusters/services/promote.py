"""Promoting a published skill: a copy of it in another space, for a curator of both.

As with a memory (``memories.services.promote``), the copy is made on purpose and says where it
came from; the original stays in its space, unchanged. The copy is published in the target
space at once (the curator who promotes it curates that space: the promotion is their approval)
and cites no memories: those of the source space stay there, unreadable from the target.
Promoting the same skill again adds the source's current text as the copy's next version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.models import Role, Space
from agents.scoping import in_space
from agents.selectors import space_access
from clusters.models import Skill, SkillStatus, SkillVersion
from core.errors import FORBIDDEN, INVALID, NOT_FOUND, ApplicationError


class SkillPromoteError(ApplicationError):
    """A promotion the hub refuses (not a curator of both spaces, not published, a slug taken)."""


@dataclass(frozen=True)
class SkillPromoted:
    skill: Skill
    version: SkillVersion
    created: bool  # False: a copy promoted before gained a version


def skill_promote(*, skill_id: int, target: Space, user: Any) -> SkillPromoted:
    """Copy published skill ``skill_id`` into space ``target`` (same slug) as a published skill
    whose provenance names the source space, skill, version, curator and time. A skill of a
    space the person does not curate is missing (``not_found``); a target they do not curate is
    refused (``permission_denied``); a draft, or a slug the target uses for a skill of its own,
    is ``invalid``."""
    access = space_access(user=user)
    source = (Skill.objects.filter(pk=skill_id, space_id__in=access.ids(Role.CURATOR))
              .select_related("space", "current_version").first())
    if source is None:
        raise SkillPromoteError(f"No skill {skill_id} that you curate.", code=NOT_FOUND)
    if not access.can(target.pk, Role.CURATOR):
        raise SkillPromoteError(f"You do not curate space {target.slug!r}.", code=FORBIDDEN, field="space")
    if target.pk == source.space_id:
        raise SkillPromoteError(f"The skill is already in space {target.slug!r}.", code=INVALID, field="space")
    current = source.current_version
    if source.status != SkillStatus.PUBLISHED or current is None:
        raise SkillPromoteError(f"Skill {source.slug!r} is not published: publish it before promoting it.",
                                code=INVALID)
    origin = {"space": source.space.slug, "skill": source.slug, "version": current.version,
              "by": user.get_username(), "at": timezone.now().isoformat()}
    # The target's own scope: the copy is read and written there, whatever the request had open.
    with in_space(target.pk), transaction.atomic():
        copy = Skill.objects.select_for_update().filter(space=target, slug=source.slug).first()
        created = copy is None
        if copy is None:
            copy = Skill.objects.create(space=target, slug=source.slug, name=current.name,
                                        description=current.description, embedding=source.embedding)
        else:
            before = (copy.provenance or {}).get("promoted_from", {})
            if (before.get("space"), before.get("skill")) != (source.space.slug, source.slug):
                raise SkillPromoteError(f"Space {target.slug!r} already has a skill {source.slug!r} of its own.",
                                        code=INVALID, field="space")
        number = (copy.versions.order_by("-version").values_list("version", flat=True).first() or 0) + 1
        copy.versions.filter(status=SkillStatus.PUBLISHED).update(status=SkillStatus.SUPERSEDED)
        version = SkillVersion.objects.create(
            space=target, skill=copy, version=number, name=current.name, description=current.description,
            body=current.body, memory_ids=[], quality=current.quality, verification=current.verification,
            score=current.score, status=SkillStatus.PUBLISHED, author=user.get_username(),
            reason=f"promoted from space {source.space.slug} (skill {source.slug} v{current.version}) "
                   f"by {user.get_username()}")
        copy.current_version = version
        copy.status = SkillStatus.PUBLISHED
        copy.name, copy.description, copy.embedding = current.name, current.description, source.embedding
        copy.provenance = {"promoted_from": origin}
        copy.save()
    return SkillPromoted(skill=copy, version=version, created=created)
