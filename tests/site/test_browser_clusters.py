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
