"""The admin site in a real browser (Debian's headless Chromium driven by Playwright) against
the live server: an admin uploads sessions and watches the job, a curator searches live and
edits a memory, a curator is kept out of tokens and raw archives, two teams' curators each see
their own team's memories and one promotes a memory to the space both share. Every request must stay on
the server, no page may log a console error, and each page is saved under var/screenshots/
for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings

from memories.models import Memory
from memories.services import memory_upload
from tests.ingestion.test_services import DOCKER_TASK, jsonl
from ultron_site.people import person_create

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists() and not os.environ.get("CI"),
                       reason="Debian's chromium is not installed (make test installs it as root)"),
]
SHOTS = Path(settings.ULTRON_DATA_DIR) / "screenshots"


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
    # still plain synchronous code between its calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-sync"])
        yield browser
        browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


class Session:
    """One person's browser tab, watching every request and console error."""

    def __init__(self, browser, base: str, role: str, *, password_once: bool = False, username: str | None = None,
                 spaces: list | None = None) -> None:
        self.base = base
        self.person = person_create(username=username or f"{role}-{os.getpid()}", role=role,
                                    password_once=password_once, spaces=spaces)
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda message: message.type == "error"
                     and self.errors.append(f"{self.page.url}: {message.text}"))
        self.page.on("pageerror", lambda error: self.errors.append(f"{self.page.url}: {error}"))
        self.go("/admin/login/")
        self.page.fill("#id_username", self.person.username)
        self.page.fill("#id_password", self.person.password)
        self.page.click("#login-form button[type=submit]")
        self.page.wait_for_load_state("networkidle")

    def go(self, path: str) -> None:
        self.page.goto(self.base + path)
        self.page.wait_for_load_state("networkidle")

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def check_clean(self) -> None:
        outside = [url for url in self.requests if not url.startswith(self.base) and not url.startswith("data:")]
        assert not outside, f"requests left the server: {outside[:5]}"
        assert not self.errors, f"console errors: {self.errors[:5]}"


def test_admin_uploads_two_sessions_and_watches_the_job_finish(browser, live_server, agent, tmp_path):
    admin = Session(browser, live_server.url, "admin", password_once=True)
    # The printed password is good once: the first page asks for a new one.
    assert "/admin/password_change/" in admin.page.url
    admin.shot("first-password")
    new_password = "a-new-password-of-her-own-42"
    admin.page.fill("#id_old_password", admin.person.password)
    admin.page.fill("#id_new_password1", new_password)
    admin.page.fill("#id_new_password2", new_password)
    with admin.page.expect_navigation():
        admin.page.click("form button[type=submit] >> nth=-1")
    admin.page.wait_for_load_state("networkidle")
    assert admin.page.locator("#continue-to-dashboard").count() == 1
    admin.shot("first-password-done")
    with admin.page.expect_navigation():
        admin.page.click("#continue-to-dashboard")  # the page after the change has a way on
    admin.page.wait_for_load_state("networkidle")
    assert admin.page.url.rstrip("/").endswith("/admin")
    assert "/admin/password_change/" not in admin.page.url
    admin.shot("dashboard-empty")
    files = []
    for name in ("docker-a.jsonl", "docker-b.jsonl"):
        path = tmp_path / name
        path.write_bytes(jsonl(DOCKER_TASK))
        files.append(str(path))
    admin.go("/admin/ingestion/ingestjob/upload/")
    admin.shot("ingest-upload")
    admin.page.select_option("#id_agent", label=agent.name)
    admin.page.set_input_files("#id_session_files", files)
    assert "docker-b.jsonl" in admin.page.input_value(".hub-file-names")
    admin.page.click("form.hub-form button[type=submit]")
    admin.page.wait_for_selector("text=done", timeout=60_000)
    assert admin.page.locator("text=docker-a.jsonl").count() >= 1
    admin.shot("ingest-job")
    admin.go("/admin/")
    admin.shot("dashboard")
    for path in ("/admin/ingestion/sessionrecord/", "/admin/ingestion/tasksegment/", "/admin/ingestion/rawupload/",
                 "/admin/agents/agent/", "/admin/ultron_site/steprun/", "/admin/clusters/knowledgecluster/"):
        admin.go(path)
        assert admin.page.locator("text=Server Error").count() == 0
        admin.shot("admin" + path.rstrip("/").replace("/admin", "").replace("/", "-"))
    # A memory from the session: its page loads the conversation with the messages it came from marked.
    from ingestion.models import SegmentMemory

    link = SegmentMemory.objects.first()
    admin.go(f"/admin/memories/memory/{link.memory_id}/change/")
    admin.page.wait_for_selector(".hub-message-source", timeout=30_000)
    admin.shot("memory-conversation-source")
    admin.check_clean()


