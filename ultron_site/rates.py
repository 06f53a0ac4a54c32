"""The rate syntax of ``ULTRON_API_RATE``: ``N/s``, ``N/min``, ``N/hour`` or ``N/day``, or
``0`` for no limit. Plain Python, so the settings check it at start-up with the same rule the
throttle (``ultron_site.throttle``) applies per request."""

from __future__ import annotations

import re

_RATE = re.compile(r"(\d+)/(s|sec|second|m|min|minute|h|hour|d|day)")
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int] | None:
    """``"6000/min"`` → (6000, 60); an empty rate or ``"0"`` turns the limit off (None)."""
    rate = rate.strip()
    if rate in ("", "0", "off", "none"):
        return None
    found = _RATE.fullmatch(rate)
    if found is None:
        raise ValueError(f"rate {rate!r}: write it as N/s, N/min, N/hour or N/day, or 0 for no limit")
    return int(found.group(1)), _PERIODS[found.group(2)[0]]
