"""Skills as files (docs/api.md#download-a-skill): SKILL.md alone or the folder as a zip,
through the API (authenticated) and the admin skill page; a crystallized skill's front matter
is what Claude Code reads."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
import yaml
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from clusters import services
from clusters.models import SkillStatus
from tests.clusters.test_services import _embedding_space, _fill, angle, make  # noqa: F401  (fixture)
from tests.clusters.test_skills import SIX
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def published():
    members = _fill(6)
    version = services.cluster_crystallize(cluster_id=members[0].cluster_member.cluster_id)
    assert version.status == SkillStatus.PUBLISHED, version.reason
    return version


def test_skill_md_alone_needs_a_token_and_is_markdown_claude_code_reads(api, outsider_api, published):
    url = reverse("skill-file", args=[published.skill.slug])
    assert Client().get(url).status_code == 401
    assert outsider_api.get(url).status_code == 401
    response = api.get(url, HTTP_ACCEPT="text/markdown")
    assert response.status_code == 200 and response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="SKILL.md"'
    body = response.content.decode()
    front = yaml.safe_load(body.split("---\n")[1])
    assert front["name"] == published.skill.slug and front["description"].count("Use when") == 1
    assert body == published.body


def test_the_folder_zip_holds_the_skill_and_every_memory_it_cites(api, published):
    response = api.get(reverse("skill-package", args=[published.skill.slug]), HTTP_ACCEPT="application/zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{published.skill.slug}.zip"'
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    slug = published.skill.slug
    assert sorted(archive.namelist()) == [f"{slug}/SKILL.md", f"{slug}/references/memories.md"]
    skill = archive.read(f"{slug}/SKILL.md").decode()
    memories = archive.read(f"{slug}/references/memories.md").decode()
    assert skill.startswith(published.body.rstrip("\n")) and "references/memories.md" in skill
    cited = set(re.findall(r"\[m:([0-9a-f]{8})\]", published.body))
    assert cited and cited == set(re.findall(r"^## m:([0-9a-f]{8})$", memories, re.M))
    assert "Django cannot reach PostgreSQL" in memories


def test_agents_cannot_download_an_unpublished_skill_but_curators_can(api, curator_api, published):
    services.skill_version_reject(version_id=published.pk, reason="not good")
    slug = published.skill.slug
    assert api.get(reverse("skill-file", args=[slug])).status_code == 404
    assert api.get(reverse("skill-package", args=[slug])).json()["error"] == "not_found"
    assert curator_api.get(reverse("skill-file", args=[slug])).content.decode() == published.body
    assert api.get(reverse("skill-file", args=["no-such-skill"])).status_code == 404


def test_the_issues_six_memories_are_not_published_as_a_skill():
    members = [make(angle(0.95 + 0.005 * i, axis=1 + i), content=c, context=x, resolution=r)
               for i, (c, x, r) in enumerate(SIX)]
    cluster = members[0].cluster_member.cluster
    cluster.topic = "layout · modulenotfounderror · package · pytest"
    cluster.save(update_fields=["topic"])
    assert services.cluster_crystallize(cluster_id=cluster.pk) is None
    cluster.refresh_from_db()
    assert cluster.last_crystallization_result == "insufficient"
    assert "only 2 distinct steps" in cluster.last_crystallization_reason


def test_the_admin_skill_page_renders_the_skill_and_offers_both_downloads(published):
    person = person_create(username="cora", role="curator", password_once=False)
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    page = client.get(reverse("admin:clusters_skill_change", args=[published.skill_id])).content.decode()
    assert f"<h1>{published.name}</h1>" in page and "<h2>Steps</h2>" in page and "<ol>" in page
    assert "Download SKILL.md" in page and reverse("admin:clusters_skill_package", args=[published.skill_id]) in page
    assert "distinct_steps" in page  # the quality bar's criteria are shown
    download = client.get(reverse("admin:clusters_skill_package", args=[published.skill_id]))
    assert download["Content-Type"] == "application/zip"
    assert f"{published.skill.slug}/SKILL.md" in zipfile.ZipFile(io.BytesIO(download.content)).namelist()
