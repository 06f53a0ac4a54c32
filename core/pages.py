"""One page of a longer list, the way every list endpoint pages: an offset, a limit and the count
of everything that matched. Selectors build pages (they own the query); views serialize them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    count: int  # every row the filters match, not just this page's
    items: list[T]


def page_of(queryset: Any, *, offset: int, limit: int) -> Page:
    """Rows ``offset`` to ``offset + limit`` of an ordered queryset, with the total count."""
    return Page(count=queryset.count(), items=list(queryset[offset : offset + limit]))
