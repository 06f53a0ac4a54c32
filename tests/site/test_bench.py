"""The benchmark scripts stay runnable and hold the figures bench/README.md documents: a small
run of each, reading ../shared/eval when present.

Timings on a shared 2-core machine vary several-fold, so speed is asserted as a ratio measured
within the run (the hub's way against the anchor's, on the same machine at the same moment),
with a margin, and only at sizes where the plan behind the documented figure is the one that
runs (each bench reports the index its query used). Quality figures are deterministic and held
close to the documented ones, read from bench/README.md itself so the two cannot drift apart.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench._common import eval_dir

ROOT = Path(__file__).resolve().parents[2]
EVAL = eval_dir()
README = (ROOT / "bench" / "README.md").read_text()
# Timing ratios measured on a loaded machine may fall this far below the documented ones.
SHARED_CPU_MARGIN = 3
# The hot paths' ratios (upload funnel against embedding, both timed in the same run): a
# slowdown of the path by more than this fails.
SLOWDOWN_MARGIN = 2


def documented(pattern: str) -> list[float]:
    """The numbers a pattern picks out of bench/README.md (commas as thousands separators)."""
    found = re.search(pattern, README)
    assert found, f"bench/README.md no longer states {pattern!r}"
    return [float(group.replace(",", "")) for group in found.groups()]


def _run(*args: str) -> dict:
    result = subprocess.run(
        [sys.executable, *args, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    last = result.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP"):
        pytest.skip(last)
    return json.loads(last)


def test_upload_bench_holds_its_ratios_to_embedding():
    """The funnel against embedding alone in the same run (one text at a time for single
    uploads, batches for the batch upload), held within 2× of the documented ratios: everything
    the funnel adds must not become several embeddings more. 40 uploads after an untimed one
    that loads the classifier and the redaction models. Runs on the project's own
    texts when ../shared/eval is absent (the ratio is about the path, not the texts)."""
    [ratio] = documented(r"ratio to single-text embedding \| \*\*([\d.]+)\*\* \(1 client\)")
    [batch_ratio] = documented(r"batch ratio to batched embedding \| \*\*([\d.]+)\*\* \(batches of 20\)")
    figures = _run("bench/upload.py", "--n", "40", "--clients", "1", "--batches", "20")
    assert figures["n"] == 40
    assert figures["funnel_1_ratio"] >= ratio / SLOWDOWN_MARGIN, figures
    assert figures["batch_20_ratio"] >= batch_ratio / SLOWDOWN_MARGIN, figures


def test_embed_bench_loads_the_onnx_model_without_torch_within_its_documented_memory():
    """Two fresh processes: the first builds the ONNX model into an empty data directory, the
    second loads it and embeds. Memory does not depend on the CPU: within half again of the
    documented RSS; torch is never imported."""
    [rss] = documented(r"RSS after the first embedding \(Django alone: \d+ MiB\) \| \*\*(\d+) MiB\*\*")
    figures = _run("bench/embed.py", "--queries", "20", "--texts", "32", "--clients", "2")
    first, later = figures["first_start"], figures["later_start"]
    assert first["build_graph_s"] > 0 and "build_graph_s" not in later  # built once, then reused
    assert later["rss_after_first_mib"] <= 1.5 * rss and later["loaded_torch"] is False, figures
    assert later["single_p50_ms"] > 0 and later["batch_per_s"] > 0 and later["clients_per_s"] > 0


@pytest.mark.skipif(not (EVAL / "pii").exists(), reason="../shared/eval not present")
def test_redaction_bench_smoke():
    figures = _run("bench/redaction.py", "--limit", "20")
    # Recall first: every scanner case and every labelled credential shape; the cost, false flags
    # by the secret detectors on ordinary technical lines, stays under 5 %. (detect-secrets' own
    # should-not-flag cases are reported, not bounded: many are secret-shaped, and we redact them.)
    assert figures["secrets_recall"] == 1.0
    assert figures["family_recall"] == 1.0
    assert figures["false_flags_ordinary_secret"] < 0.05
    assert figures.get("false_flags_session_secret", 0.0) < 0.05
    assert figures["cn_mobile_recall"] >= 0.99
    assert figures["any_rule_recall"] >= 0.95


@pytest.mark.skipif(not (EVAL / "transcripts").exists(), reason="../shared/eval not present")
def test_ingest_bench_learns_what_the_readme_says_from_the_real_sessions():
    """All five real sessions (the small ones alone give no eligible segment, so they test no
    learning): segments, eligible segments and memories are exact, and documented."""
    segments, eligible, memories = documented(r"\| segments / eligible / memories \| \*\*(\d+) / (\d+) / (\d+)\*\*")
    figures = _run("bench/ingest.py", "--samples", "1")
    assert figures["files"] == 5, figures
    assert (figures["segments"], figures["eligible"], figures["memories"]) == (segments, eligible, memories), figures


@pytest.mark.skipif(not (EVAL / "paraphrase").exists(), reason="../shared/eval not present")
def test_clusters_bench_uses_the_centroid_index_and_keeps_its_quality():
    """Enough clusters (≥ 200) that the centroid lookup runs on its HNSW index, as at the
    documented 10k; the index's advantage over the Python scan grows with the number of
    clusters (documented 20× at 1,367), so the bound is scaled to this run's count. The pair
    agreement on STS is deterministic."""
    [clusters_10k] = documented(r"clusters after `run_initial_clustering` \| ([\d,]+) \|")
    [ratio_10k] = documented(r"\| ratio \| (\d+)× \|")
    [together] = documented(r"share a\s+cluster ([\d.]+) of the time")
    [apart] = documented(r"unrelated pairs \(≤ 2\) are kept apart ([\d.]+)")
    figures = _run("bench/clusters.py", "--n", "1000", "--assign", "8", "--base", "1000")
    clusters = figures["n1000_clusters"]
    # pgvector 0.8's costs read a few hundred centroids exactly (a fraction of a millisecond); the
    # index takes over from some thousands (bench/README.md's 10k run shows it).
    assert figures["n1000_plan_index"] in ("cluster_direction_hnsw", ""), figures
    assert clusters >= 200, figures
    assert figures["n1000_bruteforce_ratio"] >= ratio_10k * clusters / clusters_10k / SHARED_CPU_MARGIN, figures
    assert figures["pairs_together"] >= together - 0.01 and figures["pairs_apart"] >= apart - 0.01, figures


def test_dedup_bench_meets_its_targets():
    """Automatic merges precise on every labelled set (hard negatives never merged), and most
    STS test duplicates at least put before a judge. The repository's own pair sets always
    run; STS only with ../shared/eval."""
    figures = _run("bench/dedup.py")
    sets = figures["sets"]
    assert {"hard_negatives", "sessions", "locomo"} <= set(sets)
    for name, result in sets.items():
        assert result["auto_precision"] >= 0.97, (name, result)
    assert sets["hard_negatives"]["auto_wrong"] == 0
    assert sets["locomo"]["auto_recall"] > 0.3 and sets["locomo"]["candidate_recall"] >= 0.9
    if "sts-test" in sets:
        assert sets["sts-test"]["candidate_recall"] >= 0.80
    assert figures["calibrated_duplicate"] <= figures["duplicate"]


def test_classify_bench_holds_its_measured_accuracy():
    """The offline type judgement on the held-out labelled set: measured 0.83-0.89 (the goal is
    0.90, not reached); this guards against falling back towards the cue words' 0.38."""
    figures = _run("bench/classify.py")
    assert figures["cases"] >= 300
    assert figures["accuracy"] >= 0.80
    assert figures["accuracy"] > figures["cue words alone (before)"] + 0.3
    # Unsure types go to review (documented: kept 0.953 with 17.0 % queued; the margin in force is
    # what the prototypes' own cross-validation chooses, the weight what the dev half chooses).
    review = figures["review"]
    assert review["all"]["kept_accuracy"] >= 0.94 and review["all"]["queued"] <= 0.23, review["all"]
    assert (review["margin"], review["weight"]) == (review["margin_cv_choice"], review["weight_dev_choice"])


