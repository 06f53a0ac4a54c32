"""One provider instance per process and configuration."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class ProviderCache(Generic[T]):
    """Builds a provider the first time a configuration (``key``) is asked for and hands out the
    same instance afterwards, so a model is loaded once per process; a changed setting (tests
    switch providers through settings) gives a new key and a new instance."""

    def __init__(self) -> None:
        self._items: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = build()
                self._items[key] = item
            return item

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
