"""Every link behind the door works for whoever sees it.

A hub with realistic data (a session of every format the hub ingests, sessions that failed,
were parked and succeeded; merged, candidate and archived memories; clusters with and without a
skill) is crawled as each role: from the dashboard, every link and every htmx URL on every
admin page is followed, and every list page is also opened with odd query strings. No answer
may be 500 or more, and no link may answer 403 or 404 to the role it was shown to. Then one page
of each kind is opened in Chromium for that role: no console error (a missing file, a script
refused by the Content-Security-Policy, a script error), no request leaving the hub.
"""

from __future__ import annotations

import os
import re
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import pytest
from django.conf import settings
from django.test import Client

from agents.services import agent_create
from ingestion.models import SessionRecord, TaskSegment, WorkState
from ingestion.services.accept import files_ingest
from memories.models import CandidateStatus, Memory, MergeCandidate
from tests.site.hub_rows import populate
from ultron_site.people import person_create

DATA = Path(__file__).resolve().parents[1] / "data"
SHOTS = Path(settings.ULTRON_DATA_DIR) / "screenshots"
CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.django_db(transaction=True)

# Query strings a person (or an old bookmark) may put on any list page.
ODD_QUERIES = ["?p=999", "?o=99", "?o=-1.x", "?q=%00", "?tags=", "?tags=node", "?unknown=1", "?all=",
               "?status__exact=bogus", "?e=1", "?_popup=1"]
PER_KIND = 2  # pages opened per kind of page (same path shape and query keys)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, bool]] = []  # (url, fetched by htmx)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "a" and attributes.get("href"):
            self.links.append((attributes["href"], False))
        if attributes.get("hx-get"):
            self.links.append((attributes["hx-get"], True))


def _kind(url: str) -> str:
    parts = urlsplit(url)
    path = re.sub(r"/[0-9a-f]{8}-[0-9a-f-]{27}/", "/UUID/", parts.path)
    path = re.sub(r"/\d+/", "/N/", path)
    return path + "?" + ",".join(sorted({key for key, _ in parse_qsl(parts.query, keep_blank_values=True)}))


def _hub(settings_fixture) -> None:
    """Realistic rows of every kind the admin pages show."""
    populate(settings_fixture)
    agent = agent_create(name="crawler-agent")
    files = [(path.name, path.read_bytes()) for path in sorted((DATA / "formats").iterdir())]
    files += [(name, (DATA / folder / name).read_bytes()) for folder, name in
              [("sessions_written", "cc02_docker_slim.jsonl"), ("sessions_plain", "oa06_nginx_upload_multi.jsonl")]]
    files.append(("broken.jsonl", b"{not json\n\x00\x01"))
    job, results = files_ingest(agent=agent, files=files)
    assert {r.status for r in results} >= {"new", "skipped"}, results
    sessions = list(SessionRecord.objects.order_by("pk"))
    assert len(sessions) >= 9
    SessionRecord.objects.filter(pk=sessions[0].pk).update(
        segmentation=WorkState.FAILED, attempts=2, last_error="OSError: disk full while reading the spool")
    SessionRecord.objects.filter(pk=sessions[1].pk).update(
        segmentation=WorkState.PARKED, attempts=5, last_error="FileNotFoundError: the bytes are gone")
    segment = TaskSegment.objects.order_by("pk").first()
    TaskSegment.objects.filter(pk=segment.pk).update(extraction=WorkState.PARKED, attempts=5,
                                                     last_error="TimeoutError: the LLM did not answer")
    if not MergeCandidate.objects.filter(status=CandidateStatus.OPEN).exists():
        first, second = Memory.objects.filter(status="active").order_by("pk")[:2]
        MergeCandidate.objects.create(memory=second, duplicate_of=first, similarity=0.81,
                                      conflicts=["3.8 / 3.11"])