@pytest.mark.skipif(not (EVAL / "locomo").exists(), reason="../shared/eval not present")
def test_locomo_bench_hybrid_recall_on_the_first_conversation():
    """Conversation 0 (150 questions; hybrid R@10 0.753 when written): near the documented
    per-conversation hybrid R@10, and above either list alone, which is what fusing them is for."""
    [hybrid] = documented(r"per conversation, \*\*hybrid\*\* \(RRF, the default\) \| [\d.]+ \| [\d.]+ \| \*\*([\d.]+)\*\*")
    figures = _run("bench/locomo.py", "--conversations", "1")
    assert figures["questions"] == 150
    assert figures["hybrid_recall_at_10"] >= hybrid - 0.03, figures
    assert figures["hybrid_recall_at_10"] > max(figures["semantic_recall_at_10"], figures["keyword_recall_at_10"])


def test_rebalance_bench_beats_the_loop_and_updates_in_place():
    """Set-based SQL against a Python loop saving each row (documented 37×), and with every HNSW
    index in place each tier change that is not an archival is a HOT update (migration 0004):
    no index touched, which is what keeps the rebalance cheap."""
    [loop_ratio] = documented(r"set-based SQL vs a Python loop saving each row \| [\d.]+ s vs [\d.]+ s \((\d+)×\)")
    figures = _run("bench/rebalance.py", "--n", "2000", "--loop-n", "2000", "--indexed-n", "1000")
    assert figures["loop_ratio"] >= loop_ratio / SHARED_CPU_MARGIN, figures
    assert figures["indexed_changed"] > figures["indexed_archived"] > 0, figures
    assert figures["indexed_hot_updates"] == figures["indexed_changed"] - figures["indexed_archived"], figures


