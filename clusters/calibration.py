"""The clusters' thresholds fitted to the labelled topic set, for ``manage.py calibrate``
(``memories.calibration``; connected to its ``calibration_requested`` signal in ``receivers``).

``cluster_topics.jsonl`` holds dozens of topics, each several differently worded memories about
one problem, and unrelated singletons. Each rule replays what the hub does with their vectors,
in a few shuffled arrival orders: the rebuild's own greedy pass (``_group_in_order``: each memory
joins the most similar centroid at the join threshold or starts a cluster), then the repair's
merges (the most similar pair of centroids at the merge threshold or above first, the smaller
cluster into the larger, until none is left). Scored over pairs of memories: precision (two
memories in one cluster share a topic), recall (two memories of one topic share a cluster).

- ``cluster`` (join): the best F-beta with beta ``JOIN_BETA`` (precision first: a wrong join
  mixes two topics into one skill, a missed one waits for the repair or for more memories);
  the middle of the best values when several tie.
- ``cluster_merge``: above the join value, the lowest one at which the merges give their best
  F-beta (same beta): as much repair as never costs the labelled topics anything.
"""

from __future__ import annotations

import random

import numpy as np
from django.conf import settings

from clusters.services.rebuild import _group_in_order
from memories.calibration import (
    TOPICS_FILE,
    Embed,
    Fitted,
    SetResult,
    best_plateau,
    f_beta,
    grid,
    read_jsonl,
)
from memories.text import embedding_text

JOIN_BETA = 0.5
SEEDS = 2
STEP = 0.01


