"""The clusters and skills pages: crystallize queues the work and shows the result, a skill is
rendered sanitised, versions can be rolled back and rejected by curators."""

from __future__ import annotations

import pytest
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from clusters import services
from clusters.models import KnowledgeCluster, Skill, SkillStatus, SkillVersion
from tests.clusters.test_services import _embedding_space, _fill  # noqa: F401  (fixture)
from tests.spaces import curate_shared
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator_client() -> Client:
    person = person_create(username="cora", role="curator", password_once=False)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client


def test_crystallize_button_queues_and_the_panel_shows_the_result(curator_client, django_capture_on_commit_callbacks):
    members = _fill(6)
    cluster = members[0].cluster_member.cluster
    page = curator_client.get(reverse("admin:clusters_knowledgecluster_change", args=[cluster.pk])).content.decode()
    assert "Crystallize now" in page and "ready now" in page
    url = reverse("admin:clusters_knowledgecluster_crystallize", args=[cluster.pk])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = curator_client.post(url, HTTP_HX_REQUEST="true")
    assert "queued" in response.content.decode() and 'hx-trigger="every 2s"' in response.content.decode()
    assert len(queued) == 1 and not Skill.objects.exists()  # nothing ran in the request
    queued[0]()  # the worker (sync queue in tests)
    cluster.refresh_from_db()
    assert cluster.last_crystallization_result == "published"
    since = response.content.decode().split("since=")[1].split('"')[0]
    done = curator_client.get(reverse("admin:clusters_knowledgecluster_crystallization", args=[cluster.pk]),
                              {"since": since.replace("%3A", ":").replace("%2B", "+")}, HTTP_HX_REQUEST="true")
    body = done.content.decode()
    assert "published" in body and "hx-trigger" not in body and "Read the skill" in body


def test_a_skill_page_renders_markdown_without_script(curator_client):
    members = _fill(6)
    version = services.cluster_crystallize(cluster_id=members[0].cluster_member.cluster.pk)
    SkillVersion.objects.filter(pk=version.pk).update(
        body=version.body + "\n\n<script>alert('x')</script>\n\n<img src=x onerror=alert(1)>\n")
    page = curator_client.get(reverse("admin:clusters_skill_change", args=[version.skill_id])).content.decode()
    assert "<h2>Steps</h2>" in page or "<h2>Steps" in page
    assert "<script>alert('x')</script>" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # shown as text, escaped
    download = curator_client.get(reverse("admin:clusters_skill_download", args=[version.skill_id]))
    assert download["Content-Disposition"].endswith('-SKILL.md"') and b"## Steps" in download.content


def test_rejecting_the_published_version_rolls_back_to_the_previous_one(curator_client):
    members = _fill(6)
    cluster_id = members[0].cluster_member.cluster.pk
    first = services.cluster_crystallize(cluster_id=cluster_id)
    second = SkillVersion.objects.create(skill=first.skill, version=2, name=first.name, body=first.body + "\nmore",
                                         memory_ids=first.memory_ids, status=SkillStatus.DRAFT)
    curator_client.post(reverse("admin:clusters_skill_version", args=[second.pk, "publish"]))
    skill = Skill.objects.get()
    assert skill.current_version_id == second.pk
    page = curator_client.get(reverse("admin:clusters_skill_change", args=[skill.pk])).content.decode()
    assert "Changes from version 1" in page and "Roll back to this" in page
    curator_client.post(reverse("admin:clusters_skill_version", args=[second.pk, "reject"]), {"reason": "worse"})
    skill.refresh_from_db()
    assert skill.current_version_id == first.pk and skill.status == SkillStatus.PUBLISHED
    assert SkillVersion.objects.get(pk=second.pk).status == SkillStatus.REJECTED


def test_a_viewer_without_the_permissions_cannot_crystallize_or_publish(client):
    from django.contrib.auth.models import Permission, User

    members = _fill(6)
    cluster = KnowledgeCluster.objects.get(pk=members[0].cluster_member.cluster_id)
    version = services.cluster_crystallize(cluster_id=cluster.pk)
    user = User.objects.create_user("ivy", password="pw-ivy-12345", is_staff=True)
    curate_shared(user)  # people see the spaces they curate
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_knowledgecluster", "view_skill"]))
    client.force_login(user)
    assert client.post(reverse("admin:clusters_knowledgecluster_crystallize", args=[cluster.pk])).status_code == 403
    assert client.post(reverse("admin:clusters_skill_version", args=[version.pk, "reject"])).status_code == 403


def test_a_curator_sees_the_members_of_a_cluster(curator_client):
    members = _fill(6)
    cluster = members[0].cluster_member.cluster
    page = curator_client.get(reverse("admin:clusters_knowledgecluster_change", args=[cluster.pk])).content.decode()
    assert "similarity to the centroid" in page
    assert members[0].content[:30] in page


def test_a_cluster_too_small_for_a_skill_is_not_offered_crystallize_now(curator_client, settings):
    members = _fill(6)
    cluster = members[0].cluster_member.cluster
    settings.ULTRON_CRYSTALLIZATION_THRESHOLD = cluster.member_count + 1
    page = curator_client.get(reverse("admin:clusters_knowledgecluster_change", args=[cluster.pk])).content.decode()
    assert "Crystallize now" not in page
    assert f"A skill is written from {cluster.member_count + 1} memories or more" in page
