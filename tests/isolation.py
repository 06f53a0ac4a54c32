"""Two teams' knowledge side by side, for the isolation suite (issue 34): space ``team-a`` holds
rows of every kind a space holds, each carrying a word no other row has (``CANARY``), and space
``team-b`` holds the same kinds of rows with a word of its own. Callers of team B then try every
door of the hub; ``leaks`` says whether an answer shows anything of team A.

Team A's integer ids are made unmistakable (``A_IDS_FROM``): its rows are stored after the
tables' sequences were moved past every id handed out before (team B's rows, earlier tests'), and
moved again past team A's afterwards, so an integer of team A in an answer is team A's and nothing
else's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import connection

from agents.models import Agent, Role, Space
from agents.scoping import in_space
from agents.services import agent_create, space_create, token_issue
from bench.fuzz import ForeignData, sequences_past_every_id

CANARY = "zebraquartz"  # in every text team A stores, and nowhere else
B_WORD = "koalafjord"  # team B's own
A_IDS_FROM = 9_100_000  # team A's integer ids are at least this: far above any count an answer holds

# Near-identical subjects in both spaces: a search, a duplicate check or a cluster that crossed the
# wall would find the other team's rows.
_STARTUP = [
    ("Django cannot reach PostgreSQL when the web container of {w} starts", "add a healthcheck to the db service"),
    ("Django fails to connect to PostgreSQL during docker compose up for {w}", "use depends_on with condition service_healthy"),
    ("the {w} web service starts before postgres is ready in docker compose", "retry the connection with exponential backoff"),
    ("psycopg OperationalError in {w}: connection refused at container start-up", "wait for pg_isready in the entrypoint"),
]


def session_file(word: str) -> bytes:
    """A session of a Docker build fixed, mentioning ``word`` throughout (one segment, two lessons)."""
    rows = [
        {"role": "user", "content": f"pip install fails inside the {word} Docker build, please fix it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                           "input": {"command": f"docker build -t {word} ."}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": f"ERROR: Could not find a version that satisfies the requirement {word}-client"}]},
        {"role": "assistant", "content": f"The {word} build container has no outbound network. The fix was to pass "
                                         "--network host so pip can reach the index; I changed the Makefile."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash",
                                           "input": {"command": f"docker build --network host -t {word} ."}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Successfully built 3f2a"}]},
        {"role": "assistant", "content": f"Fixed: the {word} image builds successfully now."},
        {"role": "user", "content": f"great, thanks. For {word}, always pin package versions in requirements files."},
    ]
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


@dataclass
class TeamRows:
    """What one team stored: its space, its writer agent and the rows of every kind."""

    space: Space
    agent: Agent
    word: str
    memory_ids: list[str]
    cluster_id: int
    skill_slug: str
    skill_id: int
    version: int
    version_id: int
    job_id: str
    session_id: int
    segment_ids: list[int]
    candidate_id: int
    change_id: int  # a conflict between two of its memories, open for a curator
    cluster_change_id: int  # a cluster change (a move by hand), to undo
    suggestion_id: int  # a merge suggestion of two of its clusters
    type_change_id: int  # a type the classifier was unsure of, open for a curator
    contribution_id: int
    hold_id: int  # a hold a curator approved (its memory served), one of a batch taken back from the writer
    hold_batch: Any
    raw_ids: list[int]
    report_id: int = 0  # an agent's report that one of its memories is wrong, open for a curator
    ints: set[int] = field(default_factory=set)  # every integer id of the team's rows

    @property
    def memory_id(self) -> str:
        return self.memory_ids[0]

    @property
    def memory_fields(self) -> dict[str, Any]:
        """The first memory's fields as uploaded (its exact duplicate is a contribution)."""
        return memory_fields(self.word)


def memory_fields(word: str) -> dict[str, Any]:
    return {"content": _STARTUP[0][0].format(w=word), "context": f"docker compose of the {word} project",
            "resolution": _STARTUP[0][1], "tags": [word]}


def text_lesson(word: str) -> str:
    """Plain text ``text_ingest`` extracts one memory from."""
    return f"Error: the {word} worker dies with SIGKILL under load.\nFix: raise the {word} worker's memory limit to 2 GiB.\n"