def test_curator_finds_a_memory_by_live_search_and_edits_it(browser, live_server):
    target = memory_upload(content="pip install failed inside Docker: no outbound network on the CI runner",
                           resolution="configure a proxy or build with --network host").memory
    memory_upload(content="Always answer this user in British English")
    memory_upload(content="<script>alert('x')</script> printed raw by a template without escaping")
    curator = Session(browser, live_server.url, "curator")
    curator.go("/admin/memories/memory/")
    curator.shot("memories")
    curator.page.fill("#searchbar", "docker cannot download packages")
    curator.page.wait_for_function("document.location.search.includes('q=docker')")
    curator.page.wait_for_load_state("networkidle")
    first_row = curator.page.locator("#result_list tbody tr").first
    assert "pip install failed inside Docker" in first_row.inner_text()
    assert "close" in first_row.locator(".hub-match-close").inner_text()  # how near the query it is
    curator.shot("memories-search")
    first_row.locator("a").first.click()
    curator.page.wait_for_load_state("networkidle")
    curator.shot("memory")
    key = "sk-proj-" + "Zq8rT2vW5yA1cE4gI7kM0oQ3sU6wX9zB"
    curator.page.fill("#id_content", f"pip install fails in Docker on CI (no network); token {key}")
    curator.page.click("button[name=_continue], input[name=_continue]")
    curator.page.wait_for_load_state("networkidle")
    assert key not in curator.page.content()
    assert "Redacted on save" in curator.page.content()
    assert key not in Memory.objects.get(pk=target.pk).content
    curator.shot("memory-edited")
    curator.check_clean()


def test_admin_revokes_a_token_in_the_browser(browser, live_server, agent, agent_token):
    from agents.models import ApiToken

    admin = Session(browser, live_server.url, "admin")
    admin.go(f"/admin/agents/agent/{agent.pk}/change/")
    admin.shot("agent")
    admin.page.click("button[form^=revoke-]")
    admin.page.wait_for_selector("text=no longer opens the API")
    assert ApiToken.objects.get().revoked_at is not None
    admin.check_clean()


def test_a_curator_cannot_open_tokens_or_raw_archives(browser, live_server):
    curator = Session(browser, live_server.url, "curator")
    for path in ("/admin/agents/agent/", "/admin/ingestion/rawupload/"):
        response = curator.page.goto(live_server.url + path)
        assert response is not None and response.status == 403, path
    curator.go("/admin/")
    assert curator.page.locator("text=Agents and tokens").count() == 0
    curator.shot("curator-dashboard")


