"""Reads of agents, spaces and what a user may do in each."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, QuerySet

from agents.models import SHARED_SPACE, Agent, Membership, Role, Space, role_at_least


def agent_by_name(*, name: str) -> Agent | None:
    return Agent.objects.select_related("user").filter(name=name).first()


def space_by_slug(*, slug: str) -> Space | None:
    return Space.objects.filter(slug=slug).first()


def space_shared() -> Space | None:
    """The space every hub starts with (migration ``agents.0003_spaces``)."""
    return space_by_slug(slug=SHARED_SPACE)


def space_or_shared(space: Space | int | None) -> int:
    """The id of ``space``, or of the shared space when none is named (a hub that never made a
    second space, and internal callers that write where everything went before spaces)."""
    if space is None:
        shared = space_shared()
        if shared is None:
            raise RuntimeError("the hub has no space 'shared': run manage.py migrate")
        return shared.pk
    return space if isinstance(space, int) else space.pk


@dataclass(frozen=True)
class SpaceAccess:
    """A user's roles by space id; a hub-wide admin (superuser) is admin of every space."""

    roles: dict[int, str] = field(default_factory=dict)
    slugs: dict[int, str] = field(default_factory=dict)

    def ids(self, role: str = Role.READER) -> list[int]:
        """The spaces where the user holds ``role`` or more."""
        return sorted(i for i, held in self.roles.items() if role_at_least(held, role))

    def can(self, space_id: int | None, role: str) -> bool:
        return space_id is not None and space_id in self.roles and role_at_least(self.roles[space_id], role)

    def slug_ids(self, slugs: list[str], role: str = Role.READER) -> tuple[list[int], list[str]]:
        """The ids of ``slugs`` where the user holds ``role`` or more, and the slugs that are not
        such spaces (unknown and forbidden alike: a caller learns nothing of spaces not theirs)."""
        by_slug = {slug: i for i, slug in self.slugs.items() if self.can(i, role)}
        return [by_slug[s] for s in slugs if s in by_slug], [s for s in slugs if s not in by_slug]


def space_access(*, user) -> SpaceAccess:
    """What ``user`` may do where: two small queries, no cache (a membership removed takes
    effect on the next request)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return SpaceAccess()
    if user.is_superuser:
        spaces = dict(Space.objects.values_list("id", "slug"))
        return SpaceAccess({i: Role.ADMIN for i in spaces}, spaces)
    rows = Membership.objects.filter(user=user).values_list("space_id", "space__slug", "role")
    return SpaceAccess({i: role for i, _, role in rows}, {i: slug for i, slug, _ in rows})


def memberships_of(*, user) -> list[Membership]:
    return list(Membership.objects.filter(user=user).select_related("space"))


def members_of(*, space: Space) -> list[Membership]:
    return list(Membership.objects.filter(space=space).select_related("user", "user__agent"))


def spaces_listed(*, ids: list[int]) -> list[Space]:
    return list(Space.objects.filter(pk__in=ids).order_by("slug"))


def agents_of_spaces(*, space_ids: list[int]) -> QuerySet[Agent]:
    """The agents with a role in one of ``space_ids`` (what a person working in those spaces may
    see named: in a list's filter, as the owner of uploaded sessions), by name."""
    members = Membership.objects.filter(space_id__in=space_ids).values("user_id")
    return Agent.objects.filter(user_id__in=members).select_related("user").order_by("name")


def agents_within_spaces(*, space_ids: list[int]) -> QuerySet[Agent]:
    """The agents whose every role is in ``space_ids`` (at least one): those whose tokens an
    admin of these spaces manages. An agent that also works in a space they do not administer is
    that space's admins' (or a hub-wide admin's) to give tokens to: a token reads every space of
    its agent."""
    outside = Membership.objects.filter(user_id=OuterRef("user_id")).exclude(space_id__in=space_ids)
    return agents_of_spaces(space_ids=space_ids).exclude(Exists(outside))
