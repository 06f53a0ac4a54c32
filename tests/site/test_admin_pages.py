"""The admin site people work in: roles, what each role may open, edits through the service
(redaction, history), HTMX partials beside full pages, and agents kept out."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from memories.models import Memory, MemoryEdit, Status
from memories.services import memory_upload
from tests.spaces import curate_shared
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db


def _login(role: str) -> Client:
    person = person_create(username=f"{role}-person", role=role, password_once=False)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client


@pytest.fixture
def curator_client() -> Client:
    return _login("curator")


@pytest.fixture
def admin_client_role() -> Client:
    return _login("admin")


@pytest.fixture
def memory() -> Memory:
    return memory_upload(
        content="pip install failed inside Docker: could not find a version that satisfies the requirement",
        context="CI runner without outbound network", resolution="configure a proxy or build with --network host",
        tags=["docker"],
    ).memory


def test_roles_exist_with_their_permissions():
    curators = set(Group.objects.get(name="Curators").permissions.values_list("codename", flat=True))
    admins = set(Group.objects.get(name="Admins").permissions.values_list("codename", flat=True))
    assert {"change_memory", "review_merges", "crystallize_cluster", "publish_skill"} <= curators
    assert curators < admins
    assert {"upload_sessions", "download_rawupload", "add_apitoken", "retry_work", "delete_memory"} <= admins - curators


def test_create_user_prints_a_password_that_logs_in():
    out = io.StringIO()
    call_command("create_user", "dora", "--role", "curator", stdout=out)
    password = out.getvalue().split("good for one login): ")[1].split()[0]
    assert Client().login(request=HttpRequest(), username="dora", password=password)


def test_create_user_refuses_an_unknown_role_and_a_taken_name():
    from django.core.management.base import CommandError

    call_command("create_user", "erin", "--role", "admin", stdout=io.StringIO())
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_user", "erin", "--role", "admin", stdout=io.StringIO())
    with pytest.raises(CommandError):
        call_command("create_user", "finn", "--role", "owner", stdout=io.StringIO())


def test_root_redirects_to_the_admin_site(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")


def test_an_agent_token_never_opens_a_page(agent_token, memory):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    for url in (reverse("admin:index"), reverse("admin:memories_memory_changelist"),
                reverse("admin:memories_memory_change", args=[memory.pk])):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url


def test_dashboard_shows_counts_that_link_to_their_lists(curator_client, memory):
    response = curator_client.get(reverse("admin:index"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Active memories by tier" in body
    assert "?tier__exact=warm&amp;status__exact=active" in body
    assert "Run now" not in body  # curators do not run the pipeline


def test_admins_can_queue_a_pipeline_run_and_curators_cannot(admin_client_role, curator_client, settings):
    assert "Run now" in admin_client_role.get(reverse("admin:index")).content.decode()
    assert curator_client.post(reverse("admin:pipeline_run")).status_code == 403
    assert admin_client_role.post(reverse("admin:pipeline_run")).status_code == 302


@pytest.mark.parametrize("name", ["admin:agents_agent_changelist", "admin:ingestion_rawupload_changelist"])
def test_a_curator_cannot_open_tokens_or_raw_archives(curator_client, admin_client_role, name):
    assert curator_client.get(reverse(name)).status_code == 403
    assert admin_client_role.get(reverse(name)).status_code == 200


def test_a_curator_reads_jobs_and_sessions_without_links_to_what_they_may_not_open(curator_client, agent):
    from ingestion.services.accept import files_ingest

    job, _ = files_ingest(agent=agent, files=[("a.jsonl", _session_file("a.jsonl").read())])
    session = job.sessions.get()
    assert curator_client.get(reverse("admin:ingestion_ingestjob_changelist")).status_code == 200
    job_page = curator_client.get(reverse("admin:ingestion_ingestjob_change", args=[job.pk])).content.decode()
    assert reverse("admin:ingestion_sessionrecord_change", args=[session.pk]) in job_page
    assert reverse("admin:agents_agent_change", args=[agent.pk]) not in job_page and "agent-smith" in job_page
    page = curator_client.get(reverse("admin:ingestion_sessionrecord_change", args=[session.pk])).content.decode()
    assert reverse("admin:ingestion_ingestjob_change", args=[job.pk]) in page
    assert "/admin/ingestion/rawupload/" not in page and "/admin/agents/" not in page


def test_an_admin_downloads_the_redacted_archive_and_the_download_is_logged(
        admin_client_role, agent, caplog, django_capture_on_commit_callbacks):
    import json
    import logging

    from ingestion.models import RawUpload
    from ingestion.services.accept import files_ingest

    line = json.dumps({"type": "user", "message": {"role": "user", "content": "deploy with password=Tr0ub4dor&3 please"}})
    with django_capture_on_commit_callbacks(execute=True):
        job, _ = files_ingest(agent=agent, files=[("s.jsonl", line.encode())])
    raw = RawUpload.objects.get(pk=job.sessions.get().raw_id)
    caplog.set_level(logging.INFO, logger="ultron.audit")
    response = admin_client_role.get(reverse("admin:ingestion_rawupload_download", args=[raw.pk]))
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert response.status_code == 200 and b"Tr0ub4dor" not in body and b"REDACTED_CREDENTIAL" in body
    assert f"raw upload {raw.pk}" in caplog.text and "downloaded by 'admin-person'" in caplog.text


@pytest.mark.parametrize("query", ["?tags=node", "?embedding=1", "?provenance=x", "?tier=NOPE", "?p=999", "?o=99",
                                   "?tag=", "?cluster=abc", "?agent__id__exact=zz", "?created_at__gte=never"])
def test_odd_query_strings_on_the_memory_list_never_fail(curator_client, memory, query):
    response = curator_client.get(reverse("admin:memories_memory_changelist") + query)
    assert response.status_code < 500
    if response.status_code == 400:
        assert "cannot do" in response.content.decode()


def test_curator_edit_goes_through_the_service_redacts_and_is_recorded(curator_client, memory):
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    assert curator_client.get(url).status_code == 200
    old_vector = list(Memory.objects.values_list("embedding", flat=True).get(pk=memory.pk))
    secret = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    response = curator_client.post(url, {
        "content": f"pip install fails in Docker without network; the key was {secret}",
        "context": "CI runner without outbound network",
        "resolution": "configure a proxy or build with --network host",
        "tags_text": "docker, pip",
        "memory_type": "error",
        # the read-only inlines' management forms
        "contributions-TOTAL_FORMS": "0", "contributions-INITIAL_FORMS": "0",
        "merge_candidates-TOTAL_FORMS": "0", "merge_candidates-INITIAL_FORMS": "0",
    }, follow=True)
    assert response.status_code == 200
    memory.refresh_from_db()
    assert secret not in memory.content and "<" in memory.content
    assert memory.tags == ["docker", "pip"]
    assert list(Memory.objects.values_list("embedding", flat=True).get(pk=memory.pk)) != old_vector
    edit = MemoryEdit.objects.get(memory=memory)
    assert edit.editor == "curator-person" and edit.action == "edit"
    assert secret not in str(edit.after) and "content" in edit.before
    assert "redacted" in edit.note
    page = curator_client.get(url).content.decode()
    assert "curator-person" in page  # the history on the memory page


def test_a_bad_edit_shows_the_error_beside_the_field_and_changes_nothing(curator_client, memory):
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    response = curator_client.post(url, {
        "content": "   ", "context": "", "resolution": "", "tags_text": "", "memory_type": "error",
        "contributions-TOTAL_FORMS": "0", "contributions-INITIAL_FORMS": "0",
        "merge_candidates-TOTAL_FORMS": "0", "merge_candidates-INITIAL_FORMS": "0",
    })
    assert response.status_code == 200
    assert "content" in response.context["adminform"].form.errors
    memory.refresh_from_db()
    assert memory.content.startswith("pip install failed")
    assert not MemoryEdit.objects.exists()


def test_memory_text_is_escaped_on_the_pages(curator_client):
    memory = memory_upload(content="Rendering <script>alert(1)</script> in a template printed it raw").memory
    page = curator_client.get(reverse("admin:memories_memory_change", args=[memory.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page
    listing = curator_client.get(reverse("admin:memories_memory_changelist")).content.decode()
    assert "<script>alert(1)</script>" not in listing


def test_similar_memories_come_as_a_partial_for_htmx_and_a_page_without(curator_client, memory):
    other = memory_upload(content="pip cannot reach PyPI from a Docker build on a CI runner with no network").memory
    url = reverse("admin:memories_memory_similar", args=[memory.pk])
    partial = curator_client.get(url, HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and "<html" not in partial.content.decode()
    assert str(other.pk) in partial.content.decode()
    page = curator_client.get(url)
    assert "<html" in page.content.decode() and str(other.pk) in page.content.decode()


def test_search_box_ranks_like_an_agent_search_without_counting_hits(curator_client, memory):
    memory_upload(content="Always answer this user in British English")
    response = curator_client.get(reverse("admin:memories_memory_changelist"), {"q": "docker pip no network"})
    assert response.status_code == 200
    rows = list(response.context["cl"].result_list)
    assert rows[0].pk == memory.pk
    assert Memory.objects.get(pk=memory.pk).hit_count == 1


def test_the_memory_list_counts_beside_its_filters_and_searches_once(curator_client, memory, monkeypatch):
    memory_upload(content="Always answer this user in British English")
    Memory.objects.filter(pk=memory.pk).update(tier="hot")
    response = curator_client.get(reverse("admin:memories_memory_changelist"))
    page = response.content.decode()
    assert "Hot (1)" in page and "Warm (1)" in page and "Cold (0)" in page
    page = curator_client.get(reverse("admin:memories_memory_changelist"), {"tier__exact": "hot"}).content.decode()
    assert "Hot (1)" in page and "Warm (1)" in page  # a filter's own counts ignore its own choice...
    assert "Active (1)" in page  # ...and the other filters count within it

    import memories.admin_search as memory_search

    calls = []
    rank = memory_search.memories_rank_matches
    monkeypatch.setattr(memory_search, "memories_rank_matches", lambda **kw: calls.append(kw) or rank(**kw))
    page = curator_client.get(reverse("admin:memories_memory_changelist"), {"q": "docker pip"}).content.decode()
    assert "Hot (1)" in page  # counted within the search's results
    assert len(calls) == 1


def test_a_search_says_how_close_each_row_is(curator_client, memory):
    """The list's search shows a match column: the row on the query's topic is ``close``; a row
    about something else that still made the list is ``weak``; without a search, no column."""
    other = memory_upload(content="Store timestamps in UTC and convert them to the viewer's zone in templates").memory
    changelist = reverse("admin:memories_memory_changelist")
    page = curator_client.get(changelist, {"q": "pip cannot install packages in a docker build"}).content.decode()
    rows = {pk: row for row in page.split("<tr")[1:] for pk in (str(memory.pk), str(other.pk)) if pk in row}
    assert "hub-match-close" in rows[str(memory.pk)] and "close " in rows[str(memory.pk)]
    assert str(other.pk) not in rows or "hub-match-weak" in rows[str(other.pk)]
    assert page.index(str(memory.pk)) < page.index(str(other.pk)) if str(other.pk) in page else True
    assert "hub-match" not in curator_client.get(changelist).content.decode()


def test_archive_and_restore_actions_are_recorded(curator_client, memory):
    changelist = reverse("admin:memories_memory_changelist")
    curator_client.post(changelist, {"action": "archive_selected", "_selected_action": [str(memory.pk)]})
    assert Memory.objects.get(pk=memory.pk).status == Status.ARCHIVED
    curator_client.post(changelist + "?status__exact=archived",
                        {"action": "restore_selected", "_selected_action": [str(memory.pk)]})
    assert Memory.objects.get(pk=memory.pk).status == Status.ACTIVE
    assert list(MemoryEdit.objects.filter(memory=memory).order_by("created_at").values_list("action", flat=True)) == [
        "archive", "restore"]


def test_only_admins_may_delete_memories(curator_client, admin_client_role, memory):
    changelist = reverse("admin:memories_memory_changelist")
    assert "delete_selected" not in curator_client.get(changelist).content.decode()
    assert curator_client.get(reverse("admin:memories_memory_delete", args=[memory.pk])).status_code == 403
    assert admin_client_role.post(reverse("admin:memories_memory_delete", args=[memory.pk]),
                                  {"post": "yes"}).status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_merge_by_hand_keeps_the_older_memory(curator_client, memory):
    other = memory_upload(content="Docker builds on CI cannot install pip packages: no outbound network").memory
    url = reverse("admin:memories_memory_merge", args=[other.pk, memory.pk])
    assert curator_client.get(url).status_code == 200
    response = curator_client.post(url)
    assert response.status_code == 302
    assert Memory.objects.get(pk=other.pk).status == Status.ARCHIVED
    kept = Memory.objects.get(pk=memory.pk)
    assert kept.status == Status.ACTIVE and kept.contributions.count() == 1
    assert MemoryEdit.objects.filter(memory=kept, action="merge").exists()


def test_every_admin_list_opens_for_an_admin(admin_client_role, admin_client, memory):
    """Every list the admin site registers, not a list a new model would miss: the hub's own for
    the admin role; people, groups and django-q's task tables for a superuser only."""
    from django.contrib import admin

    names = sorted(f"{model._meta.app_label}_{model._meta.model_name}" for model in admin.site._registry)
    hub = [name for name in names if name.split("_")[0] in ("agents", "memories", "clusters", "ingestion")
           or name.startswith("ultron_site_")]
    assert {"memories_memory", "memories_mergecandidate", "memories_embeddingspace", "clusters_knowledgecluster",
            "clusters_skill", "ingestion_ingestjob", "ingestion_sessionrecord", "ingestion_tasksegment",
            "ingestion_rawupload", "ultron_site_steprun", "agents_agent"} <= set(hub)
    for name in hub:
        assert admin_client_role.get(reverse(f"admin:{name}_changelist")).status_code == 200, name
    for name in names:
        assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name


