"""The isolation suite, the management commands (issue 34): a command that takes ``--space``
works in that space alone — what it prints or writes holds no row of another space, and what it
stores joins no row of another space — and every other command is hub-wide by design, an
operator's tool at the server's console, said so below.

The commands are read from Django's own registry (``get_commands``), so a new command of the
hub fails ``test_every_command_is_scoped_or_hub_wide_by_design`` until it is placed in one of the
lists below, with its reason.
"""

from __future__ import annotations

import io

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command, get_commands, load_command_class
from django.db import connection

from core.spaces import HubWideCommand
from tests.isolation import CANARY, Teams, a_rows_snapshot, leaks, session_file, two_teams

pytestmark = pytest.mark.django_db

HUB_APPS = {"agents", "clusters", "core", "ingestion", "memories", "ultron_site"}

# --space scopes the command's reads and writes to that space (the database's scope, as an API
# request's): tested below, they must never emit or touch another space's rows.
SPACE_SCOPED = {
    "export_memories",  # --space: the rows of those spaces only (without it: every space, an operator's backup)
    "import_memories",  # --space: everything goes into that space; the duplicate checks see it alone
    "ingest",  # --space: the sessions, archives, segments and memories go to that space
}
# Who may do what: they read and write memberships, tokens and spaces, not a space's knowledge
# (--space on create_agent / create_user names a role to give, and reads no row of it).
ACCESS = {"create_agent", "create_user", "create_space", "ensure_admin", "reset_password"}
# Hub-wide by design: the operator's tools at the server's console, run as the tables' owner
# (``HubWideCommand``, or ``maintenance`` themselves) like ``migrate``:
HUB_WIDE = {
    "backup", "restore",  # the whole database, every space (a backup that left a space out would lose it)
    "embedded_replica",  # copies the embedded server whole (a streaming replica carries every space, as the primary)
    "reembed", "check_embedding_space", "calibrate",  # the embedding space and its thresholds are the hub's, not a space's
    "rebalance_tiers", "retry_merges", "run_pipeline", "setup_pipeline",  # the pipeline: each step runs once per space, in its scope
    "crystallize", "run_initial_clustering",  # the pipeline's cluster steps, by hand (each cluster's space is its own)
    "export_sft",  # training data for the hub's operator (the API's export is per space: /api/trajectories/export)
    "delete_space",  # names one space and deletes it whole (tests/agents/test_space_deletion.py)
    "hold_writer",  # takes back everything one agent wrote, in every space (tests/memories/test_hold_writer.py)
    "shell", "migrate", "flush",  # the operator's console and the schema
}


def _hub_commands() -> dict[str, str]:
    return {name: app for name, app in get_commands().items() if app in HUB_APPS}


def test_every_command_is_scoped_or_hub_wide_by_design():
    commands = _hub_commands()
    assert set(commands) == SPACE_SCOPED | ACCESS | HUB_WIDE, sorted(set(commands) ^ (SPACE_SCOPED | ACCESS | HUB_WIDE))
    assert not (SPACE_SCOPED & ACCESS or SPACE_SCOPED & HUB_WIDE or ACCESS & HUB_WIDE)
    for name, app in commands.items():
        command = load_command_class(app, name)
        takes_space = any("--space" in action.option_strings for action in command.create_parser("manage.py", name)._actions)
        if name in SPACE_SCOPED:
            assert takes_space and isinstance(command, HubWideCommand), name  # the owner's, narrowed by --space
        if name in HUB_WIDE and name not in ("migrate", "flush"):  # those two open maintenance themselves
            assert isinstance(command, HubWideCommand), name
        if name in ACCESS:
            assert not isinstance(command, HubWideCommand), name
        if takes_space:
            assert name in SPACE_SCOPED | ACCESS, name


@pytest.fixture
def teams(settings) -> Teams:
    return two_teams(settings)


