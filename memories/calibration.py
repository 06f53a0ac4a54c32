"""Fitting an embedding space's thresholds to labelled data (``manage.py calibrate``).

Every value in ``memories.thresholds`` has one stated rule. The rules read the similarities the
configured embedder gives on the labelled sets the repository ships in ``tests/data/`` (tracked
in git, so present in every clone; the hub runs from its checkout, never from an installed
package), and report, per set, what the chosen value is expected to give. The memory service's
values are fitted here; the clusters' and the segmenter's beside their own rules, in
``clusters.calibration`` and ``ingestion.calibration``, which answer the
``calibration_requested`` signal (this app may not import them).

- ``duplicate`` (automatic merge; for precision, a wrong merge hides a memory): the lowest
  similarity from which automatic merges (similarity at or above it, no conflicting details)
  keep precision ≥ ``AUTO_PRECISION`` on every pair set, at that value and every higher one (a
  set of distinct pairs only, the hard negatives, allows no merge at all); then halfway from
  there to 1.0, a margin for texts unlike the labelled ones. (The margin is not idle: on the
  STS Benchmark, which the bench reads but the repository does not ship, MiniLM's first wrong
  merge sits above the shipped sets' safe point.)
- ``soft`` (merge candidate; for recall, a duplicate below it is stored twice): the highest
  similarity, at most ``duplicate``, at which ``CANDIDATE_RECALL`` of the labelled duplicates
  (pooled over the sets) are merged or put before a judge.
- ``floor`` (search relevance; for recall, losing the obvious match is a regression): the
  highest similarity that keeps ≥ ``FLOOR_RECALL`` of the relevant query–memory pairs of every
  set above it: the hand-labelled queries (``relevance_queries.jsonl``), each topic member's
  text as a query for its nearest fellow member (``cluster_topics.jsonl``) and each labelled
  duplicate for its twin (``dedup_pairs.jsonl``). Reported too: how many off-topic and
  nonsense queries then find nothing on the vector side.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from memories import signals
from memories.text import embedding_text
from memories.thresholds import VALUES

Embed = Callable[[list[str]], np.ndarray]

AUTO_PRECISION = 0.99
CANDIDATE_RECALL = 0.85
FLOOR_RECALL = 0.99
STEP = 0.005


def labelled_path(name: str) -> Path:
    """A labelled set the repository ships (tests/data)."""
    return Path(settings.BASE_DIR) / "tests" / "data" / name


PAIRS_FILE = labelled_path("dedup_pairs.jsonl")
TOPICS_FILE = labelled_path("cluster_topics.jsonl")
RELEVANCE_FILE = labelled_path("relevance_queries.jsonl")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def grid(low: float, high: float, step: float = STEP) -> np.ndarray:
    """Candidate values from ``low`` to ``high`` inclusive."""
    count = int(round((high - low) / step))
    return np.round(low + step * np.arange(count + 1), 4)


def best_plateau(values: np.ndarray, scores: list[float]) -> float:
    """The middle of the longest run of values sharing the best score (scores on a few hundred
    labelled items move in steps; the middle of a flat best stays furthest from both edges)."""
    top = max(scores)
    runs: list[list[float]] = []
    current: list[float] = []
    for value, score in zip(values, scores, strict=True):
        if math.isclose(score, top, abs_tol=1e-9):
            current.append(float(value))
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    longest = max(runs, key=len)
    return longest[(len(longest) - 1) // 2]


def f_beta(precision: float, recall: float, beta: float) -> float:
    if precision + recall == 0:
        return 0.0
    return (1 + beta * beta) * precision * recall / (beta * beta * precision + recall)


class CachedEmbed:
    """The embedder with each distinct text embedded once (the fits share texts, and the
    segmenter's fit segments every session once per candidate value)."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vector in zip(missing, self._embed(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])


@dataclass
class SetResult:
    """What a fitted value is expected to give on one labelled set."""

    name: str
    line: str
    figures: Mapping[str, float | None] = field(default_factory=dict)  # None: not defined on this set


@dataclass
class Fitted:
    name: str  # one of memories.thresholds.VALUES
    value: float
    rule: str
    sets: list[SetResult]
    sources: list[Path]  # the labelled files read
    reached: bool = True  # False: no value met the rule's target; the nearest one is given
    basis: dict[str, float | None] = field(default_factory=dict)  # what the rule found on the way

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sources"] = [str(p.relative_to(settings.BASE_DIR)) for p in self.sources]
        return data


@dataclass
class Calibration:
    fitted: dict[str, Fitted]

    def values(self) -> dict[str, float]:
        return {name: self.fitted[name].value for name in VALUES}

    def report(self) -> dict[str, Any]:
        return {name: self.fitted[name].as_dict() for name in VALUES}


# --- pairs: automatic merges and merge candidates ------------------------------------------


def pair_sets() -> dict[str, list[tuple[str, str, bool]]]:
    """``dedup_pairs.jsonl`` by set: hard negatives (all distinct), pairs from real sessions and
    from LoCoMo conversations (the same lesson or fact reworded, or another one)."""
    sets: dict[str, list[tuple[str, str, bool]]] = {}
    for row in read_jsonl(PAIRS_FILE):
        sets.setdefault(row["set"], []).append((row["a"], row["b"], bool(row["duplicate"])))
    return sets


class ScoredPairs:
    """One set's pairs as the duplicate check sees them: similarity, conflicting details, truth."""

    def __init__(self, pairs: list[tuple[str, str, bool]], embed: Embed) -> None:
        from memories.judgements.same_subject import details_conflicts

        first = embed([embedding_text(a, "", "") for a, _, _ in pairs])
        second = embed([embedding_text(b, "", "") for _, b, _ in pairs])
        self.truth = np.array([dup for _, _, dup in pairs], dtype=bool)
        self.similarity = (first * second).sum(axis=1)
        self.clean = np.array([not details_conflicts(a, b) for a, b, _ in pairs], dtype=bool)

    @classmethod
    def from_arrays(cls, *, similarity: Iterable[float], truth: Iterable[bool],
                    clean: Iterable[bool] | None = None) -> ScoredPairs:
        """Pairs already scored (similarities known; no conflicting details unless ``clean`` says so)."""
        scored = cls.__new__(cls)
        scored.similarity = np.asarray(list(similarity), dtype=np.float64)
        scored.truth = np.asarray(list(truth), dtype=bool)
        scored.clean = np.ones(len(scored.truth), dtype=bool) if clean is None else np.asarray(list(clean), dtype=bool)
        return scored

    def automatic(self, duplicate: float) -> np.ndarray:
        return (self.similarity >= duplicate) & self.clean

    def judged(self, soft: float) -> np.ndarray:
        """Merged automatically or put before a judge (the LLM or a curator)."""
        return self.similarity >= soft

    def precision(self, chosen: np.ndarray) -> float:
        return float((chosen & self.truth).sum() / chosen.sum()) if chosen.sum() else 1.0

    def recall(self, chosen: np.ndarray) -> float:
        return float((chosen & self.truth).sum() / self.truth.sum()) if self.truth.sum() else float("nan")


def fit_duplicate(sets: dict[str, ScoredPairs]) -> Fitted:
    values = grid(0.0, 1.0)
    lowest = None
    for value in values[::-1]:  # from the top down: the value and every higher one must be safe
        if not all(s.precision(s.automatic(value)) >= AUTO_PRECISION for s in sets.values()):
            break
        lowest = float(value)
    reached = lowest is not None
    chosen = min(1.0, math.ceil((lowest + (1.0 - lowest) / 2) / STEP) * STEP) if lowest is not None else 1.0
    chosen = round(chosen, 4)
    results = []
    for name, s in sets.items():
        auto = s.automatic(chosen)
        wrong = int((auto & ~s.truth).sum())
        figures = {"pairs": len(s.truth), "duplicates": int(s.truth.sum()), "precision": s.precision(auto),
                   "recall": s.recall(auto) if s.truth.any() else None, "wrong": wrong}
        line = (f"{figures['pairs']} pairs, {figures['duplicates']} duplicates: automatic merges "
                + (f"precision {figures['precision']:.3f} recall {figures['recall']:.3f}" if s.truth.any()
                   else f"wrong {wrong}"))
        results.append(SetResult(name, line, figures))
    rule = (f"lowest similarity with automatic-merge precision ≥ {AUTO_PRECISION} on every set at it and above "
            f"({'none' if lowest is None else f'{lowest:.3f}'}), then halfway to 1.0")
    return Fitted("duplicate", chosen, rule, results, [PAIRS_FILE], reached, {"lowest_safe": lowest})


def fit_soft(sets: dict[str, ScoredPairs], duplicate: float) -> Fitted:
    with_duplicates = {name: s for name, s in sets.items() if s.truth.any()}
    similarity = np.concatenate([s.similarity[s.truth] for s in with_duplicates.values()])
    values = grid(-1.0, duplicate)
    reach = [float(v) for v in values if (similarity >= v).mean() >= CANDIDATE_RECALL]
    chosen = max(reach) if reach else float(values[0])
    results = []
    for name, s in sets.items():
        judged = s.judged(chosen)
        candidates = judged & ~s.automatic(duplicate)
        distinct = int((candidates & ~s.truth).sum())
        figures = {"pairs": len(s.truth), "duplicates": int(s.truth.sum()),
                   "candidate_recall": s.recall(judged) if s.truth.any() else None,
                   "candidates": int(candidates.sum()), "candidates_distinct": distinct}
        line = (f"candidate recall {figures['candidate_recall']:.3f} · " if s.truth.any() else "") + (
            f"{figures['candidates']} candidates, {distinct} of them distinct pairs")
        results.append(SetResult(name, line, figures))
    pooled = float((similarity >= chosen).mean())
    results.append(SetResult("pooled", f"candidate recall {pooled:.3f} over {len(similarity)} duplicates",
                             {"candidate_recall": pooled}))
    rule = f"highest similarity (≤ duplicate) at which ≥ {CANDIDATE_RECALL} of the labelled duplicates are merged or judged"
    return Fitted("soft", chosen, rule, results, [PAIRS_FILE], bool(reach))


# --- search: the relevance floor -------------------------------------------------------------


def fit_floor(embed: Embed, pairs: dict[str, ScoredPairs]) -> Fitted:
    from memories.selectors.search import query_embedding_text

    rows = read_jsonl(RELEVANCE_FILE)
    topics = read_jsonl(TOPICS_FILE)
    relevant_rows = [r for r in rows if r["memory"]]
    memories = [embedding_text(r["memory"]["content"], r["memory"].get("context", ""),
                               r["memory"].get("resolution", "")) for r in relevant_rows]
    topic_texts = [embedding_text(t["content"], t.get("context", ""), t.get("resolution", "")) for t in topics]
    memory_vectors = embed(memories)
    topic_vectors = embed(topic_texts)
    queries = embed([query_embedding_text(r["query"]) for r in relevant_rows])
    relevant: dict[str, np.ndarray] = {"relevance queries": (queries * memory_vectors).sum(axis=1)}
    # Each topic member's own text (without its context and resolution) as a query for the nearest other member.
    members = [i for i, t in enumerate(topics) if t.get("topic")]
    member_queries = embed([topics[i]["content"] for i in members])
    labels = np.array([t.get("topic") or "" for t in topics])
    mates = []
    for query, index in zip(member_queries, members, strict=True):
        others = (labels == labels[index])
        others[index] = False
        if others.any():
            mates.append(float((topic_vectors[others] @ query).max()))
    relevant["topic mates"] = np.array(mates)
    relevant["duplicate pairs"] = np.concatenate([s.similarity[s.truth] for s in pairs.values() if s.truth.any()])
    # Off-topic and nonsense queries against every memory text of both files: the best match they would get.
    pool = np.concatenate([memory_vectors, topic_vectors])
    irrelevant: dict[str, list[float]] = {}
    off = [r for r in rows if not r["memory"]]
    for row, vector in zip(off, embed([query_embedding_text(r["query"]) for r in off]), strict=True):
        irrelevant.setdefault(row["kind"], []).append(float((pool @ vector).max()))
    values = grid(-1.0, 1.0)
    reach = [float(v) for v in values if all((sims >= v).mean() >= FLOOR_RECALL for sims in relevant.values())]
    chosen = max(reach) if reach else float(values[0])
    results = []
    for name, sims in relevant.items():
        kept = float((sims >= chosen).mean())
        results.append(SetResult(name, f"{len(sims)} relevant pairs: {kept:.3f} kept above the floor "
                                       f"(lowest similarity {sims.min():.3f})",
                                 {"pairs": len(sims), "recall": kept, "lowest": float(sims.min())}))
    for kind, best in irrelevant.items():
        found = np.array(best)
        empty = float((found < chosen).mean())
        results.append(SetResult(f"{kind} queries", f"{len(found)} queries: {empty:.3f} find nothing by similarity "
                                                    f"against {len(pool)} memories",
                                 {"queries": len(found), "empty": empty}))
    rule = f"highest similarity keeping ≥ {FLOOR_RECALL} of every set's relevant query–memory pairs"
    return Fitted("floor", chosen, rule, results, [RELEVANCE_FILE, TOPICS_FILE, PAIRS_FILE], bool(reach))


# --- all of them --------------------------------------------------------------------------------


def calibration_fit(embed: Embed) -> Calibration:
    """Every value fitted with ``embed`` (texts to L2-normalised vectors, the configured embedder's)."""
    from memories.models import EmbeddingCalibration

    cached = CachedEmbed(embed)
    pairs = {name: ScoredPairs(items, cached) for name, items in pair_sets().items()}
    duplicate = fit_duplicate(pairs)
    fitted: list[Fitted] = [duplicate, fit_soft(pairs, duplicate.value), fit_floor(cached, pairs)]
    for _receiver, answer in signals.calibration_requested.send(sender=EmbeddingCalibration, embed=cached):
        fitted.extend(answer)  # type: ignore[arg-type]  # each receiver answers a list of Fitted
    by_name = {f.name: f for f in fitted}
    missing = [name for name in VALUES if name not in by_name]
    if missing:
        raise RuntimeError(f"no calibration rule answered for {', '.join(missing)}")
    return Calibration(by_name)
