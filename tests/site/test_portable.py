"""The portable export (manage.py export_memories / import_memories): a populated hub goes out
as JSON lines and comes back into an emptied hub row for row; a second import changes nothing;
bad lines are reported by number while the rest is stored; what comes in is redacted."""

from __future__ import annotations

import base64
import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from agents.models import Agent
from clusters.models import ClusterMember, KnowledgeCluster, Skill
from memories.models import Memory, MemoryContribution
from memories.services import embed_texts
from memories.text import content_hash, embedding_text
from tests.site.hub_rows import knowledge_rows, knowledge_wipe, populate

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _export(path: Path) -> list[dict]:
    out = StringIO()
    call_command("export_memories", str(path), stdout=out)
    assert "exported to" in out.getvalue()
    return [json.loads(line) for line in path.read_text().splitlines()]


def _import(path: Path) -> str:
    out, err = StringIO(), StringIO()
    try:
        call_command("import_memories", str(path), stdout=out, stderr=err)
    except CommandError as exc:
        raise AssertionError(f"{exc}\n{err.getvalue()}") from None
    return out.getvalue()


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_export_then_import_into_an_emptied_hub_restores_every_row_and_a_second_import_adds_nothing(
        settings, tmp_path):
    populate(settings)
    before = knowledge_rows()
    lines = _export(tmp_path / "hub.jsonl")
    assert lines[0]["kind"] == "header" and lines[0]["version"] == 2 and lines[-1]["kind"] == "end"
    kinds = {line["kind"] for line in lines[1:-1]}
    # A type the classifier was unsure of is exported too when the hub has one.
    assert kinds - {"type_change"} == {"memory", "contribution", "candidate", "change", "cluster", "skill"}
    assert (tmp_path / "hub.jsonl").stat().st_mode & 0o077 == 0

    knowledge_wipe()
    assert Memory.objects.count() == 0
    first = _import(tmp_path / "hub.jsonl")
    assert f"memory: {len(before['memories'])} added, 0 already there" in first
    after = knowledge_rows()
    for table in before:
        for key in before[table] if isinstance(before[table], dict) else range(len(before[table])):
            old, new = before[table][key], after[table].get(key) if isinstance(after[table], dict) else after[table][key]
            assert new == old, (table, key, {f: (v, (new or {}).get(f)) for f, v in old.items() if (new or {}).get(f) != v})
        assert len(after[table]) == len(before[table]), table

    second = _import(tmp_path / "hub.jsonl")
    for kind in ("memory", "contribution", "candidate", "change", "cluster", "skill"):
        assert f"{kind}: 0 added" in second
    assert knowledge_rows() == before
    assert "re-embedded" not in first + second  # same embedding space: the vectors were used as they are


def test_agents_missing_from_the_hub_are_created_without_tokens(settings, tmp_path):
    populate(settings)
    _export(tmp_path / "hub.jsonl")
    authors = dict(Memory.objects.values_list("pk", "agent__name"))
    knowledge_wipe()
    get_user_model().objects.filter(agent__isnull=False).delete()  # their agents go with them
    assert not Agent.objects.exists()
    output = _import(tmp_path / "hub.jsonl")
    assert "created agents (without tokens): " in output
    agents = Agent.objects.all()
    assert {a.name for a in agents} == {"alice-bot", "bob-bot"} and not any(a.tokens.exists() for a in agents)
    assert dict(Memory.objects.values_list("pk", "agent__name")) == authors


