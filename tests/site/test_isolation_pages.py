"""The isolation suite, the admin site (issue 34): a person of team B — its curator, its space's
admin — opening any admin page with team A's ids gets what a row that never existed gets (the
admin's redirect to the dashboard, or a 404), and no page, list, search-as-you-type answer,
autocomplete or download shows team A's canary, slugs or ids.

The pages are read from the admin site's own URL patterns (``admin.site.get_urls()``: every
registered ModelAdmin's pages and the work views each adds), each parameter filled with team A's
row of its kind (``tests/isolation.py``); a new page is opened the moment it exists. Team A's
curator opens the same pages first: they show team A's rows to it. Every page is opened with GET
and, for the pages of one row, POST (the merge review's and the candidates' decisions, promote,
crystallize, publish, delete, token revoking): afterwards not one row of team A has changed.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse

from agents.models import Membership, Role
from tests.isolation import CANARY, Teams, a_rows_snapshot, leaks, two_teams
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db

NEVER_INT = 123_456_789
# A page's action in its URL: each one it takes (an unknown one is refused before any row is read).
ACTIONS = {"memories_memory_review_action": ["accept", "write"], "memories_memory_candidate_action": ["merge", "dismiss"],
           "memories_memory_change_action": ["undo", "new", "old", "both"],
           "memories_memory_type_action": ["set", "undo"],
           "memories_memory_hold_action": ["approve", "reject", "undo"],
           "memories_memory_report_action": ["archive", "keep", "undo"],
           "clusters_skill_version": ["publish", "reject"],
           "clusters_knowledgecluster_suggestion": ["merge", "dismiss"]}
# What a POST to a row's page sends: enough for each form to reach its row (a merged text, a target
# space, the delete confirmation, a rejection's reason).
POST_DATA = {"post": "yes", "content": f"{CANARY} merged by team B", "reason": "team B says no",
             "memory_type": "life"}
# Pages of the hub itself, not of a space (no row of a space behind them): the django-q queue,
# the lock-out log, the embedding space, the role groups, the pipeline's runs.
HUB_MODELS = {"django_q.Schedule", "django_q.Success", "django_q.Failure", "django_q.OrmQ", "axes.AccessAttempt",
              "axes.AccessLog", "axes.AccessFailureLog", "memories.EmbeddingSpace", "auth.Group", "ultron_site.StepRun"}


@dataclass(frozen=True)
class Page:
    name: str
    route: str  # "memories/memory/<uuid:memory_id>/similar/"
    params: tuple[str, ...]
    model: Any  # the ModelAdmin's model for its own pages; None for the site's


def admin_pages() -> list[Page]:
    """Every URL pattern of the admin site, with the model whose admin it belongs to."""
    by_prefix = {f"{m._meta.app_label}/{m._meta.model_name}/": m for m in admin.site._registry}
    pages = []

    def walk(patterns, prefix: str, model: Any) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                route = prefix + str(pattern.pattern)
                walk(pattern.url_patterns, route, by_prefix.get(route, model))
            elif isinstance(pattern, URLPattern) and pattern.name:
                params = getattr(pattern.pattern, "converters", None) or pattern.pattern.regex.groupindex
                pages.append(Page(pattern.name, prefix + str(pattern.pattern), tuple(params), model))

    walk(admin.site.get_urls(), "", None)
    return pages


def _a_rows(teams: Teams) -> dict[str, Any]:
    """Team A's row of each kind, by model label, and by the name the work views give its id."""
    from agents.models import ApiToken

    rows: dict[str, Any] = {}
    for model in apps.get_models():
        if any(f.name == "space" and f.is_relation for f in model._meta.get_fields()):
            first = model.objects.filter(space=teams.a.space).order_by("pk").first()
            if first is not None:
                rows[model._meta.label] = first.pk
    rows["agents.Space"] = teams.a.space.pk
    rows["agents.Membership"] = Membership.objects.get(space=teams.a.space, user=teams.a.agent.user).pk
    rows["agents.Agent"] = teams.a.agent.pk  # a writer of team A only
    rows["auth.User"] = teams.a.agent.user_id
    rows["ingestion.IngestJob"] = uuid.UUID(teams.a.job_id)
    from memories.models import MemoryEdit

    edit = MemoryEdit.objects.create(space=teams.a.space, memory_id=teams.a.memory_id, editor="carol-a", action="edit",
                                     before={"content": f"{CANARY} before"}, after={"content": "after"})
    return {**rows, "memory_id": uuid.UUID(teams.a.memory_id), "other_id": uuid.UUID(teams.a.memory_ids[1]),
            "contribution_id": teams.a.contribution_id, "candidate_id": teams.a.candidate_id,
            "change_id": teams.a.change_id, "cluster_change_id": teams.a.cluster_change_id,
            "suggestion_id": teams.a.suggestion_id, "type_change_id": teams.a.type_change_id,
            "cluster_id": teams.a.cluster_id, "skill_id": teams.a.skill_id, "version_id": teams.a.version_id,
            "job_id": uuid.UUID(teams.a.job_id), "segment_id": teams.a.segment_ids[0], "raw_id": teams.a.raw_ids[0],
            "token_id": ApiToken.objects.filter(agent=teams.a.agent).values_list("pk", flat=True).first(),
            "hold_id": teams.a.hold_id, "agent_id": teams.a.agent.pk, "batch": teams.a.hold_batch,
            "report_id": teams.a.report_id, "edit_id": edit.pk,
            "id": teams.a.agent.user_id}