def _pairs(counts: np.ndarray) -> float:
    """How many pairs groups of these sizes hold."""
    return float((counts * (counts - 1) // 2).sum())


class TopicSet:
    def __init__(self, embed: Embed) -> None:
        rows = read_jsonl(TOPICS_FILE)
        self.vectors = np.asarray(embed([embedding_text(r["content"], r.get("context", ""), r.get("resolution", ""))
                                         for r in rows]), dtype=np.float32)
        # A singleton is its own topic.
        names = [r.get("topic") or f"single:{i}" for i, r in enumerate(rows)]
        self.names = sorted(set(names))
        self.topic = np.array([self.names.index(name) for name in names])
        self.real = np.array([not name.startswith("single:") for name in self.names])  # topics with several memories
        self.orders = []
        for seed in range(SEEDS):
            order = list(range(len(rows)))
            random.Random(seed).shuffle(order)
            self.orders.append(order)

    def join(self, threshold: float) -> list[np.ndarray]:
        """Each arrival order's cluster per memory (in file order)."""
        out = []
        for order in self.orders:
            grouping = _group_in_order(list(self.vectors[order]), threshold=threshold, dims=self.vectors.shape[1])
            assignment: np.ndarray = np.empty(len(order), dtype=int)
            assignment[order] = grouping.assignment
            out.append(assignment)
        return out

    def merges(self, assignment: np.ndarray, lowest: float) -> list[tuple[float, int, int]]:
        """The repair's merges of ``assignment``'s clusters down to ``lowest``, in order: (similarity,
        cluster kept, cluster folded into it). At a higher threshold the repair makes the same merges
        until the first below it."""
        clusters, members = np.unique(assignment, return_inverse=True)
        sums = np.zeros((len(clusters), self.vectors.shape[1]), dtype=np.float64)
        np.add.at(sums, members, self.vectors)
        sizes = np.bincount(members)
        units = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        sims = units @ units.T
        np.fill_diagonal(sims, -np.inf)
        alive: np.ndarray = np.ones(len(clusters), dtype=bool)
        done = []
        while alive.sum() > 1:
            a, b = (int(i) for i in np.unravel_index(int(np.argmax(sims)), sims.shape))
            if sims[a, b] < lowest:
                break
            keep, gone = (a, b) if (sizes[a], -a) >= (sizes[b], -b) else (b, a)
            done.append((float(sims[a, b]), int(clusters[keep]), int(clusters[gone])))
            sums[keep] += sums[gone]
            sizes[keep] += sizes[gone]
            alive[gone] = False
            units[keep] = sums[keep] / max(float(np.linalg.norm(sums[keep])), 1e-12)
            row = units @ units[keep]
            row[~alive] = -np.inf
            row[keep] = -np.inf
            sims[keep, :] = row
            sims[:, keep] = row
            sims[gone, :] = -np.inf
            sims[:, gone] = -np.inf
        return done

    @staticmethod
    def merged(assignment: np.ndarray, merges: list[tuple[float, int, int]], threshold: float) -> np.ndarray:
        out = assignment.copy()
        for similarity, keep, gone in merges:  # in order: a kept cluster may itself be folded later
            if similarity < threshold:
                break
            out[out == gone] = keep
        return out

    def quality(self, assignments: list[np.ndarray]) -> dict[str, float]:
        """Means over the arrival orders: pairwise precision and recall, topics gathered (one cluster
        holds enough of its memories to crystallize), purity, clusters per memory."""
        need = settings.ULTRON_CRYSTALLIZATION_THRESHOLD
        topics = len(self.names)
        same_topic = _pairs(np.bincount(self.topic))
        rows: list[dict[str, float]] = []
        for assignment in assignments:
            clusters, members = np.unique(assignment, return_inverse=True)
            # memories per (cluster, topic)
            counts = np.bincount(members * topics + self.topic, minlength=len(clusters) * topics).reshape(-1, topics)
            together, right = _pairs(counts.sum(axis=1)), _pairs(counts)
            precision = right / together if together else 1.0
            recall = right / same_topic
            rows.append({
                "precision": precision, "recall": recall, "f": f_beta(precision, recall, JOIN_BETA),
                "gathered": float((counts[:, self.real].max(axis=0) >= need).mean()),
                "purity": float(counts.max(axis=1).sum() / len(assignment)),
                "clusters_per_memory": len(clusters) / len(assignment),
            })
        return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def _line(q: dict[str, float]) -> str:
    return (f"pairs: precision {q['precision']:.3f} recall {q['recall']:.3f} (F{JOIN_BETA} {q['f']:.3f}) · "
            f"topics gathered {q['gathered']:.3f} · purity {q['purity']:.3f} · "
            f"clusters per memory {q['clusters_per_memory']:.3f}")


def cluster_thresholds_fit(embed: Embed) -> list[Fitted]:
    topics = TopicSet(embed)
    name = f"topics ({len(topics.topic)} memories, {SEEDS} arrival orders)"
    join_values = grid(0.2, 0.95, STEP)
    joined = {float(v): topics.join(float(v)) for v in join_values}
    join_quality = {v: topics.quality(a) for v, a in joined.items()}
    join = best_plateau(join_values, [join_quality[float(v)]["f"] for v in join_values])
    merge_values = grid(round(join + STEP, 4), 0.99, STEP)
    merges = [topics.merges(a, float(merge_values[0])) for a in joined[join]]
    merge_quality = {float(v): topics.quality([topics.merged(a, m, float(v)) for a, m in zip(joined[join], merges,
                                                                                             strict=True)])
                     for v in merge_values}
    best = max(q["f"] for q in merge_quality.values())
    merge = next(v for v in map(float, merge_values) if merge_quality[v]["f"] >= best - 1e-9)
    fitted_join = Fitted(
        "cluster", join, f"best pairwise F{JOIN_BETA} of the rebuild's greedy pass (middle of the best values)",
        [SetResult(name, _line(join_quality[join]), join_quality[join])], [TOPICS_FILE],
        reached=join_quality[join]["recall"] > 0,
    )
    fitted_merge = Fitted(
        "cluster_merge", merge, f"lowest value above the join at which the repair's merges give their best "
                                f"pairwise F{JOIN_BETA}",
        [SetResult(name, f"after the merges: {_line(merge_quality[merge])}", merge_quality[merge])], [TOPICS_FILE],
    )
    return [fitted_join, fitted_merge]

