"""Per-token API rate limit, shared by every web process (``ULTRON_API_RATE``).

DRF's stock throttles keep their history in Django's cache, which is per process here: with
four gunicorn workers on two hosts an agent would get eight times its limit. This one counts
in PostgreSQL instead, with a single upsert per request: a fixed window (a minute for
``N/min``) whose counter starts again when the window changes. An agent over its limit gets
429 with ``Retry-After`` set to the seconds left in the window. A fixed window lets a client
send up to twice the rate across a window boundary; that is the usual price for one statement.
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.db import connection
from rest_framework.throttling import BaseThrottle

from ultron_site.models import RateWindow
from ultron_site.rates import parse_rate

_UPSERT = f"""
    INSERT INTO {RateWindow._meta.db_table} (key, "window", count) VALUES (%s, %s, 1)
    ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN {RateWindow._meta.db_table}."window" = EXCLUDED."window"
                     THEN {RateWindow._meta.db_table}.count + 1 ELSE 1 END,
        "window" = EXCLUDED."window"
    RETURNING count
"""


class TokenRateThrottle(BaseThrottle):
    """Counts each API token (an agent with two tokens has two budgets); requests without a
    token never reach here (authentication refuses them first)."""

    def __init__(self) -> None:
        self.wait_seconds: float | None = None

    def allow_request(self, request, view) -> bool:
        limit = parse_rate(settings.ULTRON_API_RATE)
        token = getattr(request, "auth", None)
        if limit is None or token is None or not getattr(token, "pk", None):
            return True
        allowed, period = limit
        now = time.time()
        window = int(now // period)
        with connection.cursor() as cursor:
            cursor.execute(_UPSERT, [f"token:{token.pk}", window])
            (count,) = cursor.fetchone()
        if count <= allowed:
            return True
        self.wait_seconds = (window + 1) * period - now
        return False

    def wait(self) -> float | None:
        # Retry-After in whole seconds and never 0: a client told 0 would come straight back.
        return None if self.wait_seconds is None else max(1, math.ceil(self.wait_seconds))
