"""Strict readers for settings taken from the environment.

Every setting of the hub comes from an environment variable. A value that cannot be parsed
stops start-up with ``ImproperlyConfigured`` naming the variable, instead of silently falling
back to a default.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None:
        return None
    value = value.strip()
    return value if value != "" else None


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true/false).")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        result = default
    else:
        try:
            result = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    _check_range(name, result, minimum, maximum)
    return result


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _raw(name)
    if value is None:
        result = default
    else:
        try:
            result = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
        if result != result or result in (float("inf"), float("-inf")):
            raise ImproperlyConfigured(f"{name}={value!r} is not a finite number.")
    _check_range(name, result, minimum, maximum)
    return result


def env_choice(name: str, default: str, choices: Iterable[str]) -> str:
    allowed = tuple(choices)
    value = env_str(name, default).lower()
    if value not in allowed:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(allowed)}.")
    return value


def env_list(name: str, default: Iterable[str] = ()) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def _check_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}.")
