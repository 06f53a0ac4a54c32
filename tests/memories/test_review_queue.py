"""The review queue as a curator clears it: merge candidates grouped in families (one decision
for a group), merges finished at once without an LLM (the curator says which text stays), the
hub's own decisions accepted so they leave the queue, and bulk decisions over many rows."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agents.services import space_create
from memories.models import (
    CandidateStatus,
    ChangeKind,
    KnowledgeChange,
    Memory,
    MemoryContribution,
    MemoryEdit,
    MergeCandidate,
    Status,
)
from memories.selectors.review import review_queue
from memories.services import memory_upload
from memories.services.inputs import MemoryInputError
from memories.services.queue import change_let_stand, family_dismiss, family_merge

pytestmark = pytest.mark.django_db

NODE = "npm ci fails with EBADENGINE on Node {v}: the lock file was written by npm 10; run `npm ci` on Node 20"
OTHER = "pytest collects nothing when the test files are named check_*.py: set python_files in pytest.ini"


def _pair(first: Memory, second: Memory, similarity: float = 0.9) -> MergeCandidate:
    return MergeCandidate.objects.create(space_id=first.space_id, memory=second, duplicate_of=first,
                                         similarity=similarity, conflicts=[])


def _family(apart) -> tuple[list[Memory], list[MergeCandidate]]:
    """Four memories of one family, proposed pair by pair as the duplicate check does (a chain and a
    shortcut), and one unrelated pair."""
    members = [memory_upload(content=NODE.format(v=v)).memory for v in (14, 16, 18, 20)]
    pairs = [_pair(members[0], members[1]), _pair(members[1], members[2]), _pair(members[2], members[3]),
             _pair(members[0], members[3])]
    return members, pairs


def test_pairs_that_share_memories_are_one_family_in_the_queue(apart):
    members, pairs = _family(apart)
    lone = [memory_upload(content=OTHER).memory, memory_upload(content=OTHER.replace("pytest.ini", "pyproject")).memory]
    _pair(*lone)
    rows, counts = review_queue(kind="candidate", page=1, per_page=25)
    assert counts["candidate"] == 2 and counts["candidate_pairs"] == 5
    families = [row for _, row in rows]
    big = next(f for f in families if len(f.candidate_ids) == 4)
    assert big.candidate_ids == sorted(p.pk for p in pairs) and big.pk == min(p.pk for p in pairs)
    assert [m.pk for m in big.members] == [m.pk for m in members]  # oldest first
    # One by one: the family's pairs each on their own.
    rows, _ = review_queue(kind="candidate", page=1, per_page=25, family=big.pk)
    assert sorted(row.candidate_ids[0] for _, row in rows) == sorted(p.pk for p in pairs)


def test_without_an_llm_a_family_merge_keeps_the_chosen_text_and_is_finished(apart):
    members, pairs = _family(apart)
    kept = family_merge(candidate_ids=[p.pk for p in pairs], decided_by="quinn", keep_text="newer")
    assert kept.pk == members[0].pk
    assert kept.content == NODE.format(v=20) and not kept.merge_pending
    assert Memory.objects.filter(pk__in=[m.pk for m in members[1:]], status=Status.ARCHIVED).count() == 3
    assert not MemoryContribution.objects.filter(memory=kept, merged_at__isnull=True).exists()
    assert set(MergeCandidate.objects.values_list("status", "decided_by")) == {(CandidateStatus.MERGED, "quinn")}
    note = MemoryEdit.objects.filter(memory=kept, action="merge").latest("created_at").note
    assert "merged 3 from the review queue" in note and "newest" in note
    assert review_queue(kind=None, page=1, per_page=25)[1]["candidate"] == 0
    with pytest.raises(MemoryInputError):  # decided already
        family_merge(candidate_ids=[p.pk for p in pairs], decided_by="quinn", keep_text="older")


def test_keeping_the_older_text_leaves_it_as_it_was(apart):
    members, pairs = _family(apart)
    kept = family_merge(candidate_ids=[pairs[0].pk], decided_by="quinn", keep_text="older")
    assert kept.content == NODE.format(v=14) and not kept.merge_pending
    assert Memory.objects.get(pk=members[1].pk).status == Status.ARCHIVED
    assert Memory.objects.get(pk=members[2].pk).status == Status.ACTIVE  # only the chosen pair
    # The family's other pairs that involved the folded memory have nothing left to decide.
    _, counts = review_queue(kind=None, page=1, per_page=25)
    assert counts["candidate_pairs"] == 2  # 2–3 and 0–3 remain; 1–2 lost its folded member


def test_a_merge_empties_no_field_one_side_had(apart):
    """Keeping the newer text of two reports of one 409 keeps the older one's context when the
    newer has none; keeping the older text takes a resolution only the newer one has."""
    older = memory_upload(content="Refund API answered 409 on retry: the idempotency key was reused",
                          context="retry logic in the refunds worker").memory
    newer = memory_upload(content="Refund API returns 409 Conflict when a retry reuses its idempotency key",
                          resolution="derive the key from the refund id, not the attempt").memory
    kept = family_merge(candidate_ids=[_pair(older, newer).pk], decided_by="quinn", keep_text="newer")
    assert kept.content == newer.content and kept.resolution == newer.resolution
    assert kept.context == "retry logic in the refunds worker"
    third = memory_upload(content="Refund retries 409: same idempotency key sent twice").memory
    fourth = memory_upload(content="409 from the refund API on retries with a reused idempotency key",
                           resolution="new key per refund id").memory
    kept = family_merge(candidate_ids=[_pair(third, fourth).pk], decided_by="quinn", keep_text="older")
    assert kept.content == third.content and kept.resolution == "new key per refund id"
    assert Memory.objects.get(pk=fourth.pk).status == Status.ARCHIVED  # the loser leaves the active list


def test_different_dismisses_every_pair_of_the_family(apart):
    _, pairs = _family(apart)
    assert family_dismiss(candidate_ids=[p.pk for p in pairs], decided_by="quinn") == 4
    assert set(MergeCandidate.objects.values_list("status", flat=True)) == {CandidateStatus.DISMISSED}
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 4


def _supersession() -> KnowledgeChange:
    memory_upload(content="Install dependencies with `poetry install`; the lock file is poetry.lock.",
                  context="billing-api repository")
    memory_upload(content="We moved from Poetry to uv: dependencies install with `uv sync` and the lock file is uv.lock.",
                  context="billing-api repository")
    return KnowledgeChange.objects.get(kind=ChangeKind.SUPERSESSION)


def _automatic_merge() -> MemoryContribution:
    text = "Celery workers stop consuming after a Redis failover; set broker_connection_retry_on_startup = True"
    memory_upload(content=text)
    memory_upload(content=text + " in the worker settings")
    return MemoryContribution.objects.get(match_reason="similar")


def test_accepting_what_the_hub_decided_takes_it_off_the_queue(db):
    change = _supersession()
    assert review_queue(kind="supersession", page=1, per_page=25)[1]["supersession"] == 1
    change_let_stand(change_id=change.pk, user="quinn")
    change.refresh_from_db()
    assert change.reviewed_by == "quinn" and change.state == "done"
    assert review_queue(kind=None, page=1, per_page=25)[1]["supersession"] == 0
    memory_upload(content="Run the integration tests against Redis 7 with the cluster mode disabled.")
    conflict = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.").conflicts[0]
    with pytest.raises(MemoryInputError):  # a conflict is settled, not accepted
        change_let_stand(change_id=conflict.pk, user="quinn")


def test_bulk_accept_decides_every_selected_row_and_says_how_many(apart, quinn, settings):
    _, pairs = _family(apart)
    change = _supersession()
    settings.ULTRON_DUPLICATE_THRESHOLD, settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.9, 0.8
    merge = _automatic_merge()
    queue = reverse("admin:memories_memory_queue")
    page = quinn.get(queue).content.decode()
    assert "Merge candidates (1: 4 pairs)" in page and "Supersessions (1)" in page and "Automatic merges (1)" in page
    assert "Merge, keep newer text" in page and "one by one" in page and 'id="queue-bulk"' in page
    family_token = "family:" + ".".join(str(p.pk) for p in sorted(pairs, key=lambda p: p.pk))
    # Every row of the page, as "Select page" ticks them (types the classifier was unsure of among them).
    tokens = re.findall(r'name="items" value="([^"]+)" form="queue-bulk"', page)
    assert {family_token, f"change:{change.pk}", f"contribution:{merge.pk}"} <= set(tokens)
    response = quinn.post(reverse("admin:memories_memory_queue_decide"), {"action": "accept", "items": tokens,
                                                                           "next": queue})
    assert response.status_code == 302 and response["Location"] == queue
    after = quinn.get(queue).content.decode()
    assert f"{len(tokens)} decided." in after and "Nothing waits for review" in after
    assert set(MergeCandidate.objects.values_list("status", flat=True)) == {CandidateStatus.MERGED}
    merge.refresh_from_db()
    assert merge.reviewed_by == "quinn" and merge.memory.status == Status.ACTIVE


def test_one_row_with_htmx_is_swapped_for_its_outcome_and_bulk_skips_what_does_not_apply(apart, quinn):
    _, pairs = _family(apart)
    change = _supersession()
    decide = reverse("admin:memories_memory_queue_decide")
    response = quinn.post(decide, {"action": "different", "items": [f"change:{change.pk}", f"family:{pairs[0].pk}"]})
    assert response.status_code == 302
    assert "1 decided, 1 skipped" in quinn.get(reverse("admin:memories_memory_queue")).content.decode()
    response = quinn.post(decide, {"action": "undo", "items": [f"change:{change.pk}"]}, HTTP_HX_REQUEST="true",
                          HTTP_HX_TARGET=f"change-{change.pk}")
    assert response.status_code == 200 and "Undone: the older memory is current again." in response.content.decode()
    assert response["HX-Trigger"] == "merge-reviewed"


def test_rows_of_another_space_cannot_be_decided_and_are_not_told_apart(apart, quinn):
    other = space_create(slug="team-b", name="Team B")
    members, pairs = _family(apart)
    Memory.objects.filter(pk__in=[m.pk for m in members]).update(space=other)
    MergeCandidate.objects.filter(pk__in=[p.pk for p in pairs]).update(space=other)
    decide = reverse("admin:memories_memory_queue_decide")
    response = quinn.post(decide, {"action": "accept", "items": [f"family:{pairs[0].pk}"]}, HTTP_HX_REQUEST="true",
                          HTTP_HX_TARGET="family-1")
    missing = quinn.post(decide, {"action": "accept", "items": ["family:987654"]}, HTTP_HX_REQUEST="true",
                         HTTP_HX_TARGET="family-1")
    assert response.content == missing.content and b"no longer exists" in response.content
    assert MergeCandidate.objects.filter(status=CandidateStatus.OPEN).count() == 4


def test_the_sidebar_review_entry_shows_a_count_only_when_something_waits(apart, quinn):
    def badge() -> str | None:
        page = quinn.get(reverse("admin:index")).content.decode()
        start = page.index(f'href="{reverse("admin:memories_memory_queue")}"')
        entry = page[start : page.index("</a>", start)]
        found = re.search(r'min-w-\[18px\][^>]*>\s*(\d*)\s*</span>', entry)
        return found.group(1) if found else None

    assert badge() is None  # nothing waits: no badge at all (not an empty box)
    _supersession()
    assert badge() == "1"


def test_across_several_spaces_each_row_names_its_space(apart, quinn):
    from django.contrib.auth import get_user_model

    from agents.services import membership_set

    other = space_create(slug="team-b", name="Team B")
    membership_set(space=other, user=get_user_model().objects.get(username="quinn"), role="curator")
    members, pairs = _family(apart)
    Memory.objects.filter(pk__in=[m.pk for m in members]).update(space=other)
    MergeCandidate.objects.filter(pk__in=[p.pk for p in pairs]).update(space=other)
    _supersession()  # in the shared space
    page = quinn.get(reverse("admin:memories_memory_queue")).content.decode()
    assert '<div class="hub-muted" title="space">team-b</div>' in page
    assert '<div class="hub-muted" title="space">shared</div>' in page
    quinn.post(reverse("admin:space_switch"), {"space": other.pk, "next": "/admin/"})
    narrowed = quinn.get(reverse("admin:memories_memory_queue")).content.decode()
    assert 'title="space"' not in narrowed  # one space chosen: no column to repeat it


def test_the_tabs_fetch_their_counts_again_after_a_decision_taken_in_place(apart, quinn):
    _, pairs = _family(apart)
    change = _supersession()
    queue = reverse("admin:memories_memory_queue")
    page = quinn.get(queue, {"kind": "supersession"}).content.decode()
    # The tabs listen for the decision's event and fetch themselves again (with the page's own filter).
    block = re.search(r'<div id="queue-counts"[^>]* hx-get="([^"]+)" hx-trigger="merge-reviewed from:body"', page)
    assert block, page[:2000]
    url = block.group(1).replace("&amp;", "&")
    assert url.startswith(queue + "?") and "kind=supersession" in url and "part=counts" in url
    before = quinn.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert before.lstrip().startswith('<div id="queue-counts"')  # the block alone, to swap in place
    assert "Supersessions (1)" in before and "Review (1)" in before and "<table" not in before
    response = quinn.post(reverse("admin:memories_memory_queue_decide"), {"action": "accept", "items": [f"change:{change.pk}"]},
                          HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"change-{change.pk}")
    assert response["HX-Trigger"] == "merge-reviewed"
    after = quinn.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Supersessions (0)" in after and "Review (0)" in after and "Merge candidates (1: 4 pairs)" in after


def test_what_the_hub_saw_reads_in_plain_words():
    from memories.admin_queue import plain_differences

    said = plain_differences("values: 1.26 / 2.0; negation: the second is negated (or negated more)")
    assert said == ("different numbers or versions: 1.26 (older) vs 2.0 (newer); "
                    "one of them says “not” where the other does not")
    assert plain_differences(["opposites: disabled / enabled"]) == "opposite words: disabled vs enabled"
    assert plain_differences("") == ""
