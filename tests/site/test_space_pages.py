"""Spaces on the admin site: a curator of one team sees that team's rows only (lists, counts,
the dashboard, a page of another team's memory is missing), the header's switcher narrows the
pages to one space and refuses a space that is not the person's, a memory is promoted to another
space its curator curates (and not to one they do not), and the spaces and members pages are
for hub-wide admins and for a space's own admins."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from agents.models import Membership, Role, Space
from agents.services import agent_create, space_create
from clusters.models import KnowledgeCluster, Skill
from ingestion.models import IngestJob, SessionRecord
from memories.models import Memory, Source
from memories.services import memory_upload
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db

TEXT_A = "team A: the billing service's deploys die with OOMKilled unless -Xmx is set below the pod limit"
TEXT_B = "team B: flaky Cypress runs on CI pass once the viewport is pinned to 1280x720 in the config"


def _login(username: str, spaces: list[tuple[Space, str]], role: str = "curator") -> Client:
    person = person_create(username=username, role=role, password_once=False, spaces=spaces)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client


def _team_rows(space: Space, letter: str, text: str) -> dict:
    agent = agent_create(name=f"agent-{letter}", spaces=[(space, Role.WRITER)])
    memory = memory_upload(content=text, space=space, agent=agent).memory
    skill = Skill.objects.create(space=space, slug=f"skill-{letter}", name=f"Skill of team {letter}")
    cluster = KnowledgeCluster.objects.create(space=space, topic=f"topic of team {letter}", member_count=1,
                                              centroid=[1.0] + [0.0] * (settings.ULTRON_EMBEDDING_DIMENSIONS - 1))
    job = IngestJob.objects.create(space=space, agent=agent)
    session = SessionRecord.objects.create(space=space, agent=agent, identity=f"session-of-team-{letter}.jsonl",
                                           sha256="0" * 64, job=job)
    return {"memory": memory, "skill": skill, "cluster": cluster, "session": session, "job": job}


@pytest.fixture
def teams():
    a, b = space_create(slug="team-a", name="Team A"), space_create(slug="team-b", name="Team B")
    return {"a": a, "b": b, "rows_a": _team_rows(a, "a", TEXT_A), "rows_b": _team_rows(b, "b", TEXT_B)}


def _listed(client: Client, name: str, **params) -> str:
    response = client.get(reverse(f"admin:{name}_changelist"), params)
    assert response.status_code == 200, name
    return response.content.decode()


def test_a_curator_of_one_team_sees_only_that_teams_rows(teams):
    client = _login("carol-a", [(teams["a"], Role.CURATOR)])
    rows_a, rows_b = teams["rows_a"], teams["rows_b"]
    memories = _listed(client, "memories_memory")
    assert "billing service" in memories and "Cypress" not in memories
    assert "team-a" in memories  # the space column
    assert "topic of team a" in (clusters := _listed(client, "clusters_knowledgecluster"))
    assert "topic of team b" not in clusters
    skills = _listed(client, "clusters_skill")
    assert "skill-a" in skills and "skill-b" not in skills
    sessions = _listed(client, "ingestion_sessionrecord")
    assert "session-of-team-a" in sessions and "session-of-team-b" not in sessions
    jobs = _listed(client, "ingestion_ingestjob")
    assert str(rows_a["job"].pk) in jobs and str(rows_b["job"].pk) not in jobs
    # One space: no space filter to offer.
    assert "?space=" not in memories
    # Another team's pages are missing, as if they never existed (the admin's own redirect).
    for name, row in (("memories_memory", rows_b["memory"]), ("clusters_knowledgecluster", rows_b["cluster"]),
                      ("clusters_skill", rows_b["skill"]), ("ingestion_sessionrecord", rows_b["session"])):
        response = client.get(reverse(f"admin:{name}_change", args=[row.pk]))
        assert response.status_code == 302 and response["Location"] == reverse("admin:index"), name
    assert client.get(reverse("admin:memories_memory_similar", args=[rows_b["memory"].pk])).status_code == 404
    # The memory page says its space.
    page = client.get(reverse("admin:memories_memory_change", args=[rows_a["memory"].pk])).content.decode()
    assert "hub-space-badge" in page and "team-a" in page


def test_the_dashboard_counts_only_the_curators_space(teams):
    memory_upload(content="team A again: the nightly export needs the read replica, not the primary",
                  space=teams["a"])
    client = _login("carol-a", [(teams["a"], Role.CURATOR)])
    counts = client.get(reverse("admin:index")).context["memory_counts"]
    assert counts["total"] == 2
    assert sum(item["value"] for item in counts["statuses"]) == 2
    jobs = client.get(reverse("admin:index")).context["jobs"]
    assert [entry["job"].pk for entry in jobs] == [teams["rows_a"]["job"].pk]


def test_the_code_scopes_the_lists_even_where_the_database_would_not(teams):
    """The first wall alone: the admin's querysets are filtered to the person's spaces, whatever
    the connection's scope reads (here a request's scope widened to every space)."""
    from agents.admin_spaces import page_spaces
    from memories.admin import MemoryAdmin

    person = person_create(username="carol-a", role="curator", password_once=False,
                           spaces=[(teams["a"], Role.CURATOR)])
    request = HttpRequest()
    request.user = get_user_model().objects.get(username=person.username)
    request.session = {}  # type: ignore[assignment]
    assert page_spaces(request) == [teams["a"].pk]
    from django.contrib import admin

    shown = MemoryAdmin(Memory, admin.site).get_queryset(request)  # the test runs past the policies
    assert list(shown.values_list("content", flat=True)) == [TEXT_A]


def test_the_switcher_narrows_to_one_space_and_refuses_another_teams(teams):
    client = _login("cora-ab", [(teams["a"], Role.CURATOR), (teams["b"], Role.CURATOR)])
    both = _listed(client, "memories_memory")
    assert "billing service" in both and "Cypress" in both
    assert 'id="space-switcher"' in both and "All my spaces" in both
    assert f"?space={teams['a'].pk}" in both  # the space filter, with two spaces
    switch = reverse("admin:space_switch")
    back = reverse("admin:memories_memory_changelist")
    response = client.post(switch, {"space": teams["b"].pk, "next": back})
    assert response.status_code == 302 and response["Location"] == back
    narrowed = _listed(client, "memories_memory")
    assert "Cypress" in narrowed and "billing service" not in narrowed
    assert f'<option value="{teams["b"].pk}" selected>team-b</option>' in narrowed
    assert client.get(reverse("admin:index")).context["memory_counts"]["total"] == 1
    # A space that is not the person's, a made-up id and junk are refused; the choice stays.
    shared = Space.objects.get(slug="shared")
    other = space_create(slug="team-c")
    for value in (other.pk, shared.pk, 999999):
        assert client.post(switch, {"space": value, "next": back}).status_code == 403
    assert client.post(switch, {"space": "team-a", "next": back}).status_code == 400
    assert client.session["ultron_space"] == teams["b"].pk
    # Back to all; a foreign "next" goes to the dashboard instead.
    response = client.post(switch, {"space": "", "next": "https://elsewhere.example/"})
    assert response["Location"] == reverse("admin:index")
    assert "billing service" in _listed(client, "memories_memory")
    # The switcher only needs POST (a link cannot switch a person's space behind their back).
    assert client.get(switch).status_code == 405


def test_one_space_no_switcher(teams):
    client = _login("carol-a", [(teams["a"], Role.CURATOR)])
    assert 'id="space-switcher"' not in client.get(reverse("admin:index")).content.decode()


def test_a_memory_is_promoted_to_another_space_its_curator_curates(teams):
    shared = Space.objects.get(slug="shared")
    client = _login("cora", [(teams["a"], Role.CURATOR), (shared, Role.CURATOR)])
    source = teams["rows_a"]["memory"]
    page = client.get(reverse("admin:memories_memory_change", args=[source.pk])).content.decode()
    assert 'id="promote-form"' in page and f'<option value="{shared.pk}">shared</option>' in page
    response = client.post(reverse("admin:memories_memory_promote", args=[source.pk]), {"space": shared.pk},
                           follow=True)
    assert response.status_code == 200 and "Promoted to space shared" in response.content.decode()
    copy = Memory.objects.get(space=shared)
    assert (copy.content, copy.memory_type, copy.tags, copy.source) == (
        source.content, source.memory_type, source.tags, Source.CURATOR)
    promoted = copy.provenance["promoted_from"]
    assert (promoted["space"], promoted["memory"], promoted["by"]) == ("team-a", str(source.pk), "cora")
    assert Memory.objects.get(pk=source.pk).space_id == teams["a"].pk  # the source stays
    # Promoted again: the target's own duplicate check merges it into the copy.
    response = client.post(reverse("admin:memories_memory_promote", args=[source.pk]), {"space": shared.pk},
                           follow=True)
    assert "already had this memory" in response.content.decode()
    assert Memory.objects.filter(space=shared).count() == 1


def test_promoting_to_a_space_one_does_not_curate_is_refused(teams):
    shared = Space.objects.get(slug="shared")
    person = person_create(username="rita", role="curator", password_once=False,
                           spaces=[(teams["a"], Role.CURATOR), (shared, Role.READER)])
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    source = teams["rows_a"]["memory"]
    promote = reverse("admin:memories_memory_promote", args=[source.pk])
    for target in (shared, teams["b"]):
        assert client.post(promote, {"space": target.pk}).status_code == 403
    # Nor may another team's memory be promoted from here: it is missing.
    other = reverse("admin:memories_memory_promote", args=[teams["rows_b"]["memory"].pk])
    assert client.post(other, {"space": teams["a"].pk}).status_code == 404
    assert Memory.objects.count() == 2
    # The service refuses the same way for any caller (the API would call it too).
    from memories.services import PromoteError, memory_promote

    with pytest.raises(PromoteError) as refused:
        memory_promote(memory_id=source.pk, target=shared, user=get_user_model().objects.get(username="rita"))
    assert refused.value.code == "permission_denied"


def _published(skill: Skill, body: str) -> Skill:
    from clusters.models import SkillStatus, SkillVersion

    version = SkillVersion.objects.create(space_id=skill.space_id, skill=skill, version=1, name=skill.name,
                                          description="how team A sizes the JVM heap", body=body,
                                          memory_ids=[], status=SkillStatus.PUBLISHED)
    skill.current_version, skill.status = version, SkillStatus.PUBLISHED
    skill.save()
    return skill


def test_a_published_skill_is_promoted_with_its_provenance_and_a_draft_is_not(teams):
    shared = Space.objects.get(slug="shared")
    client = _login("cora", [(teams["a"], Role.CURATOR), (shared, Role.CURATOR)])
    source = teams["rows_a"]["skill"]
    promote = reverse("admin:clusters_skill_promote", args=[source.pk])
    page = client.get(reverse("admin:clusters_skill_change", args=[source.pk])).content.decode()
    assert 'id="promote-form"' not in page  # a draft has nothing to promote
    response = client.post(promote, {"space": shared.pk}, follow=True)
    assert "is not published" in response.content.decode()
    assert not Skill.objects.filter(space=shared).exists()

    _published(source, "# Skill of team a\n\nSet -Xmx to 75% of the pod limit.\n")
    page = client.get(reverse("admin:clusters_skill_change", args=[source.pk])).content.decode()
    assert 'id="promote-form"' in page and f'<option value="{shared.pk}">shared</option>' in page
    response = client.post(promote, {"space": shared.pk}, follow=True)
    assert "Promoted to space shared" in response.content.decode()
    copy = Skill.objects.get(space=shared)
    assert (copy.slug, copy.status, copy.current_version.body) == (
        source.slug, "published", source.current_version.body)
    assert copy.current_version.memory_ids == []  # team A's memories stay in team A
    origin = copy.provenance["promoted_from"]
    assert (origin["space"], origin["skill"], origin["version"], origin["by"]) == ("team-a", "skill-a", 1, "cora")
    copy_page = client.get(reverse("admin:clusters_skill_change", args=[copy.pk])).content.decode()
    assert "Promoted from space team-a (skill skill-a v1) by cora" in copy_page
    # Promoted again: the copy gains a version; a skill of the target's own with that slug is refused.
    response = client.post(promote, {"space": shared.pk}, follow=True)
    assert "version 2 of the copy" in response.content.decode()
    assert Skill.objects.get(space=shared).current_version.version == 2
    other = teams["rows_b"]["skill"]
    _published(other, "# Team B's skill\n")
    both = _login("bert", [(teams["b"], Role.CURATOR), (teams["a"], Role.CURATOR)])
    Skill.objects.filter(pk=source.pk).update(slug="skill-b")  # team A's skill now has team B's slug
    response = both.post(promote, {"space": teams["b"].pk}, follow=True)
    assert "already has a skill &#x27;skill-b&#x27; of its own" in response.content.decode()
    # Another team's skill is missing for a curator of team A alone.
    only_a = _login("ann", [(teams["a"], Role.CURATOR)])
    assert only_a.post(reverse("admin:clusters_skill_promote", args=[other.pk]), {"space": teams["a"].pk}).status_code == 404


def test_an_admin_uploads_sessions_into_the_space_chosen(teams, django_capture_on_commit_callbacks):
    from tests.site.test_admin_pages import _session_file

    client = _login("ada", [(teams["a"], Role.ADMIN), (teams["b"], Role.ADMIN)], role="admin")
    url = reverse("admin:ingestion_ingestjob_upload")
    page = client.get(url).content.decode()
    assert f'<option value="{teams["a"].pk}">team-a</option>' in page and "shared</option>" not in page
    agent = teams["rows_b"]["job"].agent
    response = client.post(url, {"agent": agent.pk, "session_files": [_session_file("a.jsonl")]})
    assert "Choose the space the sessions go to." in response.content.decode()  # two spaces: no guess
    response = client.post(url, {"agent": agent.pk, "space": Space.objects.get(slug="shared").pk,
                                 "session_files": [_session_file("a.jsonl")]})
    assert "Choose one of your spaces." in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"agent": agent.pk, "space": teams["b"].pk,
                                     "session_files": [_session_file("a.jsonl")]})
    assert response.status_code == 302
    uploaded = SessionRecord.objects.exclude(pk__in=[teams["rows_a"]["session"].pk, teams["rows_b"]["session"].pk])
    assert [s.space_id for s in uploaded] == [teams["b"].pk]


def test_spaces_pages_are_for_hub_wide_admins(teams):
    boss = get_user_model().objects.create_superuser("boss", password="a-long-password-for-boss-1")
    client = Client()
    assert client.login(request=HttpRequest(), username="boss", password="a-long-password-for-boss-1")
    listing = _listed(client, "agents_space")
    assert "team-a" in listing and "team-b" in listing and "shared" in listing
    response = client.post(reverse("admin:agents_space_add"),
                           {"slug": "Team-Ops", "name": "Operations", "description": "on call"})
    assert response.status_code == 302
    ops = Space.objects.get(slug="team-ops")
    assert (ops.name, ops.description) == ("Operations", "on call")
    response = client.post(reverse("admin:agents_space_change", args=[ops.pk]),
                           {"name": "Ops", "description": ""})
    assert response.status_code == 302
    ops.refresh_from_db()
    assert (ops.slug, ops.name, ops.description) == ("team-ops", "Ops", "")
    # A taken slug and a bad one are named beside the field.
    taken = client.post(reverse("admin:agents_space_add"), {"slug": "team-a", "name": "x"})
    assert taken.status_code == 200 and "already exists" in taken.content.decode()
    bad = client.post(reverse("admin:agents_space_add"), {"slug": "-bad", "name": "x"})
    assert bad.status_code == 200 and "starting with a letter or digit" in bad.content.decode()
    assert boss.is_superuser
    # A curator sees no spaces page; a space's admin sees only their space and may not add one.
    curator = _login("carol-a", [(teams["a"], Role.CURATOR)])
    assert curator.get(reverse("admin:agents_space_changelist")).status_code == 403
    admin_a = _login("ada", [(teams["a"], Role.ADMIN)], role="admin")
    listing = _listed(admin_a, "agents_space")
    assert "team-a" in listing and "team-b" not in listing
    assert admin_a.get(reverse("admin:agents_space_add")).status_code == 403
    assert admin_a.post(reverse("admin:agents_space_change", args=[teams["a"].pk]),
                        {"name": "Renamed", "description": ""}).status_code == 403
    assert Space.objects.get(pk=teams["a"].pk).name == "Team A"


def test_a_space_admin_manages_that_spaces_members_only(teams):
    admin_a = _login("ada", [(teams["a"], Role.ADMIN)], role="admin")
    newcomer = person_create(username="nina", role="curator", password_once=False, spaces=[])
    agent_b = agent_create(name="agent-b")  # made by _team_rows: reused
    users = get_user_model().objects
    listing = _listed(admin_a, "agents_membership")
    assert "agent:agent-a" in listing and "agent:agent-b" not in listing
    add = reverse("admin:agents_membership_add")
    nina = users.get(username=newcomer.username)
    assert admin_a.post(add, {"space": teams["a"].pk, "user": nina.pk, "role": "curator"}).status_code == 302
    assert Membership.objects.get(user=nina).role == "curator"
    # An agent is a reader or a writer: the service's refusal is shown beside the role.
    refused = admin_a.post(add, {"space": teams["a"].pk, "user": agent_b.user_id, "role": "curator"})
    assert refused.status_code == 200 and "curation stays with people" in refused.content.decode()
    assert not Membership.objects.filter(user=agent_b.user, space=teams["a"]).exists()
    # Another team's space is not among the choices.
    foreign = admin_a.post(add, {"space": teams["b"].pk, "user": nina.pk, "role": "reader"})
    assert foreign.status_code == 200 and not Membership.objects.filter(user=nina, space=teams["b"]).exists()
    # Change a role, then remove the membership (both through the services).
    membership = Membership.objects.get(user=nina, space=teams["a"])
    change = reverse("admin:agents_membership_change", args=[membership.pk])
    assert admin_a.post(change, {"role": "reader"}).status_code == 302
    assert Membership.objects.get(pk=membership.pk).role == "reader"
    delete = reverse("admin:agents_membership_delete", args=[membership.pk])
    assert admin_a.post(delete, {"post": "yes"}).status_code == 302
    assert not Membership.objects.filter(user=nina).exists()
    # Team B's memberships are missing here; a curator has no members page at all.
    b_membership = Membership.objects.get(user=agent_b.user, space=teams["b"])
    response = admin_a.get(reverse("admin:agents_membership_change", args=[b_membership.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")
    assert admin_a.post(reverse("admin:agents_membership_delete", args=[b_membership.pk]),
                        {"post": "yes"}).status_code == 302
    assert Membership.objects.filter(pk=b_membership.pk).exists()
    curator = _login("carol-a", [(teams["a"], Role.CURATOR)])
    assert curator.get(reverse("admin:agents_membership_changelist")).status_code == 403
    assert curator.post(add, {"space": teams["a"].pk, "user": nina.pk, "role": "admin"}).status_code == 403


def test_memories_of_two_spaces_are_never_offered_or_merged_as_one(teams):
    """A curator of two spaces sees both on the pages, but the similar-memories panel keeps to
    the memory's own space and a merge by hand across spaces is refused: memories merge only
    within one space."""
    shared = Space.objects.get(slug="shared")
    client = _login("cora", [(teams["a"], Role.CURATOR), (shared, Role.CURATOR)])
    source = teams["rows_a"]["memory"]
    copy = memory_upload(content=source.content, space=shared).memory
    similar = client.get(reverse("admin:memories_memory_similar", args=[source.pk]))
    assert str(copy.pk) not in similar.content.decode()
    merge = reverse("admin:memories_memory_merge", args=[source.pk, copy.pk])
    response = client.post(merge, follow=True)
    assert "different spaces" in response.content.decode()
    assert Memory.objects.get(pk=source.pk).status == Memory.objects.get(pk=copy.pk).status == "active"
