"""``manage.py hold_writer``: everything one agent wrote (served or superseded; since a time or
not) is held in one batch, its tokens revoked on request, the memories its uploads were merged
into listed for a curator; ``--undo BATCH`` puts the batch back. Held memories leave search and
context for every other agent."""

from __future__ import annotations

import datetime
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from agents.models import ApiToken
from agents.services import agent_create, token_issue
from clusters.models import ClusterMember
from memories.models import Memory, MemoryHold, Status
from memories.services import memory_upload

pytestmark = pytest.mark.django_db

TEXTS = [
    ("Gunicorn workers time out behind nginx after thirty seconds on long report exports",
     "reports service behind nginx", "Raise the gunicorn --timeout to 120 and proxy_read_timeout to match."),
    ("Celery beat runs every periodic task twice after the deploy scaled it to two replicas",
     "kubernetes deployment of the scheduler", "Run exactly one beat replica; use a lock if you cannot."),
    ("Playwright tests flake on CI because the fonts differ from the developer laptops",
     "visual regression suite", "Install the same font packages in the CI image and pin their versions."),
]


@pytest.fixture
def mallory():
    return agent_create(name="mallory")


@pytest.fixture
def written(mallory, agent):
    """Three memories mallory wrote (the last one superseded since), and one upload of hers that
    was merged into a memory agent-smith wrote first."""
    mine = [memory_upload(content=c, context=x, resolution=r, agent=mallory).memory for c, x, r in TEXTS]
    Memory.objects.filter(pk=mine[2].pk).update(status=Status.SUPERSEDED)
    theirs = memory_upload(content="pip cannot download packages in docker build behind the office proxy",
                           context="corporate network", resolution="Pass HTTP_PROXY as a build arg.", agent=agent).memory
    merged = memory_upload(content="pip cannot download packages in docker build behind the office proxy",
                           context="corporate network", resolution="Pass HTTP_PROXY as a build arg.", agent=mallory)
    assert merged.merged and merged.memory.pk == theirs.pk
    return {"mine": mine, "theirs": theirs}


def _run(*args) -> str:
    out = StringIO()
    call_command("hold_writer", *args, stdout=out)
    return out.getvalue()


def _batch(output: str) -> str:
    return re.search(r"Batch: ([0-9a-f-]{36})", output).group(1)


def _statuses(memories: list[Memory]) -> list[str]:
    return list(Memory.objects.filter(pk__in=[m.pk for m in memories]).order_by("created_at")
                .values_list("status", flat=True))


def test_it_holds_everything_the_agent_wrote_and_lists_what_its_uploads_were_merged_into(written):
    mine = written["mine"]
    assert ClusterMember.objects.filter(memory=mine[0]).exists()
    output = _run("mallory")
    assert "Held 3 memories mallory wrote." in output
    batch = _batch(output)
    assert f"Undo with: manage.py hold_writer mallory --undo {batch}" in output
    assert f"  {written['theirs'].pk}" in output  # merged into: agent-smith's, still served
    assert _statuses(mine) == [Status.HELD] * 3
    holds = MemoryHold.objects.filter(batch=batch)
    assert sorted(holds.values_list("prior_status", flat=True)) == [Status.ACTIVE, Status.ACTIVE, Status.SUPERSEDED]
    assert Memory.objects.get(pk=written["theirs"].pk).status == Status.ACTIVE
    assert not ClusterMember.objects.filter(memory__in=mine).exists()  # out of their clusters
    assert "Revoked" not in output


def test_since_holds_only_what_it_wrote_from_then_on(written):
    mine = written["mine"]
    Memory.objects.filter(pk=mine[0].pk).update(created_at=timezone.now() - datetime.timedelta(days=3))
    since = (timezone.now() - datetime.timedelta(days=1)).isoformat()
    output = _run("mallory", "--since", since)
    assert "Held 2 memories mallory wrote since " in output
    assert Memory.objects.get(pk=mine[0].pk).status == Status.ACTIVE
    assert Memory.objects.get(pk=mine[1].pk).status == Status.HELD
    # a date alone is its midnight (UTC, the hub's time zone)
    assert "Held 0 memories" in _run("mallory", "--since", (timezone.now() + datetime.timedelta(days=2)).date().isoformat())


def test_revoke_tokens_revokes_every_token_of_the_agent(written, mallory, agent_token):
    token_issue(agent=mallory)
    token_issue(agent=mallory)
    output = _run("mallory", "--revoke-tokens")
    assert "Revoked 2 API tokens." in output
    assert not ApiToken.objects.filter(agent=mallory, revoked_at__isnull=True).exists()
    assert ApiToken.objects.filter(agent__name="agent-smith", revoked_at__isnull=True).exists()  # others keep theirs


def test_undo_restores_each_memory_to_what_it_was(written, django_capture_on_commit_callbacks):
    mine = written["mine"]
    batch = _batch(_run("mallory"))
    with django_capture_on_commit_callbacks(execute=True):  # a restored memory joins its cluster after commit
        output = _run("--undo", batch)
    assert f"Put back 3 memories of batch {batch}" in output
    assert _statuses(mine) == [Status.ACTIVE, Status.ACTIVE, Status.SUPERSEDED]
    assert ClusterMember.objects.filter(memory=mine[0]).exists()  # back in a cluster
    assert not MemoryHold.objects.filter(batch=batch, state="open").exists()


def test_held_memories_leave_search_and_context_for_other_agents(written, api):
    target = written["mine"][0]

    def seen() -> tuple[bool, bool]:
        found = api.post(reverse("memory-search"), {"query": TEXTS[0][0]}, format="json").json()["results"]
        context = api.post(reverse("context"), {"query": TEXTS[0][0], "token_budget": 4000}, format="json").json()
        return (str(target.pk) in {hit["id"] for hit in found},
                str(target.pk) in {block["id"] for block in context["memories"]})

    assert seen() == (True, True)
    batch = _batch(_run("mallory"))
    assert seen() == (False, False)
    _run("mallory", "--undo", batch)
    assert seen() == (True, True)


def test_clear_errors(written):
    with pytest.raises(CommandError, match="no agent named 'nobody'"):
        _run("nobody")
    with pytest.raises(CommandError, match="not an ISO date-time"):
        _run("mallory", "--since", "last tuesday")
    with pytest.raises(CommandError, match="no such batch"):
        _run("--undo", "0b1e3f3e-8d4f-4a57-9a8e-7b1c2d3e4f50")
    with pytest.raises(CommandError, match="not a batch id"):
        _run("--undo", "12345")
    with pytest.raises(CommandError, match="name the agent"):
        _run()
    assert _statuses(written["mine"]) == [Status.ACTIVE, Status.ACTIVE, Status.SUPERSEDED]  # nothing changed
