"""Clusters by hand in the admin site: the cluster page's merge, split, move and undo, and the
review queue's rows for the repair's changes (Undo) and merge suggestions (Merge / Not one
topic); another space's curator finds none of it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from agents.models import Role
from agents.services import space_create
from clusters.models import ClusterChange, ClusterSuggestion, KnowledgeCluster
from clusters.services.repair import clusters_repair
from tests.clusters.test_manual import _cluster_of, _exact_everywhere, _members, _two_clusters
from tests.clusters.test_services import _embedding_space  # noqa: F401  (fixture)
from tests.spaces import curate_shared
from ultron_site.people import person_create

pytestmark = pytest.mark.django_db
QUEUE = "admin:memories_memory_queue"


def _login(username: str, **kwargs) -> Client:
    person = person_create(username=username, role="curator", password_once=False, **kwargs)
    if not kwargs:
        curate_shared(get_user_model().objects.get(username=username))
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    return client


@pytest.fixture
def curator() -> Client:
    return _login("cora")


def _repaired_with_a_suggestion(settings):
    """Two clusters the repair pass suggests merging (close, not close enough to merge alone)."""
    a, b = _two_clusters(settings)
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.9
    clusters_repair()
    return a, b, ClusterSuggestion.objects.get()


def test_the_cluster_page_merges_splits_moves_and_undoes(curator, settings):
    a, b = _two_clusters(settings)
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    page = curator.get(reverse("admin:clusters_knowledgecluster_change", args=[second])).content.decode()
    assert "Change this cluster" in page and f'<option value="{first}">' in page  # the nearest cluster to merge
    assert f'value="{b[2].pk}"' in page  # a member to split off or move

    response = curator.post(reverse("admin:clusters_knowledgecluster_merge", args=[second]), {"other": first})
    assert response.status_code == 302 and response["Location"] == reverse(
        "admin:clusters_knowledgecluster_change", args=[second])
    assert not KnowledgeCluster.objects.filter(pk=first).exists()
    merge = ClusterChange.objects.get(kind="merge")
    assert merge.decided_by == "cora"

    curator.post(reverse("admin:clusters_knowledgecluster_split", args=[second]),
                 {"memory_ids": [str(a[0].pk), str(a[1].pk)]})
    split = ClusterChange.objects.get(kind="split")
    assert _members(split.to_cluster_id) == {str(a[0].pk), str(a[1].pk)}

    curator.post(reverse("admin:clusters_knowledgecluster_move", args=[second]),
                 {"memory_id": str(b[0].pk), "to_cluster_id": str(split.to_cluster_id)})
    assert _cluster_of(b[0]) == split.to_cluster_id
    _exact_everywhere()

    page = curator.get(reverse("admin:clusters_knowledgecluster_change", args=[second])).content.decode()
    assert page.count(">Undo</button>") == 3
    # The merge waits for the changes after it; undone newest first, everything is back.
    refused = curator.post(reverse("admin:clusters_knowledgecluster_undo", args=[merge.pk]), follow=True)
    assert "undo it first" in refused.content.decode()
    for change in ClusterChange.objects.order_by("-pk"):
        assert curator.post(reverse("admin:clusters_knowledgecluster_undo", args=[change.pk])).status_code == 302
    assert _members(first) == {str(m.pk) for m in a} and _members(second) == {str(m.pk) for m in b}
    _exact_everywhere()


def test_a_refused_action_says_why_and_changes_nothing(curator, settings):
    _, b = _two_clusters(settings)
    cluster = _cluster_of(b[0])
    page = curator.post(reverse("admin:clusters_knowledgecluster_split", args=[cluster]),
                        {"memory_ids": [str(m.pk) for m in b]}, follow=True).content.decode()
    assert "both sides" in page
    page = curator.post(reverse("admin:clusters_knowledgecluster_merge", args=[cluster]), {"other": "x"},
                        follow=True).content.decode()
    assert "not a cluster id" in page
    assert not ClusterChange.objects.exists()


def test_the_queue_shows_the_repairs_changes_with_undo_and_suggestions_with_merge_and_not_one_topic(curator, settings):
    a, b, suggestion = _repaired_with_a_suggestion(settings)
    url = reverse(QUEUE)
    page = curator.get(url, {"kind": "cluster_suggestion"}).content.decode()
    assert "Cluster merge suggestions (1)" in page and f'id="clustersuggestion-{suggestion.pk}"' in page
    assert "words both use" in page and "postgres" in page and 'data-key="m"' in page and 'data-key="d"' in page
    # "Not one topic" from the queue, as htmx: the row settles, and the pair is not suggested again.
    response = curator.post(reverse("admin:clusters_knowledgecluster_suggestion", args=[suggestion.pk, "dismiss"]),
                            HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"clustersuggestion-{suggestion.pk}")
    assert "not be suggested again" in response.content.decode() and response["HX-Trigger"] == "merge-reviewed"
    assert "Cluster merge suggestions (0)" in curator.get(url).content.decode()

    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8  # now the repair merges them itself
    clusters_repair()
    change = ClusterChange.objects.get()
    page = curator.get(url, {"kind": "cluster_move"}).content.decode()
    assert "Cluster changes (1)" in page and f'id="clusterchange-{change.pk}"' in page
    row = page[page.index(f'id="clusterchange-{change.pk}"'):][:1500]
    assert "Repair merged 2 memories" in row and 'data-key="u"' in row, row
    response = curator.post(reverse("admin:clusters_knowledgecluster_undo", args=[change.pk]),
                            {"next": url + "?kind=cluster_move"})
    assert response["Location"] == url + "?kind=cluster_move"
    assert _members(_cluster_of(a[0])) == {str(m.pk) for m in a}
    assert "Cluster changes (0)" in curator.get(url).content.decode()


def test_merging_a_suggestion_from_the_queue(curator, settings):
    a, b, suggestion = _repaired_with_a_suggestion(settings)
    response = curator.post(reverse("admin:clusters_knowledgecluster_suggestion", args=[suggestion.pk, "merge"]))
    assert response.status_code == 302
    assert _members(_cluster_of(b[0])) == {str(m.pk) for m in a + b}
    assert ClusterChange.objects.get().decided_by == "cora"


def test_another_spaces_curator_finds_none_of_it(settings):
    a, b, suggestion = _repaired_with_a_suggestion(settings)
    other = space_create(slug="team-b", name="Team B")
    outsider = _login("bob", spaces=[(other, Role.CURATOR)])
    page = outsider.get(reverse(QUEUE)).content.decode()
    assert "Cluster merge suggestions (0)" in page and "clustersuggestion-" not in page
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    for url, data in ((reverse("admin:clusters_knowledgecluster_suggestion", args=[suggestion.pk, "merge"]), {}),
                      (reverse("admin:clusters_knowledgecluster_merge", args=[second]), {"other": first}),
                      (reverse("admin:clusters_knowledgecluster_split", args=[second]), {"memory_ids": [str(b[0].pk)]}),
                      (reverse("admin:clusters_knowledgecluster_move", args=[second]),
                       {"memory_id": str(b[0].pk), "to_cluster_id": first})):
        assert outsider.post(url, data).status_code == 404, url
    assert not ClusterChange.objects.exists() and KnowledgeCluster.objects.filter(pk=first).exists()



def test_a_cluster_change_is_undone_from_the_memorys_page_with_the_same_refusals(curator, settings):
    from clusters.services import cluster_split, clusters_merge

    a, b = _two_clusters(settings)
    first, second = _cluster_of(a[0]), _cluster_of(b[0])
    merge = clusters_merge(into=second, other=first, user="cora")
    page_url = reverse("admin:memories_memory_change", args=[a[0].pk])
    page = curator.get(page_url).content.decode()
    panel = page[page.index('id="memory-cluster-changes"'):]
    assert "Merge</strong> by cora" in panel and "with 1 other memory" in panel
    undo = reverse("admin:clusters_knowledgecluster_undo", args=[merge.pk])
    assert f'action="{undo}"' in panel and f'name="next" value="{page_url}"' in panel
    # A memory no change moved has no such panel.
    assert 'id="memory-cluster-changes"' not in curator.get(
        reverse("admin:memories_memory_change", args=[b[0].pk])).content.decode()

    # A later change stands on the merge: undone from the memory's page, it is refused with the reason, back here.
    split = cluster_split(cluster_id=second, memory_ids=[str(b[2].pk)], user="cora")
    refused = curator.post(undo, {"next": page_url})
    assert refused.status_code == 302 and refused["Location"] == page_url
    assert "undo it first" in curator.get(page_url).content.decode()
    assert _cluster_of(a[0]) == second

    # Undone newest first (the split from its own memory's page), the merge then goes back too.
    b2_page = reverse("admin:memories_memory_change", args=[b[2].pk])
    assert curator.post(reverse("admin:clusters_knowledgecluster_undo", args=[split.pk]),
                        {"next": b2_page})["Location"] == b2_page
    done = curator.post(undo, {"next": page_url})
    assert done["Location"] == page_url
    assert _members(first) == {str(m.pk) for m in a} and _members(second) == {str(m.pk) for m in b}
    _exact_everywhere()
    page = curator.get(page_url).content.decode()
    assert "back where they were" in page and "undone by cora" in page
    assert f'action="{undo}"' not in page  # nothing left to undo for it
    # Only the hub's own pages are followed back to.
    assert curator.post(reverse("admin:clusters_knowledgecluster_undo", args=[merge.pk]),
                        {"next": "https://example.com" + page_url})["Location"] != "https://example.com" + page_url


def test_another_spaces_curator_neither_sees_nor_undoes_a_change_from_a_memorys_page(settings):
    from clusters.services import clusters_merge

    a, b = _two_clusters(settings)
    merge = clusters_merge(into=_cluster_of(b[0]), other=_cluster_of(a[0]), user="cora")
    other = space_create(slug="team-b", name="Team B")
    outsider = _login("bob", spaces=[(other, Role.CURATOR)])
    page = outsider.get(reverse("admin:memories_memory_change", args=[a[0].pk]))
    assert "memory-cluster-changes" not in page.content.decode()
    response = outsider.post(reverse("admin:clusters_knowledgecluster_undo", args=[merge.pk]),
                             {"next": reverse("admin:memories_memory_change", args=[a[0].pk])})
    assert response.status_code == 404
    assert ClusterChange.objects.get().undone_at is None


DECIDE = "admin:memories_memory_queue_decide"


def test_cluster_rows_are_selectable_and_decided_in_bulk_with_the_actions_that_apply(curator, settings):
    a, b, suggestion = _repaired_with_a_suggestion(settings)
    page = curator.get(reverse(QUEUE), {"kind": "cluster_suggestion"}).content.decode()
    assert f'name="items" value="clustersuggestion:{suggestion.pk}"' in page
    assert 'value="undo"' in page  # the bulk bar's Undo

    # "Undo" does not apply to a suggestion; "Different" is "not one topic"; a row that never existed fails.
    decide = reverse(DECIDE)
    curator.post(decide, {"action": "undo", "items": [f"clustersuggestion:{suggestion.pk}", "clustersuggestion:987654"]})
    page = curator.get(reverse(QUEUE)).content.decode()
    assert "0 decided, 1 skipped (the action does not apply to them), 1 failed: That item no longer exists." in page
    curator.post(decide, {"action": "different", "items": [f"clustersuggestion:{suggestion.pk}"]})
    suggestion.refresh_from_db()
    assert suggestion.status == "dismissed" and suggestion.decided_by == "cora"

    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8  # the repair merges them itself
    clusters_repair()
    change = ClusterChange.objects.get()
    page = curator.get(reverse(QUEUE), {"kind": "cluster_move"}).content.decode()
    assert f'name="items" value="clusterchange:{change.pk}"' in page
    curator.post(decide, {"action": "merge", "items": [f"clusterchange:{change.pk}"]})  # does not apply
    assert ClusterChange.objects.get().undone_at is None
    response = curator.post(decide, {"action": "undo", "items": [f"clusterchange:{change.pk}"],
                                     "next": reverse(QUEUE) + "?kind=cluster_move"})
    assert response["Location"] == reverse(QUEUE) + "?kind=cluster_move"
    assert "Undone: 2 memories are back where they were." in curator.get(reverse(QUEUE)).content.decode()
    assert _members(_cluster_of(a[0])) == {str(m.pk) for m in a} and _cluster_of(a[0]) != _cluster_of(b[0])
    _exact_everywhere()
    # Undone already: refused with the reason (a single row, as htmx: the row settles with it).
    response = curator.post(decide, {"action": "undo", "items": [f"clusterchange:{change.pk}"]},
                            HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"clusterchange-{change.pk}")
    assert "undone already, by cora" in response.content.decode()


def test_bulk_merge_of_suggestions_and_bulk_undo_newest_first(curator, settings):
    a, b, suggestion = _repaired_with_a_suggestion(settings)
    decide = reverse(DECIDE)
    curator.post(decide, {"action": "merge", "items": [f"clustersuggestion:{suggestion.pk}"]})
    assert _cluster_of(a[0]) == _cluster_of(b[0])
    merge = ClusterChange.objects.get()
    assert merge.decided_by == "cora"
    from clusters.services import cluster_split

    split = cluster_split(cluster_id=_cluster_of(a[0]), memory_ids=[str(b[2].pk)], user="cora")
    # Selected oldest first, they are undone newest first (the split stands on the merge).
    curator.post(decide, {"action": "undo", "items": [f"clusterchange:{merge.pk}", f"clusterchange:{split.pk}"]})
    assert "2 decided." in curator.get(reverse(QUEUE)).content.decode()
    assert _members(_cluster_of(a[0])) == {str(m.pk) for m in a} and _members(_cluster_of(b[0])) == {str(m.pk) for m in b}
    _exact_everywhere()


def test_another_spaces_cluster_rows_answer_in_bulk_as_rows_that_never_existed(settings):
    a, b, suggestion = _repaired_with_a_suggestion(settings)
    other = space_create(slug="team-b", name="Team B")
    outsider = _login("bob", spaces=[(other, Role.CURATOR)])
    for token in (f"clustersuggestion:{suggestion.pk}", "clustersuggestion:987654"):
        response = outsider.post(reverse(DECIDE), {"action": "merge", "items": [token]}, HTTP_HX_REQUEST="true",
                                 HTTP_HX_TARGET="clustersuggestion-1")
        assert "That item no longer exists." in response.content.decode()
    assert ClusterSuggestion.objects.get().status == "open" and not ClusterChange.objects.exists()


def test_the_dashboard_counts_merge_suggestions_and_links_into_the_queue_on_that_kind(curator, settings):
    def count(client: Client) -> str:
        page = client.get(reverse("admin:index")).content.decode()
        href = f'href="{reverse(QUEUE)}?kind=cluster_suggestion"'
        if href not in page:  # the dashboard lists only the kinds that have something waiting
            return "0"
        stat = page[page.index(href):][:300]
        return re.search(r'hub-stat-value">(\d+)<', stat).group(1)

    assert count(curator) == "0"
    _repaired_with_a_suggestion(settings)
    assert count(curator) == "1"
    other = space_create(slug="team-b", name="Team B")
    assert count(_login("bob", spaces=[(other, Role.CURATOR)])) == "0"  # another space's is not counted
    ClusterSuggestion.objects.update(status="dismissed")
    assert count(curator) == "0"
