"""The admin site's front door: password rules, one-time passwords used once, login lockouts
that expire or are lifted, https settings that pass Django's deployment check, and the headers
every page carries."""

from __future__ import annotations

import io
import logging
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from ultron_site.people import PersonError, person_create

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


# --- passwords --------------------------------------------------------------------------------

@pytest.mark.parametrize("password, says", [
    ("a", "at least 12 characters"),
    ("password1234", "too common"),
    ("739184620573", "entirely numeric"),
    ("harriet-curator", "too similar"),
])
def test_a_weak_password_is_refused_with_the_reason(password, says):
    with pytest.raises(PersonError, match=says):
        person_create(username="harriet-curator", role="curator", password=password)


def test_create_user_takes_a_good_password_from_stdin_and_refuses_a_bad_one(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    with pytest.raises(CommandError, match="at least 12 characters"):
        call_command("create_user", "ivy", "--role", "curator", "--password-stdin", stdout=io.StringIO())
    monkeypatch.setattr(sys, "stdin", io.StringIO("long enough and mine 7\n"))
    call_command("create_user", "ivy", "--role", "curator", "--password-stdin", stdout=io.StringIO())
    assert Client().login(request=HttpRequest(), username="ivy", password="long enough and mine 7")


def test_the_password_change_page_refuses_a_weak_password():
    person = person_create(username="jo", role="curator")
    client = Client()
    assert client.login(request=HttpRequest(), username="jo", password=person.password)
    response = client.post(reverse("admin:password_change"), {
        "old_password": person.password, "new_password1": "a", "new_password2": "a"})
    assert response.status_code == 200
    assert "at least 12 characters" in response.content.decode()


# --- one-time passwords -------------------------------------------------------------------------

def test_a_one_time_password_opens_one_session_and_reset_password_issues_another():
    person = person_create(username="kim", role="curator")
    first, second = Client(), Client()
    assert first.login(request=HttpRequest(), username="kim", password=person.password)
    # The session it opened lives on (it is sent to choose a password)...
    assert first.get(reverse("admin:index"))["Location"] == reverse("admin:password_change")
    # ...but the same password opens no other.
    assert not second.login(request=HttpRequest(), username="kim", password=person.password)
    out = io.StringIO()
    call_command("reset_password", "kim", stdout=out)
    new = out.getvalue().split("good for one login): ")[1].split()[0]
    assert new != person.password
    assert second.login(request=HttpRequest(), username="kim", password=new)
    with pytest.raises(CommandError, match="no person named"):
        call_command("reset_password", "nobody", stdout=io.StringIO())


def test_ensure_admin_prints_a_one_time_password(settings, tmp_path):
    settings.ULTRON_DATA_DIR = tmp_path
    out = io.StringIO()
    call_command("ensure_admin", "--username", "root-admin", stdout=out)
    password = re.search(r"with password (\S+)", out.getvalue()).group(1)
    assert (tmp_path / "admin-password.txt").read_text().split() == ["root-admin", password]
    client = Client()
    assert client.login(request=HttpRequest(), username="root-admin", password=password)
    changed = client.post(reverse("admin:password_change"), {
        "old_password": password, "new_password1": "my own admin phrase 9", "new_password2": "my own admin phrase 9"})
    assert changed.status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200
    assert not (tmp_path / "admin-password.txt").exists()  # the printed one no longer works: gone
    assert not Client().login(request=HttpRequest(), username="root-admin", password=password)


# --- lockouts, over real HTTP on loopback --------------------------------------------------------

def _login_post(base: str, username: str, password: str) -> requests.Response:
    session = requests.Session()
    page = session.get(f"{base}/admin/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return session.post(f"{base}/admin/login/", timeout=30, allow_redirects=False, data={
        "csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/admin/"})