def _team(slug: str, word: str, settings: Any) -> TeamRows:
    import uuid

    from django.utils import timezone

    from clusters.models import (
        ClusterChange,
        ClusterMember,
        ClusterSuggestion,
        KnowledgeCluster,
        Skill,
        SkillVersion,
    )
    from clusters.services import cluster_crystallize
    from ingestion.models import RawUpload, TaskSegment
    from ingestion.services import files_ingest, session_process, text_ingest
    from memories.models import (
        KnowledgeChange,
        MemoryContribution,
        MemoryFeedback,
        MemoryHold,
        MemoryReport,
        MergeCandidate,
        TypeChange,
    )
    from memories.services import memory_upload

    space = space_create(slug=slug, name=f"Team {slug[-1].upper()}")
    agent = agent_create(name=f"writer-{slug}", spaces=[(space, Role.WRITER)])
    settings.ULTRON_CRYSTALLIZATION_THRESHOLD = 3
    with in_space(space.pk):
        memories = [memory_upload(content=content.format(w=word), context=f"docker compose of the {word} project",
                                  resolution=fix, tags=[word, "docker"], agent=agent, space=space).memory
                    for content, fix in _STARTUP]
        # An exact duplicate: a contribution and a hit on the first memory.
        memory_upload(**memory_fields(word), agent=agent, space=space)
        cluster = KnowledgeCluster.objects.filter(space=space).order_by("-member_count", "pk").first()
        version = cluster_crystallize(cluster_id=cluster.pk)
        assert version is not None and version.status == "published", "the team needs a published skill"
        candidate = MergeCandidate.objects.filter(space=space).first() or MergeCandidate.objects.create(
            space=space, memory=memories[1], duplicate_of=memories[0], similarity=0.8, conflicts=[word])
        change = KnowledgeChange.objects.create(space=space, kind="conflict", state="open", old=memories[2],
                                                new=memories[3], similarity=0.8, evidence=f"values: {word}")
        type_change = (TypeChange.objects.filter(space=space, state="open").first()
                       or TypeChange.objects.create(space=space, memory=memories[1], state="open",
                                                    chosen=memories[1].memory_type, runner_up="pattern", margin=0.1))
        hold = MemoryHold.objects.create(space=space, memory=memories[1], origin="recall", reasons=[], state="done",
                                         decision="approved", prior_status="active", batch=uuid.uuid4(), held_by="ada")
        # An agent's report that a memory is wrong, open in the review queue, with its vote.
        MemoryFeedback.objects.create(space=space, memory=memories[2], agent=agent, rating="wrong",
                                      reason=f"{word}: the port changed", served_at=timezone.now())
        report = MemoryReport.objects.create(space=space, memory=memories[2], agents=1)
        job, [result] = files_ingest(agent=agent, files=[(f"{word}-session.jsonl", session_file(word))], space=space)
        session_process(session_id=result.session_id)
        text_ingest(agent=agent, space=space, text=text_lesson(word))
        # A cluster change of its clusters (the repair's, undoable) and a merge suggestion of two of them.
        second = KnowledgeCluster.objects.filter(space=space).exclude(pk=cluster.pk).order_by("pk").first()
        assert second is not None, "the team needs two clusters"
        other = ClusterMember.objects.filter(cluster=second).values_list("memory_id", flat=True).first()
        moved = ClusterChange.objects.create(space=space, kind="move", from_cluster_id=cluster.pk,
                                             to_cluster_id=second.pk, from_topic=f"{word} topic", to_topic=second.topic,
                                             memory_ids=[other], decided_by="repair", similarity=0.7)
        suggestion = ClusterSuggestion.objects.create(
            space=space, first_id=min(cluster.pk, second.pk), second_id=max(cluster.pk, second.pk), similarity=0.7,
            shared_words=[word], pairs=[{"first": str(memories[0].pk), "second": str(other),
                                         "first_text": word, "second_text": word, "similarity": 0.7}])
        rows = TeamRows(
            space=space, agent=agent, word=word,
            memory_ids=[str(m.pk) for m in memories], cluster_id=cluster.pk, skill_slug=version.skill.slug,
            skill_id=version.skill_id, version=version.version, version_id=version.pk, job_id=str(job.pk),
            session_id=result.session_id,
            segment_ids=list(TaskSegment.objects.filter(session_id=result.session_id).values_list("pk", flat=True)),
            candidate_id=candidate.pk, change_id=change.pk, cluster_change_id=moved.pk, suggestion_id=suggestion.pk,
            type_change_id=type_change.pk,
            contribution_id=MemoryContribution.objects.filter(space=space).values_list("pk", flat=True).first(),
            hold_id=hold.pk, hold_batch=hold.batch,
            raw_ids=list(RawUpload.objects.filter(space=space).values_list("pk", flat=True)), report_id=report.pk,
        )
        assert rows.segment_ids and rows.contribution_id and len(rows.raw_ids) >= 2, rows
        for model in (KnowledgeCluster, ClusterMember, Skill, SkillVersion, MergeCandidate, MemoryContribution,
                      RawUpload, TaskSegment, KnowledgeChange, ClusterChange, ClusterSuggestion, TypeChange, MemoryHold,
                      MemoryFeedback, MemoryReport):
            rows.ints |= set(model.objects.filter(space=space).values_list("pk", flat=True))
        rows.ints.add(rows.session_id)
    return rows


