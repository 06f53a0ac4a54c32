"""Cluster assignment cost at scale, against a brute-force Python scan, and cluster quality.

    .venv/bin/python bench/clusters.py [--n 10000,100000] [--assign 200] [--json]
    .venv/bin/python bench/clusters.py --topics [--seeds 2] [--json]

``--topics``: the labelled topic set ``tests/data/cluster_topics.jsonl`` (dozens of topics, each
6-10 differently worded memories about one problem, plus unrelated singletons) is uploaded
through the hub's upload funnel in shuffled order; then the pipeline's cluster repair runs as
it would a day later. Reported before and after repair: topics gathered (one cluster holds ≥ 5
of the topic's memories, so it can crystallize), purity (share of each cluster's members from
its main topic, weighted by size; a singleton memory is its own topic) and clusters per memory.
Then each gathered topic's cluster is crystallized (offline unless an LLM is configured; nothing
stored): steps listed and distinct (the synthesis's own rule) against members, name length,
and how many keyword-list names or redundant skills pass the quality bar and verification.

Corpus: STS Benchmark sentences embedded with the hub's model, then noisy variations of them
up to N memories (so near-duplicates and clusters exist). Clusters are built with
``run_initial_clustering``; then new memories are assigned one at a time through the centroid
HNSW index (the hub's path) and, in the same run, by loading every centroid into Python and
computing cosines in a loop (the anchor's approach). Quality: STS pairs scored ≥ 4 should share
a cluster, pairs ≤ 2 should not.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    bench_database,
    django_setup,
    eval_path,
    print_table,
    skip,
    sts_sentences,
    write_results,
)


def sts_pairs() -> list[tuple[str, str, float]]:
    base = eval_path("paraphrase", "stsbenchmark")
    pairs = []
    for name in ("sts-dev.csv", "sts-test.csv"):
        for line in (base / name).read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 7:
                pairs.append((parts[5].strip(), parts[6].strip(), float(parts[4])))
    return pairs


def bulk_memories(vectors: np.ndarray, texts: list[str]) -> None:
    from django.db import connection

    from memories.models import Memory

    with connection.cursor() as cursor:  # bench-only: load fast, the memory ANN indexes are not used here
        for index in Memory._meta.indexes:
            if "embedding" in index.fields:
                cursor.execute(f'DROP INDEX IF EXISTS "{index.name}"')
    Memory.objects.bulk_create(
        [Memory(content=texts[i % len(texts)], memory_type="pattern", embedding=list(map(float, v)),
                content_hash=f"b{i}") for i, v in enumerate(vectors)],
        batch_size=2000,
    )


TOPICS_FILE = Path(__file__).resolve().parent.parent / "tests" / "data" / "cluster_topics.jsonl"


def topic_quality(upload_topic: dict, crystallize_at: int) -> dict:
    """Gathered topics, purity and cluster count, from the clusters in the database now."""
    from collections import Counter

    from memories.models import Memory, Status

    where = dict(Memory.objects.filter(status=Status.ACTIVE).values_list("pk", "cluster_member__cluster_id"))
    labels = {pk: topic for pk, topic in upload_topic.items() if pk in where}
    by_topic: dict[str, Counter] = {}
    by_cluster: dict[int, Counter] = {}
    for pk, topic in labels.items():
        by_cluster.setdefault(where[pk], Counter())[topic or f"single:{pk}"] += 1
        if topic:
            by_topic.setdefault(topic, Counter())[where[pk]] += 1
    gathered = sum(1 for counts in by_topic.values() if max(counts.values()) >= crystallize_at)
    members = sum(sum(c.values()) for c in by_cluster.values())
    return {
        "topics": len(by_topic),
        "gathered": gathered / len(by_topic),
        "topics_with_enough_memories": sum(1 for c in by_topic.values() if sum(c.values()) >= crystallize_at),
        "purity": sum(max(c.values()) for c in by_cluster.values()) / members,
        "clusters_per_memory": len(by_cluster) / members,
        "memories": members,
    }


def suggestion_quality(upload_topic: dict) -> dict:
    """The open merge suggestions after repair, and how many join two clusters whose members'
    main labelled topic is the same (a suggestion a curator should accept)."""
    from collections import Counter

    from clusters.models import ClusterMember, ClusterSuggestion

    main: dict[int, str] = {}
    counts: dict[int, Counter] = {}
    for memory_id, cluster_id in ClusterMember.objects.values_list("memory_id", "cluster_id"):
        counts.setdefault(cluster_id, Counter())[upload_topic.get(memory_id) or f"single:{memory_id}"] += 1
    for cluster_id, topics in counts.items():
        main[cluster_id] = topics.most_common(1)[0][0]
    pairs = list(ClusterSuggestion.objects.filter(status="open").values_list("first_id", "second_id", "similarity"))
    return {"pairs": len(pairs), "one_topic": sum(1 for a, b, _ in pairs if main.get(a) == main.get(b)),
            "similarities": sorted(round(s, 3) for _, _, s in pairs)}


def distinct_steps(steps: list[str]) -> int:
    """How many different actions a list of steps holds, by the synthesis's own rule (the
    same command or setting, or embeddings at the merge-candidate threshold)."""
    from clusters.judgements import skill_synthesis
    from clusters.judgements.skill_text import code_heads
    from memories.providers.embeddings import get_embedder
    from memories.thresholds import model_thresholds

    if not steps:
        return 0
    texts = [re.sub(r"\s*\[m:[0-9a-f]{8}\]", "", s) for s in steps]
    units = [skill_synthesis.Unit(t, None, i, code_heads(t)) for i, t in enumerate(texts)]  # type: ignore[arg-type]
    sim = skill_synthesis.similarity(units, get_embedder().embed)
    return len(skill_synthesis.group(units, sim, model_thresholds().soft))


def skills_on_topics(upload_topic: dict, crystallize_at: int) -> list[dict]:
    """For each topic gathered in one cluster (≥ ``crystallize_at`` of its memories), the skill
    offline crystallization writes for that cluster: steps (listed and distinct) against
    members, the name, and whether the quality bar and the verification pass it."""
    from collections import Counter

    from clusters.judgements.skill_draft import skill_draft
    from clusters.judgements.skill_text import is_keyword_list
    from clusters.models import KnowledgeCluster
    from clusters.services.crystallize import _facts
    from memories.models import Memory

    where = dict(Memory.objects.values_list("pk", "cluster_member__cluster_id"))
    by_topic: dict[str, Counter] = {}
    for pk, topic in upload_topic.items():
        if topic and where.get(pk):
            by_topic.setdefault(topic, Counter())[where[pk]] += 1
    out = []
    for topic, counts in sorted(by_topic.items()):
        cluster_id, held = counts.most_common(1)[0]
        if held < crystallize_at:
            continue
        cluster = KnowledgeCluster.objects.get(pk=cluster_id)
        members = _facts(cluster)
        # the slug the name gives, as for a new skill in an empty hub
        written = skill_draft(cluster.topic, members, slug_for=lambda base: base)
        draft = written.draft
        # an insufficient draft is not rendered: --show-skills prints why instead
        body = written.body or f"(no skill: {draft.insufficient})"
        out.append({"topic": topic, "body": body, "members": len(members), "steps": len(draft.steps),
                    "distinct_steps": distinct_steps(draft.steps), "name": draft.name,
                    "name_words": len(draft.name.split()), "keyword_name": is_keyword_list(draft.name),
                    # the bar's rule: two steps at the duplicate threshold or above
                    "redundant": bool(written.quality.details.get("redundant_steps")),
                    # stricter: two steps the synthesis's own grouping would join
                    "joinable": distinct_steps(draft.steps) < len(draft.steps),
                    "insufficient": bool(draft.insufficient),
                    "passed": written.passed})
    return out


def skill_rows(found: list[dict]) -> list[tuple[str, str]]:
    passed = [f for f in found if f["passed"]]
    made = [f for f in found if not f["insufficient"]]
    words = sorted(f["name_words"] for f in found)
    return [
        ("skills: topics that crystallize", f"{len(found)} ({len(made)} drafts with ≥ 3 steps, {len(passed)} pass)"),
        ("skills: steps listed / distinct / members (sums)",
         f"{sum(f['steps'] for f in found)} / {sum(f['distinct_steps'] for f in found)} / {sum(f['members'] for f in found)}"),
        ("skills: name words (median, max)", f"{statistics.median(words) if words else 0}, {max(words, default=0)}"),
        ("skills: keyword-list names drafted / passing", f"{sum(f['keyword_name'] for f in found)} / "
                                                         f"{sum(f['keyword_name'] for f in passed)}"),
        ("skills: redundant drafts / passing (steps at the duplicate threshold)",
         f"{sum(f['redundant'] for f in made)} / {sum(f['redundant'] for f in passed)}"),
        ("skills: drafts / passing with two steps the grouping would join (merge-candidate threshold)",
         f"{sum(f['joinable'] for f in made)} / {sum(f['joinable'] for f in passed)}"),
    ]


def topics_bench(seeds: int) -> tuple[list[tuple[str, str]], dict]:
    import datetime
    import json
    import random

    from django.conf import settings

    from clusters.models import KnowledgeCluster
    from clusters.services import clusters_repair
    from memories.services import memory_upload
    from memories.thresholds import model_thresholds

    rows_in = [json.loads(line) for line in TOPICS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    limits = model_thresholds()
    rows: list[tuple[str, str]] = [("thresholds", f"join {limits.cluster}, merge {limits.cluster_merge}")]
    figures: dict = {"join": limits.cluster, "merge": limits.cluster_merge, "runs": []}
    for seed in range(seeds):
        order = rows_in[:]
        random.Random(seed).shuffle(order)
        with bench_database():
            upload_topic: dict = {}
            merged = 0
            for row in order:
                result = memory_upload(content=row["content"], context=row.get("context", ""),
                                       resolution=row.get("resolution", ""))
                merged += result.merged
                upload_topic.setdefault(result.memory.pk, row["topic"])
            before = topic_quality(upload_topic, settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
            # A day later: singletons may now be re-assigned.
            KnowledgeCluster.objects.update(created_at=KnowledgeCluster.objects.first().created_at
                                            - datetime.timedelta(days=2))
            passes = []
            for _ in range(10):
                started = time.perf_counter()
                done = clusters_repair()
                passes.append({**done, "ms": round((time.perf_counter() - started) * 1000)})
                if not (done["merged"] or done["moved"]):  # suggestions are refreshed on every pass
                    break
            after = topic_quality(upload_topic, settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
            suggested = suggestion_quality(upload_topic)
            found = skills_on_topics(upload_topic, settings.ULTRON_CRYSTALLIZATION_THRESHOLD)
        figures["runs"].append({"seed": seed, "merged_uploads": merged, "before": before, "after": after,
                                "repair_passes": passes, "suggestions": suggested, "skills": found})
        for name, q in (("on arrival", before), ("after repair", after)):
            rows.append((f"seed {seed} {name}",
                         f"gathered {q['gathered']:.3f} of {q['topics']} topics · purity {q['purity']:.3f} · "
                         f"clusters/memory {q['clusters_per_memory']:.3f} ({q['memories']} memories, "
                         f"{merged} uploads merged)"))
        rows.append((f"seed {seed} repair passes", ", ".join(f"{p['merged']}m/{p['moved']}v {p['ms']} ms"
                                                            for p in passes)))
        rows.append((f"seed {seed} merge suggestions", f"{suggested['pairs']} pairs in the band, "
                     f"{suggested['one_topic']} of them two parts of one topic (their members' main topic)"))
        rows += [(f"seed {seed} {name}", value) for name, value in skill_rows(found)]
    for key in ("gathered", "purity", "clusters_per_memory"):
        figures[key] = min(r["after"][key] for r in figures["runs"]) if key != "clusters_per_memory" else max(
            r["after"][key] for r in figures["runs"])
    return rows, figures


def centroid_plan_index(memory_id) -> str:
    """Assign one memory and explain the centroid lookup it ran: the HNSW index it scans, or
    ``""`` when the planner reads every centroid instead (too few clusters for the index to
    pay), which would make the timings those of a scan."""
    from django.db import connection, transaction

    from clusters.services import cluster_assign

    captured: list = []

    def capture(execute, sql, params, many, context):
        if "ORDER BY direction <=>" in sql and not captured:
            captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        cluster_assign(memory_id=memory_id)
    sql, params = captured[0]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', '100', true)")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    found = re.search(r"\b(cluster_direction_hnsw)\b", plan)
    return found.group(1) if found else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", action="store_true", help="only the topic-set quality run")
    parser.add_argument("--seeds", type=int, default=2, help="shuffled upload orders for --topics")
    parser.add_argument("--n", default="10000,100000")
    parser.add_argument("--assign", type=int, default=200)
    parser.add_argument("--base", type=int, default=4000, help="real sentences to embed")
    parser.add_argument("--show-skills", type=int, default=0, metavar="K",
                        help="with --topics: print the SKILL.md of K topics' skills (the first run's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.topics:
        django_setup()
        rows, figures = topics_bench(args.seeds)
        print_table("Topic set: clusters that gather a topic", rows)
        for found in figures["runs"][0]["skills"][: args.show_skills]:
            verdict = "passes" if found["passed"] else "does not pass"
            print(f"\n--- {found['topic']} ({found['members']} members; {verdict}) ---\n{found['body']}")
        for run in figures["runs"]:
            for found in run["skills"]:
                found.pop("body")
        write_results("clusters_topics", figures, as_json=args.json)
        return
    if eval_path("paraphrase", "stsbenchmark") is None:
        skip("../shared/eval/paraphrase/stsbenchmark not found")
    django_setup()
    from django.db import connection

    from clusters.models import KnowledgeCluster
    from clusters.services import cluster_assign, clusters_rebuild
    from memories.models import Memory
    from memories.providers.embeddings import get_embedder
    from memories.services import embedding_space_ensure

    embedder = get_embedder()
    texts = sts_sentences(args.base)
    started = time.perf_counter()
    base = embedder.embed(texts)
    rows: list[tuple[str, str]] = [("embedded real sentences", f"{len(texts)} in {time.perf_counter() - started:.1f}s")]
    figures: dict = {}
    rng = np.random.default_rng(7)
    for n in [int(x) for x in args.n.split(",") if x.strip()]:
        picks = rng.integers(0, len(base), size=n + args.assign)
        noise = rng.normal(scale=0.35 / np.sqrt(base.shape[1]), size=(n + args.assign, base.shape[1]))
        vectors = base[picks] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with bench_database():
            embedding_space_ensure()
            started = time.perf_counter()
            bulk_memories(vectors[:n], [texts[i] for i in picks[:n]])
            load = time.perf_counter() - started
            started = time.perf_counter()
            built = clusters_rebuild()
            rebuild = time.perf_counter() - started
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE clusters_knowledgecluster")
            new_ids = [m.pk for m in Memory.objects.bulk_create(
                [Memory(content=texts[i], memory_type="pattern", embedding=list(map(float, v)), content_hash=f"n{k}")
                 for k, (i, v) in enumerate(zip(picks[n:], vectors[n:], strict=True))])]
            plan_index = centroid_plan_index(new_ids[0])
            index_times = []
            for memory_id in new_ids[1:]:
                started = time.perf_counter()
                cluster_assign(memory_id=memory_id)
                index_times.append(time.perf_counter() - started)
            # The anchor's approach: every centroid into Python, cosine in a loop, per new memory.
            brute_times = []
            for vector in vectors[n : n + min(args.assign, 50)]:
                started = time.perf_counter()
                centroids = list(KnowledgeCluster.objects.filter(member_count__gt=0).values_list("id", "centroid"))
                query = [float(x) for x in vector]
                best_sim = -2.0
                for _cluster_id, centroid in centroids:
                    c = [float(x) for x in centroid]
                    dot = sum(a * b for a, b in zip(query, c, strict=True))
                    norm = sum(b * b for b in c) ** 0.5 or 1.0
                    if dot / norm > best_sim:
                        best_sim = dot / norm
                brute_times.append(time.perf_counter() - started)
            clusters = KnowledgeCluster.objects.filter(member_count__gt=0).count()
            index_ms = statistics.median(index_times) * 1000
            brute_ms = statistics.median(brute_times) * 1000
            rows += [
                (f"n={n}: load / rebuild", f"{load:.1f}s / {rebuild:.1f}s → {built['clusters']} clusters"),
                (f"n={n}: assign via index", f"median {index_ms:.2f} ms, p95 {sorted(index_times)[int(0.95 * (len(index_times) - 1))] * 1000:.2f} ms"),
                (f"n={n}: brute-force Python scan", f"median {brute_ms:.1f} ms over {clusters} centroids"),
                (f"n={n}: brute force / index", f"{brute_ms / index_ms:.0f}x"),
                (f"n={n}: centroid lookup plan", plan_index or "no index: every centroid read"),
            ]
            figures[f"n{n}_plan_index"] = plan_index
            figures[f"n{n}_clusters"] = clusters
            figures[f"n{n}_assign_ms"] = index_ms
            figures[f"n{n}_bruteforce_ms"] = brute_ms
            figures[f"n{n}_bruteforce_ratio"] = brute_ms / index_ms
    # Quality on labelled pairs: each STS sentence is a memory; do paraphrases share a cluster?
    pairs = [p for p in sts_pairs() if p[2] >= 4 or p[2] <= 2][:1500]
    sentences = sorted({s for a, b, _ in pairs for s in (a, b)})
    with bench_database():
        embedding_space_ensure()
        vectors = embedder.embed(sentences)
        Memory.objects.bulk_create([Memory(content=s, memory_type="pattern", embedding=list(map(float, v)),
                                           content_hash=f"s{i}") for i, (s, v) in enumerate(zip(sentences, vectors, strict=True))])
        clusters_rebuild()
        where = dict(Memory.objects.values_list("content", "cluster_member__cluster_id"))
    same = [where[a] == where[b] for a, b, score in pairs if score >= 4]
    apart = [where[a] != where[b] for a, b, score in pairs if score <= 2]
    rows += [
        ("paraphrase pairs (STS ≥ 4) in one cluster", f"{np.mean(same):.3f} of {len(same)}"),
        ("unrelated pairs (STS ≤ 2) kept apart", f"{np.mean(apart):.3f} of {len(apart)}"),
    ]
    figures["pairs_together"] = float(np.mean(same))
    figures["pairs_apart"] = float(np.mean(apart))
    print_table("Clusters (2 cores)", rows)
    write_results("clusters", figures, as_json=args.json)


if __name__ == "__main__":
    main()
