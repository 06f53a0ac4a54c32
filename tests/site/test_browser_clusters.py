"""Clusters by hand in a real browser (see tests/site/test_browser.py): a curator merges a
suggested pair from the review queue with its key, splits the merged cluster on its page and
undoes the split. Pages are saved under var/screenshots/ for a person to look at."""

from __future__ import annotations

from clusters.models import ClusterChange, ClusterSuggestion
from clusters.services.repair import clusters_repair
from tests.clusters.test_manual import _cluster_of, _exact_everywhere, _members, _two_clusters
from tests.site.test_browser import Session, browser, pytestmark  # noqa: F401  (fixture, marks)


def test_curator_merges_a_suggestion_then_splits_and_undoes_on_the_cluster_page(browser, live_server, settings):  # noqa: F811
    from memories.services import embedding_space_ensure

    embedding_space_ensure()
    a, b = _two_clusters(settings)
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.9
    clusters_repair()
    suggestion = ClusterSuggestion.objects.get()

    curator = Session(browser, live_server.url, "curator")
    curator.go("/admin/memories/memory/queue/?kind=cluster_suggestion")
    row = f"#clustersuggestion-{suggestion.pk}"
    assert curator.page.locator(row).count() == 1
    curator.shot("queue-cluster-suggestion")
    curator.page.keyboard.press("j")
    curator.page.keyboard.press("m")
    curator.page.wait_for_selector(f"{row} .hub-settled")
    kept = _cluster_of(b[0])
    assert _members(kept) == {str(m.pk) for m in a + b}

    curator.go(f"/admin/clusters/knowledgecluster/{kept}/change/")
    curator.page.click("text=Split: the members you tick form a new cluster")
    for memory in a:
        curator.page.check(f"#split-{memory.pk}")
    curator.shot("cluster-split")
    curator.page.click("text=Split them off")
    curator.page.wait_for_load_state("networkidle")
    split = ClusterChange.objects.get(kind="split")
    assert _members(split.to_cluster_id) == {str(m.pk) for m in a}
    curator.shot("cluster-changes")

    curator.page.locator("#cluster-changes .hub-history-item").first.locator("text=Undo").click()
    curator.page.wait_for_load_state("networkidle")
    assert _members(kept) == {str(m.pk) for m in a + b}
    _exact_everywhere()
    curator.check_clean()


def test_curator_undoes_a_repair_in_place_sees_the_counts_drop_then_merges_in_bulk_and_undoes_from_a_memory(
        browser, live_server, settings):  # noqa: F811
    """The queue's tab counts follow a decision taken in place (htmx, no reload); cluster rows are
    selected and decided in bulk; the merge is then undone from a moved memory's page."""
    from memories.services import embedding_space_ensure

    embedding_space_ensure()
    a, b = _two_clusters(settings)
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.8
    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.8  # the repair merges the two itself
    clusters_repair()
    change = ClusterChange.objects.get()

    curator = Session(browser, live_server.url, "curator")
    curator.go("/admin/memories/memory/queue/?kind=cluster_move")
    tabs = curator.page.locator("#queue-counts")
    assert "Cluster changes (1)" in tabs.inner_text()
    curator.shot("queue-cluster-change-before")
    curator.page.keyboard.press("j")
    curator.page.keyboard.press("u")  # undo the repair's merge, in place
    curator.page.wait_for_selector(f"#clusterchange-{change.pk} .hub-settled")
    # The tabs fetch their counts again on the decision's event: no reload.
    curator.page.wait_for_selector("#queue-counts >> text=Cluster changes (0)")
    assert "Review (0)" in tabs.inner_text() and curator.page.locator(".hub-settled").count() == 1
    curator.shot("queue-cluster-change-undone-counts")
    assert _members(_cluster_of(a[0])) == {str(m.pk) for m in a}

    settings.ULTRON_CLUSTER_MERGE_THRESHOLD = 0.9  # now only suggested
    clusters_repair()
    suggestion = ClusterSuggestion.objects.get()
    curator.go("/admin/memories/memory/queue/?kind=cluster_suggestion")
    assert "Cluster merge suggestions (1)" in tabs.inner_text()
    curator.page.check(f'input[name="items"][value="clustersuggestion:{suggestion.pk}"]')
    assert curator.page.locator("#queue-selected").inner_text() == "1"
    curator.shot("queue-cluster-suggestion-selected")
    with curator.page.expect_navigation():
        curator.page.click('#queue-bulk button[value="merge"]')
    curator.page.wait_for_load_state("networkidle")
    assert "Merged." in curator.page.content() and "Cluster merge suggestions (0)" in tabs.inner_text()
    curator.shot("queue-cluster-suggestion-merged")
    kept = _cluster_of(b[0])
    assert _members(kept) == {str(m.pk) for m in a + b}

    # Undo from the page of a memory the merge moved.
    merge = ClusterChange.objects.filter(undone_at__isnull=True).get()
    moved = next(m for m in a + b if str(m.pk) in {str(x) for x in merge.memory_ids})
    curator.go(f"/admin/memories/memory/{moved.pk}/change/")
    panel = curator.page.locator("#memory-cluster-changes")
    assert "Merge by " in panel.inner_text()
    curator.shot("memory-page-cluster-changes")
    with curator.page.expect_navigation():
        panel.locator("button:has-text('Undo')").first.click()
    curator.page.wait_for_load_state("networkidle")
    assert curator.page.url.endswith(f"/admin/memories/memory/{moved.pk}/change/")
    assert "back where they were" in curator.page.content()
    curator.shot("memory-page-cluster-change-undone")
    assert _members(_cluster_of(a[0])) == {str(m.pk) for m in a} and _cluster_of(a[0]) != _cluster_of(b[0])
    _exact_everywhere()
    curator.check_clean()