def _crawl(client: Client, role: str, *, minimum: int = 30) -> tuple[dict[str, str], list[str]]:
    """Follow every link from the dashboard; returns one URL per kind of page and the problems."""
    seen: set[str] = set()
    per_kind: dict[str, int] = {}
    first_of_kind: dict[str, str] = {}
    problems: list[str] = []
    queue: deque[tuple[str, bool, str]] = deque([("/admin/", False, "start")])
    lists: set[str] = set()
    while queue:
        url, htmx, found_on = queue.popleft()
        kind = _kind(url) + (" htmx" if htmx else "")
        if url in seen or per_kind.get(kind, 0) >= PER_KIND:
            continue
        seen.add(url)
        per_kind[kind] = per_kind.get(kind, 0) + 1
        headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        response = client.get(url, **headers)
        status = response.status_code
        if status >= 500 or status in (403, 404, 400):
            problems.append(f"{role}: {url} answered {status} (linked from {found_on})")
            continue
        if status in (301, 302):
            target = response["Location"]
            if urlsplit(target).path.startswith("/admin/login"):
                problems.append(f"{role}: {url} sent to the login page (linked from {found_on})")
            else:
                queue.append((urljoin(url, target), False, url))
            continue
        if "html" not in response.get("Content-Type", ""):
            continue  # a download
        if not htmx:
            first_of_kind.setdefault(kind, url)
        parser = _Links()
        parser.feed(response.content.decode("utf-8", "replace"))
        for link, by_htmx in parser.links:
            absolute = urljoin(url, link)
            parts = urlsplit(absolute)
            if parts.netloc and parts.netloc != "testserver":
                problems.append(f"{role}: {url} links outside the hub: {link}")
                continue
            if not parts.path.startswith("/admin/") or parts.path.startswith("/admin/logout"):
                continue
            # The filters kept for the way back to a list say nothing about the page itself.
            query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                               if k != "_changelist_filters"])
            here = urlsplit(url)
            if here.query and parts.path == here.path and query and not by_htmx:
                continue  # every filter of a list is followed from the list itself; not their combinations
            queue.append((parts.path + (f"?{query}" if query else ""), by_htmx, url))
        if re.fullmatch(r"/admin/\w+/\w+/", urlsplit(url).path) and not urlsplit(url).query:
            lists.add(url)
    for list_url in sorted(lists):
        for query in ODD_QUERIES:
            status = client.get(list_url + query).status_code
            if status >= 500 or status == 403:
                problems.append(f"{role}: {list_url}{query} answered {status}")
    assert len(seen) >= minimum, f"{role}: the crawl saw only {len(seen)} pages"
    return first_of_kind, problems


def _login(role: str) -> tuple[Client, str, str]:
    person = person_create(username=f"crawler-{role}", role=role, password="a long crawler password 12")
    client = Client()
    client.force_login(_user(person.username))
    return client, person.username, person.password


def _user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)


def test_every_link_works_for_whoever_sees_it(settings, live_server):
    _hub(settings)
    pages: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for role in ("curator", "admin"):
        client, *_ = _login(role)
        pages[role], found = _crawl(client, role)
        problems += found
    assert not problems, "\n".join(problems[:40])
    assert "/admin/agents/agent/?" in pages["admin"] and "/admin/agents/agent/?" not in pages["curator"]
    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        pytest.skip("Debian's chromium is not installed (make test installs it as root)")
    _conversations_read(client)
    _in_chromium(live_server.url, pages)


def _conversations_read(client: Client) -> None:
    """Every segment of every format: its page and its conversation (full page and the partial
    the memory page loads) show each message's text."""
    segments = list(TaskSegment.objects.select_related("session").order_by("pk"))
    formats = {segment.session.identity for segment in segments}
    assert len(formats) >= 9, formats
    for segment in segments:
        page = client.get(f"/admin/ingestion/tasksegment/{segment.pk}/change/")
        partial = client.get(f"/admin/ingestion/tasksegment/{segment.pk}/conversation/", HTTP_HX_REQUEST="true")
        assert page.status_code == 200 and partial.status_code == 200, segment.session.identity
        shown = partial.content.decode()
        assert "hub-message" in shown and "Loading" not in shown, segment.session.identity


