"""The segmenter's topic-shift threshold fitted to labelled sessions, for ``manage.py calibrate``
(``memories.calibration``; connected to its ``calibration_requested`` signal in ``receivers``).

Two hand-written sets of agent sessions with labelled task boundaries ship with the repository
(``tests/data/sessions_written``, ``tests/data/sessions_heldout``: Claude Code, Codex and OpenAI
chat shapes; each boundary has a window where a cut still counts as right). Every session is
segmented by the offline segmenter, cues and the agent's own cuts included, at each candidate
value; a predicted cut is right when it falls inside a labelled window, each window matched once
(the scoring of ``bench/sessions.py``). The pipeline redacts a session before segmenting it; the
fit reads the files as they are (their texts hold nothing redaction would replace but names).

- ``shift``: the best boundary F1 over both sets (a missed boundary mixes two tasks' lessons, a
  spurious one splits a task's: equal costs); the middle of the best values when several tie.
"""

from __future__ import annotations

from pathlib import Path

from ingestion.judgements.segmentation import GoalTurns, goal_bounds, goal_texts, goal_turns
from ingestion.parsing import Message, parse_jsonl
from memories.calibration import (
    Embed,
    Fitted,
    SetResult,
    best_plateau,
    grid,
    labelled_path,
    read_jsonl,
)

SESSION_SETS = {"sessions_written": labelled_path("sessions_written"),
                "sessions_heldout": labelled_path("sessions_heldout")}
STEP = 0.01


def boundary_scores(predicted: dict[str, list[int]], labels: list[dict]) -> dict[str, float]:
    """Precision, recall and F1 of predicted cuts (file → first lines of every segment but the
    first) against labelled boundaries (``{"file", "tasks": [{"window": [lo, hi]}, ...]}``)."""
    hits = guessed = wanted = 0
    for label in labels:
        windows = [task["window"] for task in label["tasks"][1:]]
        cuts = predicted.get(label["file"], [])
        guessed += len(cuts)
        wanted += len(windows)
        free = list(windows)
        for cut in cuts:
            window = next((w for w in free if w[0] <= cut <= w[1]), None)
            if window is not None:
                free.remove(window)
                hits += 1
    precision = hits / guessed if guessed else 0.0
    recall = hits / wanted if wanted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"boundaries": wanted, "cuts": guessed, "right": hits, "precision": precision, "recall": recall, "f1": f1}


def _sessions(folder: Path) -> tuple[list[dict], dict[str, list[Message]]]:
    labels = read_jsonl(folder / "boundaries.jsonl")
    return labels, {label["file"]: parse_jsonl((folder / label["file"]).read_bytes(), label["file"]).messages
                    for label in labels}


def _cuts(sessions: dict[str, tuple[list[Message], GoalTurns]], threshold: float) -> dict[str, list[int]]:
    """The first line of every segment but the first, per session."""
    cuts = {}
    for name, (messages, turns) in sessions.items():
        bounds = goal_bounds(messages, turns, threshold)
        cuts[name] = [messages[start].line for start, end in zip(bounds[1:], bounds[2:], strict=False) if end > start]
    return cuts


def shift_threshold_fit(embed: Embed) -> list[Fitted]:
    parsed = {name: _sessions(folder) for name, folder in SESSION_SETS.items()}
    # Every goal turn embedded in one call, before the sessions ask for them one by one.
    embed([text for _, sessions in parsed.values() for messages in sessions.values()
           for text in goal_texts(messages)[1]])
    sets = {name: (labels, {file: (messages, goal_turns(messages, embed=embed)) for file, messages in sessions.items()})
            for name, (labels, sessions) in parsed.items()}
    values = grid(0.0, 0.95, STEP)
    scores: dict[float, dict[str, dict[str, float]]] = {}
    for value in map(float, values):
        per_set = {name: boundary_scores(_cuts(sessions, value), labels)
                   for name, (labels, sessions) in sets.items()}
        right = sum(s["right"] for s in per_set.values())
        cuts = sum(s["cuts"] for s in per_set.values())
        wanted = sum(s["boundaries"] for s in per_set.values())
        precision, recall = (right / cuts if cuts else 0.0), (right / wanted if wanted else 0.0)
        per_set["pooled"] = {"boundaries": wanted, "cuts": cuts, "right": right, "precision": precision,
                             "recall": recall, "f1": 2 * precision * recall / (precision + recall) if right else 0.0}
        scores[value] = per_set
    chosen = best_plateau(values, [scores[float(v)]["pooled"]["f1"] for v in values])
    results = [SetResult(name, f"{len(sets[name][0]) if name in sets else sum(len(s[0]) for s in sets.values())} "
                               f"sessions, {s['boundaries']} boundaries: precision {s['precision']:.3f} "
                               f"recall {s['recall']:.3f} F1 {s['f1']:.3f} ({s['right']} right of {s['cuts']} cuts)", s)
               for name, s in scores[chosen].items()]
    return [Fitted("shift", chosen, "best boundary F1 of the offline segmenter over both sets (middle of the best values)",
                   results, list(SESSION_SETS.values()))]

