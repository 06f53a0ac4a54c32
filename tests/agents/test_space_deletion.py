"""Deleting a space: everything in it goes, in one transaction; nothing of another space does."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from agents.models import Agent, Membership, Role, Space
from agents.selectors import space_shared
from agents.services import agent_create, space_create
from ingestion.models import IngestJob, RawUpload, SessionRecord
from ingestion.services import files_ingest
from memories.models import LexemeCount, Memory, MemoryContribution
from memories.services import memory_upload
from ultron_site.space_removal import space_contents, space_delete

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_teams(django_capture_on_commit_callbacks):
    from tests.ingestion.test_services import DOCKER_TASK, jsonl

    a, b = space_create(slug="team-a"), space_create(slug="team-b")
    agent = agent_create(name="writer-a", spaces=[(a, Role.WRITER), (b, Role.WRITER)])
    for space in (a, b):
        text = f"{space.slug}: the integration suite needs the redis sidecar running"
        memory_upload(content=text, space=space, agent=agent)
        memory_upload(content=text + ".", space=space, agent=agent)  # merged: a contribution
        with django_capture_on_commit_callbacks(execute=True):
            files_ingest(agent=agent, files=[("session.jsonl", jsonl(DOCKER_TASK))], space=space)
    return a, b, agent


def test_a_space_goes_with_everything_in_it_and_nothing_else(two_teams, tmp_path):
    a, b, agent = two_teams
    kept = {model: model.objects.filter(space=b).count()
            for model in (Memory, MemoryContribution, RawUpload, IngestJob, SessionRecord, LexemeCount)}
    assert all(kept.values()), kept
    before = space_contents(space=a)
    assert before.rows["memories_memory"] >= 1 and before.members == 1
    removed = space_delete(space=a)
    assert removed.rows == before.rows
    assert not Space.objects.filter(slug="team-a").exists()
    assert not Membership.objects.filter(space_id=a.pk).exists()
    for model, count in kept.items():
        assert model.objects.filter(space=b).count() == count, model
        assert not model.objects.filter(space_id=a.pk).exists(), model
    agent.refresh_from_db()
    assert agent.default_space_id is None  # its default was team-a: its uploads must now name a space
    assert Agent.objects.filter(pk=agent.pk).exists()


def test_the_command_says_what_would_go_and_changes_nothing_without_yes(two_teams, capsys):
    a, _, _ = two_teams
    call_command("delete_space", "team-a")
    out = capsys.readouterr().out
    assert "Would delete space 'team-a'" in out and "memories_memory: " in out and "--yes" in out
    assert Memory.objects.filter(space=a).exists()
    call_command("delete_space", "team-a", "--yes")
    assert "Deleted space 'team-a'" in capsys.readouterr().out
    assert not Space.objects.filter(slug="team-a").exists()


def test_the_shared_space_and_unknown_spaces_are_refused(two_teams):
    with pytest.raises(CommandError, match="shared space cannot be deleted"):
        call_command("delete_space", "shared", "--yes")
    assert Space.objects.filter(pk=space_shared().pk).exists()
    with pytest.raises(CommandError, match="no space 'nope'"):
        call_command("delete_space", "nope", "--yes")