def _segment_per_format() -> dict[str, int]:
    first: dict[str, int] = {}
    for pk, identity in TaskSegment.objects.order_by("pk").values_list("pk", "session__identity"):
        first.setdefault(identity.split(".")[0].split("-")[0], pk)
    return first


def _in_chromium(base: str, pages: dict[str, dict[str, str]]) -> None:
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    errors: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
            for role, urls in pages.items():
                _browse(browser, base, role, urls, errors)
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    assert not errors, "\n".join(errors[:40])


def _browse(browser, base: str, role: str, urls: dict[str, str], errors: list[str]) -> None:
    """One role's tab: log in, open one page of each path shape, note every console error,
    failed response and request that leaves the hub."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda message: message.type == "error" and errors.append(f"{role} {page.url}: {message.text}"))
    page.on("pageerror", lambda error: errors.append(f"{role} {page.url}: {error}"))
    page.on("response", lambda response: response.status >= 400
            and errors.append(f"{role} {page.url}: {response.status} for {response.url}"))
    page.on("request", lambda request: not request.url.startswith((base, "data:"))
            and errors.append(f"{role} {page.url}: request left the hub: {request.url}"))
    page.goto(base + "/admin/login/")
    page.fill("#id_username", f"crawler-{role}")
    page.fill("#id_password", "a long crawler password 12")
    page.click("#login-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    # One page per path shape: a list's filters and pages load the same files.
    shapes = {kind.split("?", 1)[0]: url for kind, url in sorted(urls.items(), reverse=True)}
    for url in sorted(shapes.values()):
        page.goto(base + url, wait_until="load")
        # htmx marks elements whose request is in flight; the page is done when none is.
        page.wait_for_function("!document.querySelector('.htmx-request')", timeout=10_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    if role == "curator":  # a person looks at each format's conversation, and a session's segments
        for name, segment_id in _segment_per_format().items():
            page.goto(f"{base}/admin/ingestion/tasksegment/{segment_id}/change/", wait_until="load")
            page.screenshot(path=str(SHOTS / f"conversation-{name}.png"), full_page=True)
        session = SessionRecord.objects.filter(segments__memory_links__isnull=False).order_by("pk").first()
        page.goto(f"{base}/admin/ingestion/sessionrecord/{session.pk}/change/", wait_until="load")
        page.screenshot(path=str(SHOTS / "session-segments.png"), full_page=True)
    page.close()
    if role == "admin":  # last: the lockout page, after guessing a password (it locks this address)
        guesser = browser.new_page(viewport={"width": 1280, "height": 900})
        for _ in range(settings.AXES_FAILURE_LIMIT):
            guesser.goto(base + "/admin/login/")
            guesser.fill("#id_username", "crawler-admin")
            guesser.fill("#id_password", "not the password at all")
            guesser.click("#login-form button[type=submit]")
            guesser.wait_for_load_state("load")
        assert "Too many failed logins" in guesser.content()
        guesser.screenshot(path=str(SHOTS / "locked-out.png"), full_page=True)
        guesser.close()


def test_the_crawl_itself_notices_a_broken_link():
    """The crawler is not blind: a dashboard link that answers 404 is reported."""
    from django.contrib.auth import get_user_model

    class Broken(Client):
        def get(self, path, *args, **kwargs):
            response = super().get(path, *args, **kwargs)
            if path == "/admin/":
                response.content = response.content.replace(b"</body>", b'<a href="/admin/no-such-page/">x</a></body>')
            return response

    broken = Broken()
    broken.force_login(get_user_model().objects.create_superuser("crawl-check", password="x" * 16))
    _, problems = _crawl(broken, "admin", minimum=1)
    assert any("/admin/no-such-page/ answered 404 (linked from /admin/)" in problem for problem in problems)