def test_curator_splits_a_pending_merge_and_crystallizes_a_cluster(browser, live_server):
    from memories.services import embedding_space_ensure
    from memories.services.candidates import memory_fold
    from tests.clusters.test_services import _fill

    embedding_space_ensure()
    keep = memory_upload(content="npm ci fails with ERESOLVE on CI while local installs use --legacy-peer-deps").memory
    drop = memory_upload(content="Node 20 CI: npm ci dies on a peer dependency conflict (ERESOLVE); "
                                 "commit an .npmrc with legacy-peer-deps=true").memory
    memory_fold(keep_id=keep.pk, drop_id=drop.pk, similarity=0.8, reason="curator")
    cluster_id = _fill(6)[0].cluster_member.cluster_id

    curator = Session(browser, live_server.url, "curator")
    curator.go("/admin/memories/memory/merge-review/")
    curator.shot("merge-review")
    curator.page.click("text=Split out as its own memory")
    curator.page.wait_for_selector(".hub-settled")
    assert Memory.objects.get(pk=drop.pk).status == "active"  # split back as itself, not a copy
    curator.shot("merge-review-split")

    curator.go(f"/admin/clusters/knowledgecluster/{cluster_id}/change/")
    curator.shot("cluster")
    curator.page.click("text=Crystallize now")
    curator.page.wait_for_selector("text=Read the skill", timeout=60_000)
    curator.page.click("text=Read the skill")
    curator.page.wait_for_load_state("networkidle")
    assert curator.page.locator(".hub-skill h2", has_text="Steps").count() == 1
    curator.shot("skill")
    curator.check_clean()


def test_admin_reads_why_a_segment_gave_no_memory(browser, live_server, agent, tmp_path):
    """A session with a confirmed fix, a preference and a how-to, and one whose fix did not work:
    the job page says which segments gave nothing and why, the segment pages show the memories
    they gave or the reasons, and the memory page shows the conversation it came from."""
    plain = Path(__file__).resolve().parent.parent / "data" / "sessions_plain"
    admin = Session(browser, live_server.url, "admin")
    admin.go("/admin/ingestion/ingestjob/upload/")
    admin.page.select_option("#id_agent", label=agent.name)
    admin.page.set_input_files("#id_session_files", [str(plain / "oa06_nginx_upload_multi.jsonl"),
                                                     str(plain / "oa08_ssh_port22_still_failing.jsonl"),
                                                     str(plain / "cc07_docker_shrink.jsonl")])
    admin.page.click("form.hub-form button[type=submit]")
    admin.page.wait_for_selector("text=done", timeout=60_000)
    assert admin.page.locator("text=gave no memory").count() >= 1
    admin.shot("ingest-job-reasons")
    admin.page.locator(".hub-quiet-segments a").first.click()
    admin.page.wait_for_load_state("networkidle")
    assert admin.page.locator("text=No memory came from this segment").count() == 1
    assert admin.page.locator(".hub-outcome li").count() >= 1
    admin.shot("segment-no-memory")
    from ingestion.models import SegmentMemory

    link = SegmentMemory.objects.select_related("segment").filter(memory__memory_type="error").first()
    assert link is not None
    admin.go(f"/admin/ingestion/tasksegment/{link.segment_id}/change/")
    assert admin.page.locator(f"a[href*='{link.memory_id}']").count() == 1
    admin.shot("segment-with-memory")
    admin.go(f"/admin/memories/memory/{link.memory_id}/change/")
    admin.page.wait_for_selector(".hub-message", timeout=30_000)  # the conversation panel loads
    assert admin.page.locator("text=Loading the conversation").count() == 0
    admin.shot("memory-with-conversation")
    admin.check_clean()


