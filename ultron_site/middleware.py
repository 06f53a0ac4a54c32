"""A person logged in with a one-time password (``create_user``, ``ensure_admin``,
``reset_password``) must choose their own before anything else: every admin page but the
password change (and logout) redirects there."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse


class FirstPasswordMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        # Only the admin site: agents call the API with tokens and have no usable password (flow.md#records).
        if user is not None and user.is_authenticated and request.path.startswith("/admin/"):
            allowed = (reverse("admin:password_change"), reverse("admin:password_change_done"), reverse("admin:logout"))
            if request.path not in allowed:
                from ultron_site.models import FirstPassword

                first = FirstPassword.objects.filter(user_id=user.pk).values_list("password_hash", flat=True).first()
                if first is not None:
                    if first == user.password:
                        return HttpResponseRedirect(allowed[0])
                    FirstPassword.objects.filter(user_id=user.pk).delete()  # changed: done with it
                    _forget_printed(user.get_username())
        return self.get_response(request)


def _forget_printed(username: str) -> None:
    """``ensure_admin`` saved the first admin's printed password in the data directory; once it
    has been changed the file only misleads, so it goes."""
    path = settings.ULTRON_DATA_DIR / "admin-password.txt"
    try:
        if path.read_text().split("\n", 1)[0] == username:
            path.unlink()
    except OSError:
        pass
