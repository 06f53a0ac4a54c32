"""Knowledge that changes: an upload that says a fact changed supersedes the older memory (it
leaves search and its cluster, keeps its history, and the change can be undone); two memories
that disagree with nothing saying which is current wait for a curator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memories.judgements.supersede import change_decide, version_order
from memories.models import ChangeKind, ChangeState, KnowledgeChange, Memory, MemoryEdit, Status
from memories.services import conflict_decide, memories_search, memory_upload, supersession_undo

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"

pytestmark = pytest.mark.django_db

PAIRS = {row["id"]: row for row in map(json.loads, (DATA / "update_pairs.jsonl").read_text().splitlines())}


def _upload(side: dict) -> Memory:
    return memory_upload(content=side["content"], context=side.get("context", ""),
                         resolution=side.get("resolution", ""), tags=side.get("tags")).memory


def _search(query: str) -> list:
    return [hit.id for hit in memories_search(query=query, limit=5).hits]


def test_an_upload_that_says_it_changed_supersedes_the_old_memory_and_the_change_can_be_undone():
    pair = PAIRS["dep-uv-01"]
    old = _upload(pair["old"])
    result = memory_upload(content=pair["new"]["content"], context=pair["new"]["context"],
                           resolution=pair["new"]["resolution"], tags=pair["new"]["tags"])
    new = result.memory
    assert [c.old_id for c in result.superseded] == [old.pk]
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, new.pk) and old.valid_until is not None
    change = KnowledgeChange.objects.get(old=old, new=new)
    assert (change.kind, change.state, change.order, change.decided_by) == (
        ChangeKind.SUPERSESSION, ChangeState.DONE, "explicit", "hub")
    found = _search(pair["query"])
    assert new.pk in found and old.pk not in found  # current knowledge only
    assert MemoryEdit.objects.filter(memory=old, action="superseded", editor="hub").exists()

    supersession_undo(change_id=change.pk, user="cora")
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id, old.valid_until) == (Status.ACTIVE, None, None)
    change.refresh_from_db()
    assert (change.state, change.undone_by) == (ChangeState.UNDONE, "cora")
    assert {new.pk, old.pk} <= set(_search(pair["query"]))
    assert MemoryEdit.objects.filter(memory=old, action="unsuperseded", editor="cora").exists()


def test_two_memories_that_disagree_with_no_order_wait_for_a_curator():
    old = _upload({"content": "Run the integration tests against Redis 7 with the cluster mode disabled.",
                   "context": "billing-api CI"})
    result = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.",
                           context="billing-api CI")
    assert result.superseded == [] and [c.old_id for c in result.conflicts] == [old.pk]
    conflict = result.conflicts[0]
    assert (conflict.kind, conflict.state) == (ChangeKind.CONFLICT, ChangeState.OPEN)
    assert Memory.objects.filter(status=Status.ACTIVE).count() == 2  # the hub does not guess
    conflict_decide(change_id=conflict.pk, decision="new", user="cora")
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, result.memory.pk)


def test_a_conflict_a_curator_reads_as_one_memory_is_merged_and_both_hold_keeps_its_candidate_open():
    """"Merge" on a conflict: the hub read a difference that is none; the pair becomes one memory
    (newer text, the older's context kept). "Both hold" closes the conflict but not the pair's
    merge candidate: two memories that both hold may still be one."""
    from memories.models import CandidateStatus, MergeCandidate

    old = _upload({"content": "Run the integration tests against Redis 7 with the cluster mode disabled.",
                   "context": "billing-api CI"})
    result = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.")
    conflict = result.conflicts[0]
    conflict_decide(change_id=conflict.pk, decision="merge", user="cora")
    old.refresh_from_db()
    assert old.status == Status.ACTIVE and old.content == result.memory.content and old.context == "billing-api CI"
    assert Memory.objects.get(pk=result.memory.pk).status == Status.ARCHIVED
    assert KnowledgeChange.objects.get(pk=conflict.pk).state == ChangeState.DONE

    first = _upload({"content": "Deploys to the EU region need the VPN connected.", "context": "ops runbook"})
    second = memory_upload(content="Deploys to the EU region need the VPN disconnected.", context="ops runbook")
    other = second.conflicts[0]
    candidate, _ = MergeCandidate.objects.get_or_create(
        memory=second.memory, duplicate_of=first, defaults={"space_id": first.space_id, "similarity": 0.9, "conflicts": []})
    conflict_decide(change_id=other.pk, decision="both", user="cora")
    candidate.refresh_from_db()
    assert candidate.status == CandidateStatus.OPEN


def test_a_more_detailed_version_of_the_same_advice_replaces_nothing():
    _upload({"content": "Run the linters before pushing to main.", "context": "orbit repository"})
    result = memory_upload(content="Run the linters (ruff and mypy) before pushing to main.",
                           context="orbit repository")
    assert result.superseded == [] and result.conflicts == []
    assert Memory.objects.filter(status=Status.ACTIVE).count() == Memory.objects.count()


def test_a_version_raised_on_a_shared_name_orders_the_pair_and_a_port_does_not():
    assert version_order("pin numpy 1.26 in the image", "pin numpy 2.1 in the image") == "numpy 1.26 → 2.1"
    assert version_order("postgres listens on port 5432", "postgres listens on port 6432") is None
    assert version_order("Postgres 16 in production", "psql 17 on laptops connects fine") is None
    verdict = change_decide(old="Use numpy 1.26 for the pricing model.", new="Use numpy 2.1 for the pricing model.",
                            related=True, close=True)
    assert (verdict.kind, verdict.order) == ("supersedes", "version")


@pytest.mark.parametrize(("old", "new", "replaced"), [
    ("The backup job runs at 02:00 UTC.", "The backup job runs at 04:15 UTC.", "02:00 → 04:15"),
    ("Deploy notifications go to #deploys in Slack.", "Deploy notifications go to #release-train in Slack.",
     "deploys → release-train"),
    ("The search index is rebuilt every Sunday.", "The search index is rebuilt nightly; a full rebuild takes an hour.",
     "every sunday → nightly"),
    ("The docs site is hosted on Netlify.", "The docs site is hosted on Cloudflare Pages (project docs-web).",
     "netlify → cloudflare pages"),
    ("构建缓存保存在 NFS 上。", "构建缓存保存在 S3 上。", "nfs → s3"),
])
def test_one_value_replaced_in_the_same_statement_is_a_slot_change(old, new, replaced):
    from memories.judgements.supersede import slot_change

    assert slot_change(old, new) == replaced


@pytest.mark.parametrize(("old", "new"), [
    ("Use pnpm for the web app.", "Use npm for the docs site."),  # two spans
    ("Run the smoke tests for the web app.", "Run the smoke tests for the admin app."),  # where it applies
    ("API pods request 500m CPU.", "Worker pods request 1 CPU."),  # another subject
    ("The queue holds 3 primary shards.", "The queue holds 2 replicas."),  # a count of something else
    ("Enable gzip on the edge proxy.", "Enable gzip with level 6 and a 1 KB minimum."),  # another complement
    ("The migration fails on the first run.", "The migration failed on the first run."),  # inflection
    ("Redis is the cache.", "Memcached is the cache."),  # the subject itself changed
    ("发布前要做回归测试。", "发布前在预发环境按清单做回归测试。"),  # Chinese words: no spaces to tell a value's end
])
def test_other_subjects_scopes_and_rewordings_are_not_slot_changes(old, new):
    from memories.judgements.supersede import slot_change

    assert slot_change(old, new) is None


def test_a_restated_value_supersedes_by_time_only_when_weeks_apart():
    from datetime import timedelta

    from django.test import override_settings
    from django.utils import timezone

    old = _upload({"content": "The nightly invoice export starts at 01:00 UTC.", "context": "billing platform"})
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    result = memory_upload(content="The nightly invoice export starts at 03:30 UTC.", context="billing platform")
    assert [c.old_id for c in result.superseded] == [old.pk] and result.superseded[0].order == "later"
    assert "01:00 → 03:30" in result.superseded[0].evidence

    # Restated by an upload merged into it last week: confirmed recently, so the pair is a conflict.
    second = _upload({"content": "Staging deploys are frozen on Fridays.", "context": "release process"})
    Memory.objects.filter(pk=second.pk).update(created_at=timezone.now() - timedelta(days=60))
    memory_upload(content="Staging deploys are frozen on Fridays.", context="release process")
    changed = memory_upload(content="Staging deploys are frozen on Thursdays.", context="release process")
    assert changed.superseded == [] and [c.old_id for c in changed.conflicts] == [second.pk]

    with override_settings(ULTRON_SUPERSEDE_AFTER_DAYS=0):  # never by time alone
        third = _upload({"content": "Error budgets reset on the 1st of each month.", "context": "SRE policy"})
        Memory.objects.filter(pk=third.pk).update(created_at=timezone.now() - timedelta(days=90))
        again = memory_upload(content="Error budgets reset on the 15th of each month.", context="SRE policy")
        assert again.superseded == []


def test_the_judgement_on_the_held_out_pairs_decides_alone_only_when_right():
    """The held-out half (its misses were read for the second round of rules; the blind set below is the unseen one)."""
    from bench.updates import figures, judge

    rows = judge([row for row in PAIRS.values() if row["set"] == "heldout"])
    found = figures(rows)
    assert found["precision"] >= 0.97, found
    assert found["recall"] >= 0.5, found


def test_on_the_pairs_written_blind_the_hub_never_guesses_a_conflict_and_rarely_a_supersession():
    """The set written without sight of the rules (bench/README: its recall is low; what matters
    here is that doubt goes to a curator)."""
    from bench.updates import FRESH, figures, judge

    rows = judge([json.loads(line) for line in FRESH.read_text().splitlines() if line.strip()])
    found = figures(rows)
    assert not [r["id"] for r in rows if r["label"] == "conflict" and r["verdict"] == "supersedes"]
    assert found["precision"] >= 0.95, found


def test_the_api_serves_current_knowledge_and_history_on_request(api):
    from django.urls import reverse

    pair = PAIRS["dep-uv-01"]
    old = _upload(pair["old"])
    new = _upload(pair["new"])
    found = api.post(reverse("memory-search"), {"query": pair["query"]}, format="json").json()["results"]
    assert [r["id"] for r in found if r["id"] in (str(old.pk), str(new.pk))] == [str(new.pk)]
    current = next(r for r in found if r["id"] == str(new.pk))
    assert current["supersedes"] == [str(old.pk)] and current["superseded_by"] is None
    history = api.post(reverse("memory-search"), {"query": pair["query"], "include_superseded": True},
                              format="json").json()["results"]
    ids = [r["id"] for r in history]
    assert ids.index(str(old.pk)) == ids.index(str(new.pk)) + 1  # right after what replaced it
    assert history[ids.index(str(old.pk))]["superseded_by"] == str(new.pk)
    details = api.post(reverse("memory-details"), {"ids": [str(old.pk), str(new.pk)]}, format="json").json()
    by_id = {m["id"]: m for m in details["memories"]}
    assert by_id[str(old.pk)]["status"] == "superseded" and by_id[str(old.pk)]["superseded_by"] == str(new.pk)
    assert by_id[str(new.pk)]["supersedes"] == [str(old.pk)]
    context = api.post(reverse("context"), {"query": pair["query"]}, format="json").json()
    assert str(old.pk) not in {m["id"] for m in context["memories"]}  # never both


def test_a_curator_settles_conflicts_and_undoes_supersessions_on_the_review_page():
    from django.contrib.auth import get_user_model
    from django.http import HttpRequest
    from django.test import Client
    from django.urls import reverse

    from tests.spaces import curate_shared
    from ultron_site.people import person_create

    person = person_create(username="cora", role="curator", password_once=False)
    curate_shared(get_user_model().objects.get(username="cora"))
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    old = _upload({"content": "Run the integration tests against Redis 7 with the cluster mode disabled."})
    conflict = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.").conflicts[0]
    pair = PAIRS["dep-uv-01"]
    before, after = _upload(pair["old"]), _upload(pair["new"])
    change = KnowledgeChange.objects.get(old=before, new=after)

    page = client.get(reverse("admin:memories_memory_queue")).content.decode()
    assert "Conflicts (1)" in page and f'id="change-{conflict.pk}"' in page and f'id="change-{change.pk}"' in page
    response = client.post(reverse("admin:memories_memory_change_action", args=[conflict.pk, "both"]), follow=True)
    assert "both hold" in response.content.decode()
    old.refresh_from_db()
    assert old.status == Status.ACTIVE and KnowledgeChange.objects.get(pk=conflict.pk).state == ChangeState.DONE
    memory_page = client.get(reverse("admin:memories_memory_change", args=[before.pk])).content.decode()
    assert "Superseded on" in memory_page
    response = client.post(reverse("admin:memories_memory_change_action", args=[change.pk, "undo"]),
                           HTTP_HX_REQUEST="true")
    assert "Undone" in response.content.decode()
    before.refresh_from_db()
    assert before.status == Status.ACTIVE
    # A change of a space the curator does not curate is missing.
    from agents.services import space_create

    other = space_create(slug="team-x")
    KnowledgeChange.objects.filter(pk=change.pk).update(space=other)
    assert client.post(reverse("admin:memories_memory_change_action", args=[change.pk, "undo"])).status_code == 404


def _conflicting_pair(openai_llm, verdict: str, django_capture_on_commit_callbacks):
    """Two uploads that disagree (no order in their words), with an LLM configured that reads
    the conflict as ``verdict``."""
    openai_llm.script('{"memory_type": "pattern"}', '{"summary_l0": "Redis 7 cluster mode off", "overview_l1": "x"}')
    with django_capture_on_commit_callbacks(execute=True):
        old = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode disabled.").memory
    # After the upload's commit: the conflict is put to the LLM, then the new memory is summarised.
    openai_llm.script('{"memory_type": "pattern"}', '{"same_subject": false}', {"current": verdict},
                      '{"summary_l0": "Redis 7 cluster mode on", "overview_l1": "y"}')
    with django_capture_on_commit_callbacks(execute=True):
        result = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.")
    return old, result


def test_with_an_llm_a_conflict_it_reads_as_a_change_is_superseded_by_the_llm(openai_llm,
                                                                             django_capture_on_commit_callbacks):
    import json as jsonlib

    old, result = _conflicting_pair(openai_llm, "new", django_capture_on_commit_callbacks)
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, result.memory.pk)
    change = KnowledgeChange.objects.get(old=old, new=result.memory)
    assert (change.kind, change.decided_by) == (ChangeKind.SUPERSESSION, "llm")
    asked = jsonlib.dumps(openai_llm.chat_requests()[-2])
    assert "OLDER" in asked and "cluster mode disabled" in asked and "Details that differ" in asked


def test_with_an_llm_that_cannot_tell_the_conflict_waits_for_a_curator(openai_llm, django_capture_on_commit_callbacks):
    old, result = _conflicting_pair(openai_llm, "unsure", django_capture_on_commit_callbacks)
    old.refresh_from_db()
    assert old.status == Status.ACTIVE
    change = KnowledgeChange.objects.get(old=old, new=result.memory)
    assert change.state == ChangeState.OPEN and "'unsure'" in change.evidence


def test_the_review_queue_lists_every_kind_newest_first_and_its_actions_work():
    from django.contrib.auth import get_user_model
    from django.http import HttpRequest
    from django.test import Client
    from django.urls import reverse

    from tests.spaces import curate_shared
    from ultron_site.people import person_create

    person = person_create(username="quinn", role="curator", password_once=False)
    curate_shared(get_user_model().objects.get(username="quinn"))
    client = Client()
    assert client.login(request=HttpRequest(), username=person.username, password=person.password)
    _upload({"content": "Run the integration tests against Redis 7 with the cluster mode disabled."})
    conflict = memory_upload(content="Run the integration tests against Redis 7 with the cluster mode enabled.").conflicts[0]
    pair = PAIRS["dep-uv-01"]
    before, after = _upload(pair["old"]), _upload(pair["new"])
    change = KnowledgeChange.objects.get(old=before, new=after)
    url = reverse("admin:memories_memory_queue")
    page = client.get(url).content.decode()
    # (Types the classifier was unsure of may be queued too: counted by kind here.)
    assert "Conflicts (1)" in page and "Supersessions (1)" in page
    assert page.index(f'id="change-{change.pk}"') < page.index(f'id="change-{conflict.pk}"')  # newest first
    assert 'data-key="m"' in page and 'data-key="u"' in page and "ultron/queue.js" in page
    only = client.get(url + "?kind=conflict").content.decode()
    assert f'id="change-{conflict.pk}"' in only and f'id="change-{change.pk}"' not in only
    # Without htmx an action comes back to the queue it was taken from.
    response = client.post(reverse("admin:memories_memory_change_action", args=[change.pk, "undo"]),
                           {"next": url + "?kind=supersession"})
    assert response.status_code == 302 and response["Location"] == url + "?kind=supersession"
    assert "Supersessions (0)" in client.get(url).content.decode()
    response = client.post(reverse("admin:memories_memory_change_action", args=[conflict.pk, "both"]),
                           {"next": "https://elsewhere.example/"})
    assert response["Location"] == reverse("admin:memories_memory_merge_review")  # never an outside URL