def test_two_teams_curators_see_their_own_memories_and_share_a_promoted_one(browser, live_server):
    from agents.models import Role
    from agents.selectors import space_shared
    from agents.services import space_create

    team_a, team_b, shared = space_create(slug="team-a"), space_create(slug="team-b"), space_shared()
    memory_upload(content="Billing deploys die with OOMKilled unless -Xmx sits below the pod's memory limit",
                  space=team_a)
    memory_upload(content="Cypress runs on CI stop flaking once the viewport is pinned to 1280x720", space=team_b)
    alice = Session(browser, live_server.url, "curator", username="alice",
                    spaces=[(team_a, Role.CURATOR), (shared, Role.CURATOR)])
    bob = Session(browser, live_server.url, "curator", username="bob",
                  spaces=[(team_b, Role.CURATOR), (shared, Role.CURATOR)])

    alice.go("/admin/memories/memory/")
    assert alice.page.locator("#result_list", has_text="OOMKilled").count() == 1
    assert alice.page.locator("text=Cypress").count() == 0
    assert alice.page.locator("#id_hub_space option:checked").inner_text() == "All my spaces"
    alice.shot("spaces-alice-memories")
    bob.go("/admin/memories/memory/")
    assert bob.page.locator("#result_list", has_text="Cypress").count() == 1
    assert bob.page.locator("text=OOMKilled").count() == 0
    bob.shot("spaces-bob-memories")

    # Alice promotes her team's memory to the shared space from its page.
    alice.page.locator("#result_list tbody tr a", has_text="OOMKilled").first.click()
    alice.page.wait_for_load_state("networkidle")
    assert alice.page.locator(".hub-space-badge").inner_text() == "team-a"
    alice.shot("spaces-memory-page")
    alice.page.select_option("#id_promote_space", label="shared")
    alice.page.click("#promote-form button[type=submit]")
    alice.page.wait_for_selector("text=Promoted to space shared")
    alice.shot("spaces-promoted")
    # The header's switcher narrows her pages to the shared space: the copy alone.
    alice.go("/admin/memories/memory/")
    with alice.page.expect_navigation():  # chosen, the switcher goes (hub.js), and the page comes back
        alice.page.select_option("#id_hub_space", label="shared")
    alice.page.wait_for_load_state("networkidle")
    assert alice.page.locator("#id_hub_space option:checked").inner_text() == "shared"
    rows = alice.page.locator("#result_list tbody tr")
    assert rows.count() == 1 and "OOMKilled" in rows.first.inner_text() and "shared" in rows.first.inner_text()
    alice.shot("spaces-alice-switched-to-shared")

    # Bob now sees the promoted copy (in shared) beside his own, and still nothing of team A's.
    bob.go("/admin/memories/memory/")
    assert bob.page.locator("#result_list tbody tr").count() == 2
    bob.page.locator("#result_list tbody tr a", has_text="OOMKilled").first.click()
    bob.page.wait_for_load_state("networkidle")
    assert bob.page.locator(".hub-space-badge").inner_text() == "shared"
    assert bob.page.locator("text=Promoted from space team-a by alice").count() == 1
    bob.shot("spaces-bob-sees-the-promoted-memory")
    original = Memory.objects.get(space=team_a)
    assert bob.page.goto(f"{live_server.url}/admin/memories/memory/{original.pk}/change/") is not None
    bob.page.wait_for_load_state("networkidle")
    assert "OOMKilled" not in bob.page.locator("#content").inner_text()
    alice.check_clean()
    bob.check_clean()