@dataclass
class Teams:
    a: TeamRows
    b: TeamRows
    b_reader: Agent  # an ordinary agent of team B (a writer)
    b_staff: Agent  # team B's curator on the API: a staff agent writing to team B only
    b_token: str
    b_staff_token: str
    a_token: str  # team A's own callers: the same requests as theirs find team A's rows
    a_staff_token: str
    a_uuids: list[str]  # every memory of team A (uploaded, extracted from its session and text)

    @property
    def a_strings(self) -> list[str]:
        """What no answer to team B may contain as text: the canary, team A's slug, its skill's
        slug and every UUID of its rows."""
        return list(dict.fromkeys([CANARY, self.a.space.slug, self.a.skill_slug, self.a.job_id, *self.a.memory_ids,
                                   *self.a_uuids]))


def two_teams(settings: Any) -> Teams:
    """Team B's rows, then team A's (ids from ``A_IDS_FROM``), and team B's callers; run in the
    hub's upkeep scope (the test's default)."""
    from memories.models import Memory
    from memories.services import embedding_space_ensure

    embedding_space_ensure()
    b = _team("team-b", B_WORD, settings)
    start = sequences_past_every_id(A_IDS_FROM)
    a = _team("team-a", CANARY, settings)
    assert CANARY not in json.dumps(b.__dict__, default=str)
    assert min(a.ints) >= start > max(b.ints), (sorted(a.ints)[:3], sorted(b.ints)[-3:])
    assert a.skill_slug != b.skill_slug, "team A's skill slug must be its own"
    sequences_past_every_id()  # rows stored from now on (team B's writes) have ids of their own too
    b_reader = b.agent
    b_staff = agent_create(name="curator-of-team-b", staff=True, spaces=[(b.space, Role.WRITER)])
    a_staff = agent_create(name="curator-of-team-a", staff=True, spaces=[(a.space, Role.WRITER)])
    return Teams(a=a, b=b, b_reader=b_reader, b_staff=b_staff, b_token=token_issue(agent=b_reader).token,
                 b_staff_token=token_issue(agent=b_staff).token, a_token=token_issue(agent=a.agent).token,
                 a_staff_token=token_issue(agent=a_staff).token,
                 a_uuids=[str(pk) for pk in Memory.objects.filter(space=a.space).values_list("pk", flat=True)])


def leaks(teams: Teams, body: bytes | str, *, allowed: tuple[str, ...] = ()) -> list[str]:
    """What of team A ``body`` shows: the canary, team A's slugs, any UUID of its rows (as text),
    any of its integer ids (a JSON number, in a JSON body or JSON lines, or a number standing alone
    in text: a link's path, a file). ``allowed``: strings the request itself sent (an answer may
    repeat what it was asked). The fuzzer's ``no_foreign_data`` check reads answers the same way."""
    foreign = ForeignData(strings=teams.a_strings, ints=teams.a.ints)
    return foreign.found(body.encode() if isinstance(body, str) else body, sent=" ".join(allowed))


def a_rows_snapshot(teams: Teams) -> dict[str, list]:
    """Every row of team A's space, table by table, read past the policies: compared before and
    after team B's writes, which must change nothing of it."""
    from core.spaces import maintenance

    tables = sorted({m._meta.db_table for m in apps.get_models()
                     if any(f.name == "space" and f.is_relation for f in m._meta.get_fields())})
    snapshot = {}
    with maintenance(), connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"SELECT to_jsonb(t)::text FROM {table} t WHERE space_id = %s ORDER BY 1",  # noqa: S608
                           [teams.a.space.pk])
            snapshot[table] = [row[0] for row in cursor.fetchall()]
    return snapshot
