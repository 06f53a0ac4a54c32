"""A person logged in with a one-time password (``create_user``, ``ensure_admin``,
``reset_password``) must choose their own before anything else: every admin page but the
password change (and logout) redirects there."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
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


class SpaceScopeMiddleware:
    """Every request runs in its caller's spaces and ends with them (``core/spaces.py``).

    A person logged in to the admin site works in the spaces they curate (or administer), or
    the one chosen in the header's space switcher; an API caller's spaces are opened by the
    API's ``SpaceScope`` permission once DRF has authenticated its token. Either way the scope
    ends with the request (the one before comes back: none, for a served request), and a
    streamed body is produced inside it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from core.spaces import scope_current, scope_enter, scope_kept, scoped_iterator

        with scope_kept():
            user = getattr(request, "user", None)
            if user is not None and user.is_authenticated and not request.path.startswith("/api/"):
                from ultron_site.spaces_pages import page_spaces

                ids = page_spaces(request)
                scope_enter(read=ids, write=ids)
            response = self.get_response(request)
            if isinstance(response, StreamingHttpResponse):
                response.streaming_content = scoped_iterator(response.streaming_content, scope_current())
        return response