def test_curator_clears_the_review_queue_with_the_keyboard(browser, live_server, settings):
    """A family of merge candidates, a conflict and a supersession the hub decided alone (and
    whatever types the classifier was unsure of): the curator reads them on one page, decides each
    with a key — the family merged at once keeping the newer text, as no LLM is configured — and
    accepts the rest in bulk."""
    from memories.models import (
        CandidateStatus,
        ChangeState,
        KnowledgeChange,
        Memory,
        MergeCandidate,
        Status,
    )

    thresholds = settings.ULTRON_DUPLICATE_THRESHOLD, settings.ULTRON_DUPLICATE_SOFT_THRESHOLD
    settings.ULTRON_DUPLICATE_THRESHOLD = settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.9999  # the pairs are made below
    node = "npm ci fails with EBADENGINE in the {v} pipeline: the runner image is older than the lock file wants"
    family = [memory_upload(content=node.format(v=v)).memory for v in ("release", "nightly", "staging")]
    for older, newer in zip(family, family[1:], strict=False):
        MergeCandidate.objects.create(space_id=older.space_id, memory=newer, duplicate_of=older, similarity=0.93)
    settings.ULTRON_DUPLICATE_THRESHOLD, settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = thresholds
    memory_upload(content="Run the integration tests against Redis 7 with the cluster mode disabled.")
    conflict = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.").conflicts[0]
    old = memory_upload(content="Install dependencies with `poetry install`; the lock file is poetry.lock.",
                        context="billing-api repository").memory
    memory_upload(content="We moved from Poetry to uv: dependencies install with `uv sync` and the lock file is uv.lock.",
                  context="billing-api repository")
    change = KnowledgeChange.objects.get(old=old)
    first = MergeCandidate.objects.filter(memory=family[1]).get()

    curator = Session(browser, live_server.url, "curator")
    curator.go("/admin/")
    curator.page.click("text=the review queue")
    curator.page.wait_for_load_state("networkidle")
    rows = curator.page.locator(".hub-queue-row").count()
    assert curator.page.locator(f"#family-{first.pk}").count() == 1 and rows >= 3  # two pairs, one row
    curator.shot("review-queue")

    def focus(row_id: str) -> None:
        for _ in range(rows):
            if curator.page.locator(f"#{row_id}.hub-queue-focus").count():
                return
            curator.page.keyboard.press("j")
        raise AssertionError(f"{row_id} never took the focus")

    focus(f"change-{change.pk}")
    curator.page.keyboard.press("u")  # undo the hub's supersession
    curator.page.wait_for_selector(f"#change-{change.pk} .hub-settled")
    focus(f"change-{conflict.pk}")
    curator.page.keyboard.press("d")  # both hold
    curator.page.wait_for_selector(f"#change-{conflict.pk} .hub-settled")
    focus(f"family-{first.pk}")
    curator.page.keyboard.press("m")  # merge the family, keeping the newer text
    curator.page.wait_for_selector(f"#family-{first.pk} .hub-settled")
    curator.page.keyboard.press("?")
    assert curator.page.locator("#queue-help[open]").count() == 1
    curator.shot("review-queue-help")
    curator.page.keyboard.press("Escape")
    curator.shot("review-queue-decided")
    # What is left (types the classifier was unsure of, if any): selected and accepted at once.
    curator.go("/admin/memories/memory/queue/")
    if curator.page.locator(".hub-queue-row").count():
        curator.page.click("[data-select-all]")
        curator.shot("review-queue-selected")
        with curator.page.expect_navigation():
            curator.page.click('#queue-bulk button[value="accept"]')
    assert curator.page.locator(".hub-empty").count() == 1
    old.refresh_from_db()
    assert old.status == Status.ACTIVE
    assert KnowledgeChange.objects.get(pk=conflict.pk).state == ChangeState.DONE
    kept = Memory.objects.get(pk=family[0].pk)
    assert kept.content == node.format(v="staging") and not kept.merge_pending
    pairs = MergeCandidate.objects.filter(memory__in=family[1:], duplicate_of__in=family)
    assert set(pairs.values_list("status", flat=True)) == {CandidateStatus.MERGED}
    curator.check_clean()


def test_curator_sets_an_unsure_type_with_the_keyboard_and_undoes_it_on_the_memory_page(browser, live_server):
    """The review queue's types to confirm: j focuses the row, s sets the runner-up (htmx: the row
    settles in place); the memory page lists the decision, and its Undo puts the type back."""
    result = memory_upload(content="Notes about the build.")
    review = result.type_review
    assert review is not None, "the classifier was sure of a text it should doubt"
    curator = Session(browser, live_server.url, "curator", username="tyra")
    curator.go("/admin/memories/memory/queue/?kind=type")
    curator.shot("queue-types")
    curator.page.keyboard.press("j")
    curator.page.keyboard.press("s")
    curator.page.wait_for_selector(".hub-settled")
    assert Memory.objects.get(pk=result.memory.pk).memory_type == review.runner_up
    curator.shot("queue-types-settled")
    curator.go(f"/admin/memories/memory/{result.memory.pk}/change/")
    assert curator.page.locator(f"text=set to {review.runner_up} by tyra").count() == 1
    curator.page.click("button:has-text('Undo')")
    curator.page.wait_for_load_state("networkidle")
    assert Memory.objects.get(pk=result.memory.pk).memory_type == review.chosen
    curator.shot("memory-type-undone")
    decision = curator.page.locator(".hub-history-item", has_text=f"set to {review.runner_up} by tyra")
    assert "undone by tyra" in decision.inner_text()
    assert curator.page.locator("text=waiting in the review queue").count() == 1  # the doubt is back in the queue
    curator.check_clean()