def test_bad_lines_are_reported_by_number_and_every_other_line_is_stored(settings, tmp_path):
    populate(settings)
    lines = _export(tmp_path / "hub.jsonl")
    before = knowledge_rows()
    knowledge_wipe()
    memories = [i for i, line in enumerate(lines) if line["kind"] == "memory"]
    broken = dict(enumerate(lines))
    broken[memories[0]] = '{"kind": "memory", "id": '                      # not JSON
    broken[memories[1]] = {**lines[memories[1]], "tier": "lukewarm"}        # a value out of its set
    broken[memories[2]] = {**lines[memories[2]], "embedding": "AAAA"}       # a vector of the wrong size
    _write(tmp_path / "broken.jsonl", [broken[i] for i in range(len(lines))])
    err = StringIO()
    with pytest.raises(CommandError, match=r"bad line\(s\) skipped .* the other lines were imported"):
        call_command("import_memories", str(tmp_path / "broken.jsonl"), stdout=StringIO(), stderr=err)
    reported = err.getvalue()
    assert f"line {memories[0] + 1}: not JSON" in reported
    assert f"line {memories[1] + 1}: tier: must be one of hot, warm, cold" in reported
    assert f"line {memories[2] + 1}: memory: embedding: holds 0 numbers" in reported
    lost = {lines[i]["id"] for i in memories[:3]}
    stored = {str(pk) for pk in Memory.objects.values_list("pk", flat=True)}
    assert stored == {str(pk) for pk in before["memories"]} - lost
    # Lines that name a memory the file failed to give are reported too, by their own numbers.
    dependent = [i for i, line in enumerate(lines)
                 if line["kind"] in ("contribution", "candidate", "type_change")
                 and {line["memory"], line.get("duplicate_of")} & lost
                 or line["kind"] == "change" and {line["old"], line["new"]} & lost]
    for i in dependent:
        assert f"line {i + 1}: {lines[i]['kind']}: " in reported and "is neither in the hub nor earlier" in reported
    assert reported.count("\n") == 3 + len(dependent)
    assert MemoryContribution.objects.count() == len(before["contributions"]) - sum(
        1 for i in dependent if lines[i]["kind"] == "contribution")


def test_a_slug_longer_than_the_column_is_refused_by_its_line(settings, tmp_path):
    """A skill slug over 50 characters would be stored cut, and the next import of the same file
    would then miss the skill and collide with it: the line is refused, naming the field."""
    populate(settings)
    lines = _export(tmp_path / "hub.jsonl")
    skills = [i for i, line in enumerate(lines) if line["kind"] == "skill"]
    assert skills
    lines[skills[0]] = {**lines[skills[0]], "slug": "a-" * 30 + "skill"}
    kept = [line for i, line in enumerate(lines) if i == 0 or i == skills[0]]
    err = StringIO()
    with pytest.raises(CommandError, match=r"bad line\(s\) skipped"):
        call_command("import_memories", str(_write(tmp_path / "long.jsonl", kept)), stdout=StringIO(), stderr=err)
    assert "line 2: slug: must be a skill slug of 1 to 50 characters" in err.getvalue()


