"""Who is knocking at the admin site's door: the client's address behind a proxy, how a login
attempt is named in the log, and the one-time password's single use.

django-axes counts failed logins per account and per client address and locks either out for
``ULTRON_LOGIN_LOCKOUT_MINUTES`` after ``ULTRON_LOGIN_FAILURE_LIMIT`` failures; these are the
hub's answers to the questions axes asks through its ``AXES_*_CALLABLE`` settings.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

logger = logging.getLogger("ultron.logins")


def client_ip(request: HttpRequest) -> str | None:
    """The address the request came from. Behind ``ULTRON_TRUSTED_PROXIES`` proxies it is the
    address the outermost trusted proxy saw, read from the right end of X-Forwarded-For (a
    client can put anything at the left end, so that part is never believed); with none, the
    socket's peer (None without one). Unparseable values fall back to the peer address."""
    peer = request.META.get("REMOTE_ADDR") or None
    proxies = settings.ULTRON_TRUSTED_PROXIES
    if not proxies:
        return peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    # Fewer hops than trusted proxies: the header was not written by them all, so it is not believed.
    if len(hops) < proxies:
        return peer
    candidate = hops[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return peer


def attempt_name(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    """How a login attempt is named in the log: the account if it exists, else only the length
    of what was typed (people type passwords into the user name field), and the address. The
    password is never part of it."""
    typed = str((credentials or {}).get("username") or "")
    known = bool(typed) and get_user_model().objects.filter(username=typed).exists()
    who = f"user {typed!r}" if known else f"unknown user ({len(typed)} characters)"
    return f"{who} from {client_ip(request) or 'an unknown address'}"


def _axes_client_str(username: str, ip_address: str, user_agent: str, path_info: str, request: HttpRequest) -> str:
    return attempt_name(request, {"username": username})


class OneLoginBackend(ModelBackend):
    """Django's password check, except that a one-time password (printed by ``create_user``
    or ``ensure_admin``) opens exactly one session: after it has been used, logging in with it
    again fails, and a new one has to be issued (``manage.py reset_password NAME``)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            return None
        from ultron_site.models import FirstPassword

        first = FirstPassword.objects.filter(user_id=user.pk).only("password_hash", "used_at").first()
        # Only while the password is still the one-time one: a password the user chose works as usual.
        if first is not None and first.password_hash == user.password and first.used_at is not None:
            logger.warning("login refused: the one-time password of %r was already used", user.get_username())
            return None
        return user


@receiver(user_logged_in)
def _first_password_used(sender, request, user, **kwargs) -> None:
    from ultron_site.models import FirstPassword

    FirstPassword.objects.filter(user_id=user.pk, password_hash=user.password, used_at__isnull=True).update(
        used_at=timezone.now())


def lockout_response(request: HttpRequest, original_response: Any = None, credentials: dict[str, Any] | None = None):
    """The page a locked-out login gets (429): how many failures locked it, when to try again,
    and how an admin lifts it. Logged without the password."""
    from django.shortcuts import render

    logger.warning("login locked out: %s", attempt_name(request, credentials))
    return render(request, "locked_out.html", {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": settings.ULTRON_LOGIN_LOCKOUT_MINUTES,
    }, status=429)