def _never(value: Any) -> Any:
    return uuid.uuid4() if isinstance(value, uuid.UUID) else NEVER_INT


def _urls(page: Page, rows: dict[str, Any]) -> list[tuple[str, str]]:
    """The page's URLs for team A's row and for a row that never existed (one pair per action)."""
    values: dict[str, Any] = {}
    for param in page.params:
        if param == "action":
            continue
        key = page.model._meta.label if param == "object_id" and page.model else param
        assert key in rows, f"{page.name}: no row of team A for {param} (add it to _a_rows)"
        values[param] = rows[key]
    pairs = []
    for action in ACTIONS.get(page.name, [None]):
        extra = {"action": action} if action else {}
        seen = values
        never = {k: _never(v) for k, v in seen.items()}
        pairs.append((reverse(f"admin:{page.name}", kwargs={**seen, **extra}),
                      reverse(f"admin:{page.name}", kwargs={**never, **extra})))
    return pairs


def _login(username: str, space, role: str) -> Client:
    person = person_create(username=username, role=role, password_once=False, spaces=[(space, role)])
    client = Client()
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username=person.username))
    return client


@pytest.fixture
def teams(settings) -> Teams:
    return two_teams(settings)


def _row_pages() -> list[Page]:
    """The pages of one row (they take its id), of a space's rows (hub pages aside)."""
    return [p for p in admin_pages() if p.params and "app_label" not in p.params and "url" not in p.params
            and p.name != "view_on_site" and (p.model is None or p.model._meta.label not in HUB_MODELS)]


def test_the_suite_opens_every_admin_page():
    pages = admin_pages()
    assert len(pages) == 156, len(pages)  # a new page changes this number, and is opened below
    assert {p.model._meta.label for p in pages if p.model} == {m._meta.label for m in admin.site._registry}


@pytest.mark.parametrize("role", [Role.CURATOR, Role.ADMIN])
def test_team_as_rows_are_missing_on_every_page_of_one_row(teams, role):
    """As team B's curator and its space's admin: each page of one of team A's rows answers what
    it answers for a row that never existed (status and where it redirects), GET and POST, shows
    nothing of team A, and changes nothing of it. Team A's curator gets the pages themselves."""
    rows = _a_rows(teams)
    pages = _row_pages()
    own = _login("carol-a", teams.a.space, Role.CURATOR)
    shown_to_a = sum(own.get(seen).status_code == 200 for page in pages for seen, _ in _urls(page, rows))
    assert shown_to_a >= 20, shown_to_a  # the URLs reach team A's rows
    before = a_rows_snapshot(teams)
    client = _login(f"{role}-b", teams.b.space, role)
    data = {**POST_DATA, "space": teams.b.space.pk}  # promote: to team B's own space
    problems = []
    for page in pages:
        for seen_url, never_url in _urls(page, rows):
            for method, extra in (("get", {}), ("get", {"HTTP_HX_REQUEST": "true"}), ("post", {})):
                send = getattr(client, method)
                seen = send(seen_url, data, **extra) if method == "post" else send(seen_url, **extra)
                never = send(never_url, data, **extra) if method == "post" else send(never_url, **extra)
                if (seen.status_code, seen.get("Location")) != (never.status_code, never.get("Location")):
                    problems.append(f"{method} {seen_url}: {seen.status_code} {seen.get('Location')}, a row that never "
                                    f"existed: {never.status_code} {never.get('Location')}")
                if seen.status_code == 200:
                    problems.append(f"{method} {seen_url}: 200")
                allowed = tuple(str(v) for v in rows.values())
                if found := leaks(teams, _text(seen), allowed=allowed):
                    problems.append(f"{method} {seen_url}: {found}")
    assert not problems, "\n".join(problems)
    assert a_rows_snapshot(teams) == before