def test_guessing_a_password_locks_the_account_until_an_admin_lifts_it(live_server, settings, caplog):
    limit = settings.AXES_FAILURE_LIMIT
    person = person_create(username="lena", role="admin", password="lena's real passphrase 4")
    caplog.set_level(logging.INFO)
    guesses = [f"guess-{n}-Tr0ub4dor&3" for n in range(limit + 2)]
    answers = [_login_post(live_server.url, "lena", guess).status_code for guess in guesses]
    assert answers[:limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert answers[limit - 1:] == [429] * 3  # the limit reached: locked
    locked = _login_post(live_server.url, "lena", person.password)
    assert locked.status_code == 429 and "Too many failed logins" in locked.text
    assert "axes_reset_username" in locked.text
    logged = caplog.text
    assert "login locked out: user 'lena'" in logged
    assert not any(guess in logged for guess in guesses) and person.password not in logged

    call_command("axes_reset_username", "lena", stdout=io.StringIO())
    opened = _login_post(live_server.url, "lena", person.password)
    assert opened.status_code == 302 and opened.headers["Location"] == "/admin/"


def test_one_address_trying_many_accounts_is_locked_out_too(live_server, settings):
    limit = settings.AXES_FAILURE_LIMIT
    person = person_create(username="mo", role="curator", password="mo has a long passphrase 8")
    answers = [_login_post(live_server.url, f"someone-{n}", "wrong password here").status_code
               for n in range(limit + 1)]
    assert answers[-1] == 429
    # The address is locked: even a right password from it waits.
    assert _login_post(live_server.url, "mo", person.password).status_code == 429
    call_command("axes_reset_ip", "127.0.0.1", stdout=io.StringIO())
    assert _login_post(live_server.url, "mo", person.password).status_code == 302


def test_a_lockout_expires(settings, client):
    from axes.models import AccessAttempt
    from django.utils import timezone

    person = person_create(username="nia", role="curator", password="nia's own long phrase 3")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("admin:login"), {"username": "nia", "password": "not it at all"})
    assert client.post(reverse("admin:login"), {"username": "nia", "password": person.password}).status_code == 429
    # Age the failures past the lockout time instead of waiting for it.
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME * 2)
    assert client.post(reverse("admin:login"), {"username": "nia", "password": person.password}).status_code == 302


def test_the_client_address_behind_trusted_proxies_is_read_from_the_right(settings, rf):
    from ultron_site.logins import client_ip

    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    settings.ULTRON_TRUSTED_PROXIES = 0
    assert client_ip(request) == "10.0.0.2"  # no proxy trusted: the header is ignored
    settings.ULTRON_TRUSTED_PROXIES = 1
    assert client_ip(request) == "203.0.113.9"  # not the spoofable left end
    settings.ULTRON_TRUSTED_PROXIES = 3
    assert client_ip(request) == "10.0.0.2"  # fewer hops than proxies: the peer


# --- https settings and headers ------------------------------------------------------------------

PRODUCTION = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
    "DJANGO_DEBUG": "false",
    "DJANGO_ALLOWED_HOSTS": "hub.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://hub.example.com",
    "ULTRON_HTTPS": "true",
    "ULTRON_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "ULTRON_HSTS_INCLUDE_SUBDOMAINS": "true",
    "ULTRON_HSTS_PRELOAD": "true",
}


def test_the_documented_production_settings_pass_the_deployment_check():
    documented = (ROOT / "docs" / "deployment.md").read_text()
    for name, value in PRODUCTION.items():
        if name != "DJANGO_SECRET_KEY":
            assert f"{name}={value}" in documented, f"docs/deployment.md does not show {name}={value}"
    env = {**os.environ, **PRODUCTION}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_pages_carry_a_content_security_policy_and_no_framing(client):
    response = client.get(reverse("admin:login"))
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src 'self'" in policy and "http" not in policy  # nothing from elsewhere
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_with_https_cookies_are_secure_and_http_is_redirected(settings, client):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    plain = client.get(reverse("admin:login"))
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    assert client.get("/api/health").status_code in (200, 503)  # load balancers probe over http
    secure = client.get(reverse("admin:login"), HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"].startswith("max-age=31536000")
    cookie = secure.cookies["csrftoken"]
    assert cookie["secure"] and cookie["samesite"] == "Lax"