def _session_file(name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.ingestion.test_services import DOCKER_TASK, jsonl

    return SimpleUploadedFile(name, jsonl(DOCKER_TASK), content_type="application/x-ndjson")


def test_admin_uploads_sessions_and_follows_the_job(admin_client_role, agent, django_capture_on_commit_callbacks):
    from ingestion.models import IngestJob, SessionRecord

    url = reverse("admin:ingestion_ingestjob_upload")
    assert admin_client_role.get(url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client_role.post(url, {"agent": agent.pk,
                                                "session_files": [_session_file("a.jsonl"), _session_file("b.jsonl")]})
    job = IngestJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("admin:ingestion_ingestjob_change",
                                                                             args=[job.pk])
    assert SessionRecord.objects.filter(agent=agent).count() == 2
    progress_url = reverse("admin:ingestion_ingestjob_progress", args=[job.pk])
    partial = admin_client_role.get(progress_url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and "a.jsonl" in partial and "b.jsonl" in partial
    assert "hx-trigger" not in partial  # the pipeline ran (sync in tests): polling stops
    assert "<html" in admin_client_role.get(progress_url).content.decode()
    assert "a.jsonl" in admin_client_role.get(response["Location"]).content.decode()


def test_a_wrong_file_is_named_beside_the_field(admin_client_role, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from ingestion.models import IngestJob

    response = admin_client_role.post(reverse("admin:ingestion_ingestjob_upload"), {
        "agent": agent.pk, "session_files": [SimpleUploadedFile("notes.txt", b"hello")]})
    assert response.status_code == 200
    assert "notes.txt: only .jsonl, .json, .traj or .md session files are ingested" in response.content.decode()
    assert not IngestJob.objects.exists()


def test_curators_cannot_upload_sessions(curator_client, agent):
    assert curator_client.get(reverse("admin:ingestion_ingestjob_upload")).status_code == 403


def test_live_search_answers_htmx_with_the_results_partial(curator_client, memory):
    url = reverse("admin:memories_memory_changelist")
    partial = curator_client.get(url, {"q": "docker pip"}, HTTP_HX_REQUEST="true")
    body = partial.content.decode()
    assert partial.status_code == 200 and "<html" not in body and "pip install failed" in body
    assert "ranked as an agent" in body
    full = curator_client.get(url, {"q": "docker pip"}).content.decode()
    assert "<html" in full and 'hx-get="/admin/memories/memory/"' in full


def _pending_memory() -> tuple[Memory, Memory]:
    """A memory with a contribution waiting to be merged (folded in by hand)."""
    from memories.services.candidates import memory_fold

    keep = memory_upload(content="npm ci fails with ERESOLVE on CI while local installs use --legacy-peer-deps").memory
    drop = memory_upload(content="Node 20 CI: npm ci dies on a peer dependency conflict (ERESOLVE); "
                                 "commit an .npmrc with legacy-peer-deps=true").memory
    memory_fold(keep_id=keep.pk, drop_id=drop.pk, similarity=0.8, reason="curator")
    return Memory.objects.get(pk=keep.pk), drop


def test_merge_review_shows_contributions_with_a_word_diff(curator_client):
    keep, _ = _pending_memory()
    page = curator_client.get(reverse("admin:memories_memory_merge_review")).content.decode()
    assert keep.summary_l0[:30] in page
    assert "<ins>" in page and "<del>" in page


def test_accepting_in_place_settles_the_memory(curator_client):
    keep, _ = _pending_memory()
    url = reverse("admin:memories_memory_review_action", args=[keep.pk, "accept"])
    response = curator_client.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Trigger"] == "merge-reviewed"
    keep.refresh_from_db()
    assert not keep.merge_pending and not keep.contributions.filter(merged_at__isnull=True).exists()
    assert MemoryEdit.objects.filter(memory=keep, action="accept").exists()


def test_writing_the_merged_text_goes_through_the_edit(curator_client):
    keep, _ = _pending_memory()
    url = reverse("admin:memories_memory_review_action", args=[keep.pk, "write"])
    response = curator_client.post(url, {"content": "npm ci fails with ERESOLVE on CI: commit an .npmrc with "
                                                    "legacy-peer-deps=true, as local installs use that flag",
                                         "context": "Node 20", "resolution": ""})
    assert response.status_code == 302
    keep.refresh_from_db()
    assert keep.content.startswith("npm ci fails with ERESOLVE on CI: commit") and not keep.merge_pending
    assert MemoryEdit.objects.filter(memory=keep, action="edit").exists()


def test_splitting_a_contribution_makes_its_own_memory_that_stays_apart(curator_client):
    """A memory merged into another is split back as itself (its id, text and history), not a copy."""
    keep, dropped = _pending_memory()
    contribution = keep.contributions.get()
    response = curator_client.post(reverse("admin:memories_memory_split", args=[contribution.pk]))
    assert response.status_code == 302
    new = Memory.objects.get(pk=dropped.pk)
    assert new.status == Status.ACTIVE and new.content == dropped.content
    keep.refresh_from_db()
    assert not keep.contributions.exists() and not keep.merge_pending
    # the same text uploaded again merges into the split-out memory, not back into the first
    again = memory_upload(content=dropped.content)
    assert again.merged and again.memory.pk == new.pk


def test_merge_review_needs_the_review_permission(client, memory):
    from django.contrib.auth.models import User

    user = User.objects.create_user("viewer", password="pw-viewer-123", is_staff=True)
    curate_shared(user)  # people see the spaces they curate
    client.force_login(user)
    assert client.get(reverse("admin:memories_memory_merge_review")).status_code == 403
    assert client.post(reverse("admin:memories_memory_review_action", args=[memory.pk, "accept"])).status_code == 403


def test_admin_creates_an_agent_whose_token_is_shown_once_and_works(admin_client_role):
    from rest_framework.test import APIClient

    from agents.models import Agent, ApiToken

    response = admin_client_role.post(reverse("admin:agents_agent_add"), {"name": "ci-bot", "label": "CI"})
    assert response.status_code == 200
    body = response.content.decode()
    token = body.split('<code class="hub-token">')[1].split("<")[0]
    agent = Agent.objects.get(name="ci-bot")
    assert ApiToken.objects.get(agent=agent).label == "CI" and token not in str(list(ApiToken.objects.values()))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/memories/stats").status_code == 200
    # the agent page never shows it again; revoking closes the API to it
    page = admin_client_role.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()
    assert token not in page
    revoke = reverse("admin:agents_apitoken_revoke", args=[ApiToken.objects.get(agent=agent).pk])
    assert admin_client_role.post(revoke).status_code == 302
    assert api.get("/api/memories/stats").status_code == 401


def test_a_hub_admin_makes_an_agent_in_the_space_the_switcher_shows_and_the_token_page_says_so(admin_client_role):
    """Two spaces: the form asks which one the agent writes to, starting from the switcher's;
    without an answer it refuses; the token page names the space."""
    from django.contrib.auth import get_user_model

    from agents.models import Agent, Role
    from agents.services import membership_set, space_create

    team = space_create(slug="team-b")
    membership_set(space=team, user=get_user_model().objects.get(username="admin-person"), role=Role.ADMIN)
    admin_client_role.post(reverse("admin:space_switch"), {"space": team.pk, "next": reverse("admin:index")})
    form = admin_client_role.get(reverse("admin:agents_agent_add")).content.decode()
    assert f'<option value="{team.pk}" selected>team-b</option>' in form
    refused = admin_client_role.post(reverse("admin:agents_agent_add"), {"name": "nowhere-bot"})
    assert "Choose the space the agent writes to" in refused.content.decode()
    assert not Agent.objects.filter(name="nowhere-bot").exists()
    made = admin_client_role.post(reverse("admin:agents_agent_add"), {"name": "team-bot", "space": team.pk})
    assert "space <strong>team-b</strong>" in made.content.decode()
    assert Agent.objects.get(name="team-bot").default_space == team


def test_a_bad_agent_name_is_named_beside_the_field(admin_client_role):
    response = admin_client_role.post(reverse("admin:agents_agent_add"), {"name": "no spaces please"})
    assert response.status_code == 200 and "letters, digits" in response.content.decode().lower()


def test_curators_cannot_create_agents_or_revoke_tokens(curator_client, agent_token):
    from agents.models import ApiToken

    assert curator_client.get(reverse("admin:agents_agent_add")).status_code == 403
    token = ApiToken.objects.get()
    assert curator_client.post(reverse("admin:agents_apitoken_revoke", args=[token.pk])).status_code == 403


def test_the_rebalance_records_the_day_s_tier_mix_for_the_dashboard(curator_client, memory):
    from memories.models import TierSnapshot
    from memories.services import tiers_rebalance

    assert "No tier rebalance has run yet" in curator_client.get(reverse("admin:index")).content.decode()
    tiers_rebalance()
    tiers_rebalance()
    [snapshot] = TierSnapshot.objects.all()
    assert snapshot.hot + snapshot.warm + snapshot.cold == Memory.objects.filter(status=Status.ACTIVE).count()
    page = curator_client.get(reverse("admin:index")).content.decode()
    assert "No tier rebalance has run yet" not in page and 'data-type="line"' in page


def test_a_pipeline_step_run_is_recorded_and_shown(curator_client):
    from ultron_site.models import StepRun
    from ultron_site.pipeline import run_step

    run_step("tier_rebalance")
    run = StepRun.objects.get(step="tier_rebalance")
    assert run.ok and run.finished_at and "hot" in run.result
    assert "hub-badge-ok" in curator_client.get(reverse("admin:index")).content.decode()


def test_error_pages_are_the_hub_s_own(curator_client):
    forbidden = curator_client.get(reverse("admin:agents_agent_changelist"))
    assert forbidden.status_code == 403 and "You may not open this page" in forbidden.content.decode()
    missing = curator_client.get("/no-such-page/")
    assert missing.status_code == 404 and "Nothing here" in missing.content.decode()


def test_the_server_error_page_renders_without_a_request_context(rf):
    from django.views.defaults import server_error

    response = server_error(rf.get("/admin/"))
    assert response.status_code == 500 and "Something went wrong on the hub" in response.content.decode()


def test_the_printed_password_is_good_for_the_first_login_only(client):
    from ultron_site.models import FirstPassword

    person = person_create(username="newbie", role="curator")
    assert client.login(request=HttpRequest(), username="newbie", password=person.password)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and response["Location"] == reverse("admin:password_change")
    page = client.get(reverse("admin:password_change"))
    # the page says which password is the "old" one
    assert page.status_code == 200 and "one-time password: type it once more as your old password" in page.content.decode()
    changed = client.post(reverse("admin:password_change"), {
        "old_password": person.password, "new_password1": "her-own-password-77", "new_password2": "her-own-password-77"})
    assert changed.status_code == 302
    done = client.get(changed["Location"]).content.decode()
    assert 'id="continue-to-dashboard"' in done and reverse("admin:index") in done  # a way on
    assert client.get(reverse("admin:index")).status_code == 200
    assert "one-time" not in client.get(reverse("admin:password_change")).content.decode()  # her own now
    assert not FirstPassword.objects.exists()


def test_a_memory_opens_its_conversation_with_the_messages_it_came_from_marked(
        admin_client_role, agent, django_capture_on_commit_callbacks):
    from ingestion.models import SegmentMemory

    with django_capture_on_commit_callbacks(execute=True):
        admin_client_role.post(reverse("admin:ingestion_ingestjob_upload"),
                               {"agent": agent.pk, "session_files": [_session_file("a.jsonl")]})
    link = SegmentMemory.objects.select_related("segment").first()
    assert link is not None, "the session gave no memory"
    page = admin_client_role.get(reverse("admin:memories_memory_change", args=[link.memory_id])).content.decode()
    url = reverse("admin:ingestion_tasksegment_conversation", args=[link.segment_id])
    assert f"{url}?memory={link.memory_id}" in page
    marked = admin_client_role.get(url, {"memory": str(link.memory_id)}, HTTP_HX_REQUEST="true").content.decode()
    assert marked.count("source of this memory") >= 1 and "data-first-source" in marked
    plain = admin_client_role.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "source of this memory" not in plain
    assert "source of this memory" not in admin_client_role.get(url, {"memory": "not-an-id"},
                                                                 HTTP_HX_REQUEST="true").content.decode()
    assert str(link.segment) == f"segment {link.segment_id} (session {link.segment.session_id}, part {link.segment.index + 1})"


def test_the_source_messages_are_those_holding_most_of_the_memory():
    from ingestion.selectors import source_messages

    messages = [{"role": "user", "text": "the deploy is slow today"},
                {"role": "tool", "text": "ERROR: psycopg2 OperationalError could not connect to server on port 6432"},
                {"role": "assistant", "text": "pgbouncer listens on 6432; point DATABASE_URL at port 6432 and restart"},
                {"role": "user", "text": "thanks"}]
    memory = ["psycopg2 OperationalError could not connect to server",
              "pgbouncer listens on 6432: point DATABASE_URL at it"]
    assert sorted(source_messages(messages, memory)) == [1, 2]
    assert source_messages(messages, [""]) == []
