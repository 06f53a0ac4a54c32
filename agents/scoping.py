"""Which spaces a request or a task works in: the caller's memberships turned into the
database scope of ``core/spaces.py`` (the second wall), and the space a write goes to."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

from django.db import connection
from rest_framework import permissions
from rest_framework.exceptions import PermissionDenied, ValidationError

from agents.models import Role, Space
from agents.selectors import SpaceAccess, space_access
from core.spaces import Scope, maintenance, scope_enter, space_scope

logger = logging.getLogger("ultron.spaces")


class SpaceScope(permissions.BasePermission):
    """Every API view's last permission: the caller's spaces (``request.space_access``) and the
    database scope for the rest of the request — rows of the spaces it reads, inserts into the
    spaces it writes. The request middleware (``ultron_site.middleware.SpaceScopeMiddleware``)
    ends the scope with the request."""

    def has_permission(self, request, view) -> bool:
        access = space_access(user=request.user)
        request.space_access = access
        scope_enter(read=access.ids(Role.READER), write=access.ids(Role.WRITER))
        return True


def api_access(request) -> SpaceAccess:
    access = getattr(request, "space_access", None)
    if access is None:  # a view that replaced the default permissions without SpaceScope
        raise PermissionDenied("This endpoint is not scoped to spaces.")
    return access


def read_ids(access: SpaceAccess, slugs: list[str] | None) -> list[int]:
    """The spaces a read covers: all the caller may read, or the named ones among them. A slug
    the caller may not read is refused like one that does not exist."""
    if not slugs:
        return access.ids(Role.READER)
    ids, unknown = access.slug_ids(slugs, Role.READER)
    if unknown:
        raise PermissionDenied(f"No space {', '.join(repr(s) for s in unknown)} that you may read.")
    return ids


MAX_SPACES = 50


# One ``spaces`` value: slugs separated by commas (``core.api_schema.SPACES_PARAM`` declares the same).
_SLUGS_RE = re.compile(r"[-a-zA-Z0-9_]{1,50}(?:,[-a-zA-Z0-9_]{1,50}){0,49}")


def query_read_ids(request) -> list[int]:
    """The spaces a GET covers: ``?spaces=`` (repeated, or slugs separated by commas; documented
    by ``core.api_schema.SPACES_PARAM``) among those the caller reads, or all of them."""
    values = request.query_params.getlist("spaces")
    if len(values) > MAX_SPACES or not all(_SLUGS_RE.fullmatch(value) for value in values):
        raise ValidationError({"spaces": [f"at most {MAX_SPACES} values, each up to {MAX_SPACES} space slugs "
                                          "(letters, digits, - and _, at most 50 characters) separated by commas"]})
    slugs = list(dict.fromkeys(slug for value in values for slug in value.split(",")))
    return read_ids(api_access(request), slugs or None)


def write_space(access: SpaceAccess, *, slug: str | None, default: Space | None) -> Space:
    """The space a write goes to: ``slug`` if given, else ``default`` (the agent's); refused
    (403, naming the space) unless the caller holds ``writer`` or more there."""
    if slug:
        ids, _ = access.slug_ids([slug], Role.WRITER)
        if not ids:
            raise PermissionDenied(f"You may not write to space {slug!r} (or it does not exist).")
        return Space.objects.get(pk=ids[0])
    if default is None or not access.can(default.pk, Role.WRITER):
        raise PermissionDenied("No space to write to: name one with 'space' (GET /api/spaces lists yours).")
    return default


def api_agent(request):
    """The calling agent (None for a person's session)."""
    return getattr(request.user, "agent", None)


def api_write_target(request, slug: str | None) -> tuple[Any, Space]:
    """The calling agent and the space its write goes to: ``slug`` if named, else the agent's
    default space (``write_space`` refuses either where the caller may not write)."""
    agent = api_agent(request)
    return agent, write_space(api_access(request), slug=slug or None, default=agent.default_space if agent else None)


def api_slugs(request) -> dict[int, str]:
    """Space ids to slugs for the caller's spaces (every result it is shown comes from one)."""
    return api_access(request).slugs


@contextlib.contextmanager
def in_space(space_id: int) -> Iterator[Scope]:
    """One space's work (a pipeline step, a task): read and write that space only."""
    with space_scope(read=[space_id], write=[space_id]) as scope:
        yield scope


def space_of(table: str, pk: Any) -> int | None:
    """The space of row ``pk`` of ``table``, read past the policies (a task knows a row's id and
    must open that row's space to load it)."""
    with maintenance(), connection.cursor() as cursor:
        cursor.execute(f"SELECT space_id FROM {table} WHERE id = %s", [pk])  # noqa: S608 - table names are ours
        row = cursor.fetchone()
    return row[0] if row else None


def in_space_of(table: str, pk: Any) -> contextlib.AbstractContextManager[Any]:
    """The scope of the space row ``pk`` of ``table`` is in (nothing, if the row is gone)."""
    space_id = space_of(table, pk)
    return in_space(space_id) if space_id is not None else space_scope(read=[])


def each_space(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``work`` once in each space (its own scope) and add up the counts it returns. A
    space whose run raises is logged and named in ``failed_spaces``; the others go on. Raises
    only when every space failed (the step as a whole did not run)."""
    totals: dict[str, Any] = {}
    failed: dict[str, str] = {}
    spaces = list(Space.objects.order_by("pk").values_list("pk", "slug"))
    for space_id, slug in spaces:
        try:
            with in_space(space_id):
                result = work() or {}
        except Exception as exc:
            if len(spaces) == 1:  # a hub of one space: the step failed, as it always did
                raise
            logger.exception("space %s: step failed", slug)
            failed[slug] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        for key, value in result.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
            else:
                totals.setdefault(key, value)
    if failed:
        if len(failed) == len(spaces):
            raise RuntimeError("; ".join(f"{slug}: {error}" for slug, error in failed.items()))
        totals["failed_spaces"] = failed
    return totals