def test_search_bench_runs_on_the_hnsw_indexes_with_the_documented_recall():
    """The service's query runs on the HNSW indexes (the whole table is not read and sorted),
    recall is measured on the index against a real exact scan, and both hold as at 100k. The
    Python scan grows with the rows and the service does not: the documented 3,770× at 100k is
    scaled to this run's size. (The API's p95 < 50 ms budget is a quiet-machine figure, not
    asserted here.)"""
    recall, recall_type = documented(r"recall@10 of the index vs exact \(100 queries\), no filter / memory_type \| "
                                     r"([\d.]+) / ([\d.]+)")
    [scan_ratio_100k] = documented(r"\| Python scan / service p50 \| ([\d,]+)×")
    n = 4000
    figures = _run("bench/search.py", "--n", str(n), "--queries", "5", "--base", "200")
    assert figures["n"] == n
    assert figures["service_plan_index"] == "memory_emb_active_hnsw", figures
    # One graph serves every filter (iterative scans); at this size a type's sixth of the rows is
    # fairly read exactly by the planner instead (bench/README.md shows the plan at 100k and 1M).
    assert figures["service_type_plan_index"] in ("memory_emb_active_hnsw", ""), figures
    assert figures["recall_plan_index"] == "memory_emb_active_hnsw" and figures["recall_exact_plan_index"] == ""
    assert figures["recall_type_plan_index"] == "memory_emb_active_hnsw" and figures["recall_type_exact_plan_index"] == ""
    assert figures["recall_at_10"] >= recall - 0.01 and figures["recall_at_10_type"] >= recall_type - 0.01, figures
    assert figures["bruteforce_ratio"] >= scan_ratio_100k * n / 100_000 / SHARED_CPU_MARGIN, figures


@pytest.mark.skipif(not (EVAL / "paraphrase").exists(), reason="../shared/eval not present")
def test_memory_bench_stays_near_the_documented_peaks():
    """Peak RSS does not depend on the CPU: within half again of the documented figures (the
    worker here ingests one session, the documented run two)."""
    [baseline] = documented(r"`manage.py check` \(Django alone[^|]*\| (\d+) MiB")
    idle, peak = documented(r"after 30 uploads \+ searches[^|]*\| (\d+) / (\d+) MiB")
    [worker] = documented(r"pipeline worker: ingest[^|]*\| (\d+) MiB")
    figures = _run("bench/memory.py", "--requests", "2", "--sessions", "1")
    assert idle / 2 < figures["web_idle_mib"] <= figures["web_peak_mib"] <= 1.5 * peak, figures
    assert figures["baseline_mib"] <= 1.5 * baseline and figures["worker_peak_mib"] <= 1.5 * worker, figures