def _call(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def test_export_of_team_b_holds_nothing_of_team_a(teams, tmp_path):
    printed = _call("export_memories", "-", "--space", "team-b")
    assert teams.b.word in printed and teams.b.memory_id in printed
    assert not leaks(teams, printed)
    path = tmp_path / "team-b.jsonl"
    assert not leaks(teams, _call("export_memories", str(path), "--space", "team-b"))
    written = path.read_text()
    assert written.count("\n") > 10 and not leaks(teams, written)
    # Without --space the operator's export is the whole hub: team A is in it (the test's control).
    assert CANARY in _call("export_memories", "-")


def test_import_and_ingest_into_team_b_touch_nothing_of_team_a(teams, tmp_path):
    """Team A's exact text and session file, brought into team B at the console: they become
    team B's rows (merged into nothing of team A's, joining none of its clusters), and what the
    commands print names nothing of team A."""
    before = a_rows_snapshot(teams)
    own = tmp_path / "team-b.jsonl"
    _call("export_memories", str(own), "--space", "team-b")
    printed = _call("import_memories", str(own), "--space", "team-b")  # idempotent: all of it is there
    assert "memory: 0 added" in printed and not leaks(teams, printed)
    # Team A's export brought into team B by the operator (who holds both): its memories' ids stay
    # team A's (bad lines naming the space that holds them: the console knows every space), its
    # clusters and skill come without them (no member, no cited memory of team A), and nothing of
    # team A changes.
    theirs = tmp_path / "team-a.jsonl"
    _call("export_memories", str(theirs), "--space", "team-a")
    err = io.StringIO()
    with pytest.raises(CommandError, match="bad line"):
        call_command("import_memories", str(theirs), "--space", "team-b", stdout=io.StringIO(), stderr=err)
    assert f"memory {teams.a.memory_id} is in space 'team-a'" in err.getvalue()
    from clusters.models import SkillVersion

    copy = SkillVersion.objects.get(space=teams.b.space, skill__slug=teams.a.skill_slug)
    assert copy.memory_ids == []
    _spaces_never_mix()
    assert a_rows_snapshot(teams) == before

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / f"{CANARY}-session.jsonl").write_bytes(session_file(CANARY))
    printed = _call("ingest", str(sessions), "--agent", teams.b.agent.name, "--space", "team-b", "--process")
    assert '"files": 1' in printed and not leaks(teams, printed)
    assert a_rows_snapshot(teams) == before
    # Team B now holds team A's text: two memories, one per space, never one shared.
    from memories.models import Memory

    lesson = Memory.objects.filter(content__icontains=f"for {CANARY}, always pin package versions")
    assert sorted(lesson.values_list("space__slug", flat=True)) == ["team-a", "team-b"]
    _spaces_never_mix()


def test_the_pipeline_run_by_hand_keeps_every_space_apart(teams):
    """``run_pipeline --all`` is hub-wide (an operator's), and runs each step once per space: no row
    it writes links two spaces."""
    printed = _call("run_pipeline", "--all")
    assert "failed_spaces" not in printed
    _spaces_never_mix()


def _spaces_never_mix() -> None:
    """No row anywhere points at a row of another space: every foreign key between two tables of
    spaces (a contribution's memory, a candidate's pair, a cluster's member, a skill's cluster, a
    segment's session, a segment's memory ...) and a skill version's memory ids stay in one space."""
    crossing = []
    with connection.cursor() as cursor:
        for model in apps.get_models():
            if not _has_space(model):
                continue
            for field in model._meta.concrete_fields:
                target = field.related_model if field.is_relation else None
                if target is None or field.name == "space" or not _has_space(target):
                    continue
                cursor.execute(
                    f"SELECT count(*) FROM {model._meta.db_table} r JOIN {target._meta.db_table} t "  # noqa: S608
                    f"ON r.{field.column} = t.{target._meta.pk.column} WHERE r.space_id <> t.space_id")
                if count := cursor.fetchone()[0]:
                    crossing.append(f"{model._meta.label}.{field.name}: {count}")
        cursor.execute("SELECT count(*) FROM clusters_skillversion v, unnest(v.memory_ids) m "
                       "JOIN memories_memory mm ON mm.id = m WHERE mm.space_id <> v.space_id")
        if count := cursor.fetchone()[0]:
            crossing.append(f"clusters.SkillVersion.memory_ids: {count}")
    assert not crossing, crossing


def _has_space(model) -> bool:
    return any(f.name == "space" and f.is_relation for f in model._meta.get_fields())
