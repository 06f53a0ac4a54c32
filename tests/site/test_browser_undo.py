"""Undo in a real browser (see tests/site/test_browser.py): a curator opens Review from the sidebar,
merges a pair keeping the older text and splits it back from the decided row, settles a conflict and
reopens it, then edits a memory and reverts the edit from its history. Pages are saved under
var/screenshots/ for a person to look at."""

from __future__ import annotations

from memories.models import Memory, MergeCandidate, Status
from memories.services import embedding_space_ensure, memory_upload
from memories.services.edit import memory_edit
from tests.site.test_browser import Session, browser, pytestmark  # noqa: F401  (fixture, marks)

REFUND = "Refund API answered 409 on retry: the idempotency key was reused"
REFUND_NEW = "Refund API returns 409 Conflict when a retry reuses its idempotency key"


def test_curator_undoes_a_merge_a_settlement_and_an_edit(browser, live_server, settings):  # noqa: F811
    embedding_space_ensure()
    thresholds = settings.ULTRON_DUPLICATE_THRESHOLD, settings.ULTRON_DUPLICATE_SOFT_THRESHOLD
    settings.ULTRON_DUPLICATE_THRESHOLD = settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.9999  # the pair is made here
    older = memory_upload(content=REFUND, context="retry logic in the refunds worker").memory
    newer = memory_upload(content=REFUND_NEW, resolution="derive the key from the refund id").memory
    pair = MergeCandidate.objects.create(space_id=older.space_id, memory=newer, duplicate_of=older, similarity=0.93,
                                         conflicts=[])

    curator = Session(browser, live_server.url, "curator", username="quinn")
    curator.go("/admin/")
    curator.page.click("nav >> text=Review")  # the sidebar's one entry
    curator.page.wait_for_load_state("networkidle")
    assert "Merge candidates (1)" in curator.page.locator("#queue-counts").inner_text()
    row = f"#family-{pair.pk}"
    badge = curator.page.locator('nav a[href="/admin/memories/memory/queue/"] span:last-child')
    before = curator.page.locator("#queue-counts").get_attribute("data-total")
    assert badge.inner_text().strip() == before
    curator.page.click(f"{row} >> text=Merge, keep older text")
    curator.page.wait_for_selector(f"{row} .hub-settled")
    curator.page.wait_for_function(  # the sidebar's badge follows the queue's counts after a decision
        "before => { const counts = document.getElementById('queue-counts').dataset.total;"
        " const badge = document.querySelector('nav a[href=\"/admin/memories/memory/queue/\"] span:last-child');"
        " return counts !== before && badge.textContent.trim() === (counts === '0' ? '' : counts); }", arg=before)
    assert Memory.objects.get(pk=newer.pk).status == Status.ARCHIVED
    settled = curator.page.locator(f"{row} .hub-settled").inner_text()
    assert "Merged into the oldest" in settled and REFUND[:30] in settled
    curator.shot("undo-merge-settled")
    curator.page.click(f"{row} >> text=Undo")
    curator.page.wait_for_selector(f"{row} >> text=Merge undone")
    assert Memory.objects.get(pk=newer.pk).status == Status.ACTIVE
    assert Memory.objects.get(pk=older.pk).resolution == ""  # the older one's own fields, as they were
    curator.page.wait_for_selector("#queue-counts >> text=Merge candidates (1)")  # the pair is back
    curator.shot("undo-merge-undone")

    settings.ULTRON_DUPLICATE_THRESHOLD, settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = thresholds
    old = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode disabled.",
                        context="billing-api CI").memory
    conflict = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.",
                             context="billing-api CI").conflicts[0]
    curator.go("/admin/memories/memory/queue/?kind=conflict")
    row = f"#change-{conflict.pk}"
    curator.page.click(f"{row} >> text=Newer is current")
    curator.page.wait_for_selector(f"{row} .hub-settled")
    assert Memory.objects.get(pk=old.pk).status == Status.SUPERSEDED
    curator.shot("undo-conflict-settled")
    curator.page.click(f"{row} >> text=Undo")
    curator.page.wait_for_selector(f"{row} >> text=Reopened")
    assert Memory.objects.get(pk=old.pk).status == Status.ACTIVE
    curator.shot("undo-conflict-reopened")

    memory_edit(memory_id=older.pk, editor="quinn", content="Refund API: 409", context="retry logic in the refunds worker")
    curator.go(f"/admin/memories/memory/{older.pk}/change/")
    curator.page.once("dialog", lambda dialog: dialog.accept())
    curator.page.click("text=Revert to before this >> nth=0")
    curator.page.wait_for_selector("text=Reverted: content as before that change")
    assert Memory.objects.get(pk=older.pk).content == REFUND
    curator.shot("undo-edit-reverted")
    assert not curator.errors, curator.errors
    curator.check_clean()