def _text(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8", "replace")


def _list_urls() -> list[str]:
    """The pages without a row's id (every app's index too); logging out, switching spaces and
    running the pipeline are POSTs that show nothing."""
    urls = [reverse(f"admin:{p.name}") for p in admin_pages()
            if not p.params and p.name not in ("logout", "space_switch", "pipeline_run")]
    return urls + [reverse("admin:app_list", args=[label]) for label in sorted(
        {m._meta.app_label for m in admin.site._registry})]


@pytest.mark.parametrize("role", [Role.CURATOR, Role.ADMIN])
def test_no_list_search_or_dashboard_shows_team_a(teams, role):
    """Every page without an id — the dashboard, each list (searched for the canary, filtered to
    team A's space, as the search-as-you-type partial), the merge review, the upload page, the
    theme's search — and the admin's autocomplete on every relation, as team B's person: nothing of
    team A. Team A's curator finds its canary on the same lists."""
    own = _login("carol-a", teams.a.space, Role.CURATOR)
    found_by_a = [url for url in _list_urls() if CANARY in _text(own.get(url, {"q": CANARY})).replace(
        f'value="{CANARY}"', "")]
    assert {reverse(f"admin:{name}_changelist") for name in (
        "memories_memory", "clusters_knowledgecluster", "clusters_skill", "ingestion_sessionrecord",
        "ingestion_tasksegment")} <= set(found_by_a), found_by_a
    client = _login(f"{role}-b", teams.b.space, role)
    problems = []
    search, memories = reverse("admin:search"), reverse("admin:memories_memory_changelist")
    for url in _list_urls():
        requests = [({}, {}), ({"q": CANARY}, {})]
        if url.endswith("/") and url.count("/") == 4:  # a list: filtered to team A's space too
            requests.append(({"space": teams.a.space.pk}, {}))
        if url == search:  # the theme's search over the apps and models
            requests.append(({"s": CANARY, "extended": "1"}, {}))
        if url == memories:  # the search as you type: the list's partial
            requests.append(({"q": CANARY}, {"HTTP_HX_REQUEST": "true"}))
        for query, extra in requests:
            response = client.get(url, query, **extra)
            assert response.status_code < 500, (url, query, response.status_code)
            text = _text(response)
            if url == reverse("admin:agents_membership_add"):
                # By design: a space's admin adds people and agents of the hub to their space,
                # chosen among all of them (the user menu names everyone, as a hub-wide list).
                text = re.sub(r'<select name="user".*?</select>', "", text, flags=re.S)
            if found := leaks(teams, text, allowed=(CANARY,) if "q" in query or "s" in query else ()):
                problems.append(f"{url} {query}: {found}")
    for url, query in _autocompletes(teams):
        response = client.get(url, query)
        assert response.status_code < 500, (url, query)
        if found := leaks(teams, _text(response), allowed=(CANARY,)):
            problems.append(f"{url} {query}: {found}")
    assert not problems, "\n".join(problems)


def _autocompletes(teams: Teams) -> list[tuple[str, dict]]:
    """The admin's autocomplete (select2's JSON) for every relation whose target has a search:
    the term is team A's canary."""
    url = reverse("admin:autocomplete")
    found = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            target = getattr(field, "related_model", None)
            if not getattr(field, "concrete", False) or target not in admin.site._registry:
                continue
            if admin.site._registry[target].search_fields:
                found.append((url, {"app_label": model._meta.app_label, "model_name": model._meta.model_name,
                                    "field_name": field.name, "term": CANARY}))
    assert len(found) >= 5, found
    return found


def test_a_space_admin_gives_tokens_to_its_own_agents_only(teams):
    """Tokens open every space of their agent: team B's admin may not issue one for team A's agent
    (nor revoke its tokens, above), and an agent they create works in their space, not in the
    shared space they do not administer."""
    from agents.models import Agent, ApiToken

    client = _login("admin-b", teams.b.space, Role.ADMIN)
    tokens = ApiToken.objects.filter(agent=teams.a.agent).count()
    response = client.post(reverse("admin:agents_agent_changelist"),
                           {"action": "issue_token", "_selected_action": [teams.a.agent.pk]})
    assert response.status_code in (200, 302) and "ult_" not in _text(response)
    assert ApiToken.objects.filter(agent=teams.a.agent).count() == tokens
    listed = _text(client.get(reverse("admin:agents_agent_changelist")))
    assert teams.b.agent.name in listed and teams.a.agent.name not in listed
    # Its own agent: a token, shown once.
    response = client.post(reverse("admin:agents_agent_changelist"),
                           {"action": "issue_token", "_selected_action": [teams.b.agent.pk]})
    assert "ult_" in _text(response)
    response = client.post(reverse("admin:agents_agent_add"), {"name": "made-by-b", "space": teams.b.space.pk})
    assert response.status_code == 200 and "ult_" in _text(response)
    made = Agent.objects.get(name="made-by-b")
    assert made.default_space_id == teams.b.space.pk
    assert list(Membership.objects.filter(user=made.user).values_list("space_id", flat=True)) == [teams.b.space.pk]
    refused = client.post(reverse("admin:agents_agent_add"), {"name": "made-in-a", "space": teams.a.space.pk})
    assert refused.status_code == 200 and not Agent.objects.filter(name="made-in-a").exists()