def test_a_file_that_is_not_an_export_is_refused_and_stores_nothing(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_memories", str(tmp_path / "missing.jsonl"))
    _write(tmp_path / "other.jsonl", [{"messages": []}])
    with pytest.raises(CommandError, match="line 1: the first line is not the header"):
        call_command("import_memories", str(tmp_path / "other.jsonl"))
    assert Memory.objects.count() == 0


def test_a_file_cut_short_is_imported_as_far_as_it_goes_and_said_to_be_incomplete(settings, tmp_path):
    populate(settings)
    lines = _export(tmp_path / "hub.jsonl")
    knowledge_wipe()
    memories = [line for line in lines if line["kind"] == "memory"]
    _write(tmp_path / "short.jsonl", [lines[0], *memories])
    with pytest.raises(CommandError, match="no end line"):
        call_command("import_memories", str(tmp_path / "short.jsonl"), stdout=StringIO(), stderr=StringIO())
    assert Memory.objects.count() == len(memories)
    # Active memories the file gave no cluster join one, as uploads do.
    active = Memory.objects.filter(status="active").count()
    assert ClusterMember.objects.count() == active


def test_secrets_planted_in_an_imported_file_never_reach_the_database(settings, tmp_path):
    populate(settings)
    lines = _export(tmp_path / "hub.jsonl")
    knowledge_wipe()
    key = "AKIAZ7Q2XKLMN3PRST4V"
    password = "hunter2-Sup3r-S3cret!"
    memory = next(line for line in lines if line["kind"] == "memory")
    planted = {**memory, "content": f"deploy failed; aws_access_key_id={key}",
               "context": f"DB_PASSWORD={password}", "summary_l0": f"key {key}",
               "tags": [*memory["tags"], "mail grace.hopper@example.com"]}
    contribution = next(line for line in lines if line["kind"] == "contribution")
    contribution = {**contribution, "memory": memory["id"], "content": f"same with {key}"}
    skill = next(line for line in lines if line["kind"] == "skill")
    skill["versions"][0]["body"] += f"\n\nexport AWS_ACCESS_KEY_ID={key}\n"
    _write(tmp_path / "planted.jsonl",
           [lines[0], planted, contribution, *[line for line in lines if line["kind"] == "cluster"], skill, lines[-1]])
    output = _import(tmp_path / "planted.jsonl")
    assert "redacted on the way in: " in output

    stored = Memory.objects.get(pk=memory["id"])
    text = " ".join([stored.content, stored.context, stored.summary_l0, *stored.tags,
                     *MemoryContribution.objects.values_list("content", flat=True),
                     *Skill.objects.values_list("versions__body", flat=True)])
    assert key not in text and password not in text and "grace.hopper@example.com" not in text
    assert "<" in stored.content and "<" in stored.context
    # What is stored is consistent with its redacted text: hash and vector are of that text.
    assert stored.content_hash == content_hash(stored.content, stored.context, stored.resolution)
    expected = embed_texts([embedding_text(stored.content, stored.context, stored.resolution)])[0]
    assert np.allclose(np.asarray(stored.embedding), expected, atol=1e-6)
    assert sum(stored.redaction_counts.values()) > sum(memory["redaction_counts"].values())


def test_an_export_from_another_embedding_model_is_re_embedded_here(settings, tmp_path):
    populate(settings)
    lines = _export(tmp_path / "hub.jsonl")
    before = knowledge_rows()
    knowledge_wipe()
    lines[0]["embedding_space"] = {"provider": "openai", "model": "text-embedding-3-small", "dimensions": 8,
                                   "text_format": 2}
    rng = np.random.default_rng(7)
    for line in lines:  # vectors of that other space: 8 numbers each, useless here
        for name in ("embedding", "centroid"):
            if line.get(name):
                line[name] = base64.b64encode(rng.random(8, dtype=np.float32).tobytes()).decode()
    _write(tmp_path / "other-space.jsonl", lines)
    output = _import(tmp_path / "other-space.jsonl")
    assert f"re-embedded {len(before['memories'])} memories" in output
    for memory in Memory.objects.all():
        expected = embed_texts([embedding_text(memory.content, memory.context, memory.resolution)])[0]
        assert np.allclose(np.asarray(memory.embedding), expected, atol=1e-6)
    for cluster in KnowledgeCluster.objects.all():  # centroids are the sums of this space's vectors
        vectors = [np.asarray(m.vector) for m in cluster.members.all()]
        assert cluster.member_count == len(vectors)
        if vectors:
            assert np.allclose(np.asarray(cluster.centroid), np.sum(vectors, axis=0), atol=1e-5)
    assert all(s.embedding is not None for s in Skill.objects.filter(current_version__isnull=False))
    after = knowledge_rows()
    strip = ("embedding", "search_vector")
    assert ({k: {f: v for f, v in row.items() if f not in strip} for k, row in after["memories"].items()}
            == {k: {f: v for f, v in row.items() if f not in strip} for k, row in before["memories"].items()})


def test_members_whose_memories_come_in_a_later_file_complete_their_cluster_with_its_centroid_exact(
        settings, tmp_path):
    populate(settings)
    lines = _export(tmp_path / "hub.jsonl")
    before = knowledge_rows()
    knowledge_wipe()
    clusters = [line for line in lines if line["kind"] == "cluster"]
    largest = max(clusters, key=lambda line: len(line["members"]))
    late = {member["memory"] for member in largest["members"][1:]}  # all but the first come later
    memories = [line for line in lines if line["kind"] == "memory"]
    _write(tmp_path / "early.jsonl", [lines[0], *[m for m in memories if m["id"] not in late], *clusters, lines[-1]])
    _write(tmp_path / "late.jsonl", [lines[0], *[m for m in memories if m["id"] in late], *clusters, lines[-1]])

    _import(tmp_path / "early.jsonl")
    output = _import(tmp_path / "late.jsonl")
    assert f"memory: {len(late)} added" in output and "cluster: 0 added" in output and "1 completed" in output
    assert "put 0 memories" not in output and "into clusters" not in output  # every late memory found its cluster

    after = knowledge_rows()
    assert after["members"] == before["members"]  # same clusters, vectors, similarities and join times
    vectors_of = {str(memory_id): np.asarray(member["vector"]) for memory_id, member in after["members"].items()}
    for key, cluster in after["clusters"].items():
        assert cluster["member_count"] == before["clusters"][key]["member_count"]
        # A cluster left without members (its memory archived) is keyed by topic and time, its centroid zero.
        if not cluster["member_count"]:
            continue
        # The centroid is the sum of the members' vectors, as assignment keeps it (its direction their mean).
        vectors = [vectors_of[memory_id] for memory_id in key]
        assert np.allclose(np.asarray(cluster["centroid"]), np.sum(vectors, axis=0), atol=1e-5)
        assert np.allclose(np.asarray(cluster["centroid"]), np.asarray(before["clusters"][key]["centroid"]), atol=1e-5)


def test_the_decision_records_go_out_and_come_back_so_the_queue_and_undo_work_in_the_new_hub(settings, tmp_path):
    from clusters.models import ClusterChange, ClusterSuggestion, SkillVersion
    from clusters.services import cluster_change_undo
    from memories.models import KnowledgeChange, TypeChange
    from memories.selectors.review import review_queue_counts
    from tests.site.hub_rows import populate_decisions

    populate(settings)
    merge = populate_decisions()["merge"]
    before, queue = knowledge_rows(), review_queue_counts()
    lines = _export(tmp_path / "hub.jsonl")
    assert lines[0]["version"] == 2
    kinds = [line["kind"] for line in lines[1:-1]]
    for kind, model in (("change", KnowledgeChange), ("type_change", TypeChange), ("cluster_change", ClusterChange),
                        ("cluster_suggestion", ClusterSuggestion)):
        assert kinds.count(kind) == model.objects.count() == lines[0]["counts"][kind] > 0, kind
    # Every line refers only to lines before it: changes after memories, cluster records after clusters and skills.
    assert kinds.index("change") > max(i for i, k in enumerate(kinds) if k == "memory")
    assert kinds.index("cluster_change") > max(i for i, k in enumerate(kinds) if k == "skill")
    folded = next(line for line in lines if line["kind"] == "cluster_change" and line["change_kind"] == "merge")
    assert folded["from_cluster"] == merge.from_cluster_id and folded["skill_versions"]
    assert not any(line["kind"] == "cluster" and line["id"] == merge.from_cluster_id for line in lines)

    knowledge_wipe()
    assert not (KnowledgeChange.objects.exists() or TypeChange.objects.exists() or ClusterChange.objects.exists()
                or ClusterSuggestion.objects.exists())
    first = _import(tmp_path / "hub.jsonl")
    for kind in ("change", "type_change", "cluster_change", "cluster_suggestion"):
        assert f"{kind}: {kinds.count(kind)} added, 0 already there" in first, first
    after = knowledge_rows()
    for table in ("memories", "changes", "type_changes", "cluster_changes", "suggestions", "versions"):
        assert after[table] == before[table], table
    assert review_queue_counts() == queue  # the review queue holds what it held
    second = _import(tmp_path / "hub.jsonl")
    for kind in ("change", "type_change", "cluster_change", "cluster_suggestion"):
        assert f"{kind}: 0 added, {kinds.count(kind)} already there" in second
    assert knowledge_rows() == after

    # Undo works in the new hub: the folded-in cluster is made again under the id drawn for it, with
    # its members, and its skill versions name it again.
    imported = ClusterChange.objects.get(kind="merge")
    assert not KnowledgeCluster.objects.filter(pk=imported.from_cluster_id).exists()
    assert imported.from_cluster_id != merge.from_cluster_id  # drawn from this hub's sequence: no cluster has it
    cluster_change_undo(change_id=imported.pk, user="quinn")
    restored = KnowledgeCluster.objects.get(pk=imported.from_cluster_id)
    assert {str(m) for m in ClusterMember.objects.filter(cluster=restored).values_list("memory_id", flat=True)} == {
        str(m) for m in imported.memory_ids}
    assert set(SkillVersion.objects.filter(pk__in=imported.skill_version_ids).values_list("cluster_id", flat=True)) == {
        restored.pk}
    assert KnowledgeCluster.objects.create(space_id=restored.space_id, centroid=[0.0] * len(restored.centroid)).pk > max(
        restored.pk, imported.to_cluster_id)
