"""The benchmark scripts stay runnable: a tiny run of each, reading ../shared/eval when present."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench._common import eval_dir

ROOT = Path(__file__).resolve().parents[2]
EVAL = eval_dir()


def _run(*args: str) -> dict:
    result = subprocess.run(
        [sys.executable, *args, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    last = result.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP"):
        pytest.skip(last)
    return json.loads(last)


@pytest.mark.skipif(not (EVAL / "paraphrase").exists(), reason="../shared/eval not present")
def test_upload_bench_smoke():
    figures = _run("bench/upload.py", "--n", "8", "--clients", "1")
    assert figures["n"] == 8 and figures["funnel_1_per_s"] > 0


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
def test_ingest_bench_smoke():
    figures = _run("bench/ingest.py", "--max-file-mb", "0.5", "--samples", "1")
    assert figures["files"] >= 1 and figures["segments"] >= 1


@pytest.mark.skipif(not (EVAL / "paraphrase").exists(), reason="../shared/eval not present")
def test_clusters_bench_smoke():
    figures = _run("bench/clusters.py", "--n", "500", "--assign", "5", "--base", "200")
    assert figures["n500_clusters"] >= 1 and figures["n500_bruteforce_ratio"] > 0


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
    """The offline type judgement on the held-out labelled set: measured 0.83-0.86 (the goal is
    0.90, not reached); this guards against falling back towards the cue words' 0.38."""
    figures = _run("bench/classify.py")
    assert figures["cases"] >= 300
    assert figures["accuracy"] >= 0.80
    assert figures["accuracy"] > figures["cue words alone (before)"] + 0.3


@pytest.mark.skipif(not (EVAL / "locomo").exists(), reason="../shared/eval not present")
def test_locomo_bench_smoke():
    figures = _run("bench/locomo.py", "--conversations", "1")
    assert figures["questions"] > 10
    assert {"hybrid_recall_at_10", "semantic_recall_at_10", "keyword_recall_at_10", "hybrid_mrr"} <= set(figures)


def test_rebalance_bench_smoke():
    figures = _run("bench/rebalance.py", "--n", "2000", "--loop-n", "500", "--indexed-n", "300")
    assert figures["n"] == 2000 and figures["first_run_s"] > 0 and figures["loop_ratio"] > 0


@pytest.mark.skipif(not (EVAL / "paraphrase").exists(), reason="../shared/eval not present")
def test_search_bench_smoke():
    figures = _run("bench/search.py", "--n", "600", "--queries", "5", "--base", "200")
    assert figures["n"] == 600 and figures["recall_at_10"] >= 0.9
    assert {"api_p50_ms", "api_p95_ms", "service_p95_ms", "bruteforce_ratio"} <= set(figures)


@pytest.mark.skipif(not (EVAL / "paraphrase").exists(), reason="../shared/eval not present")
def test_memory_bench_smoke():
    figures = _run("bench/memory.py", "--requests", "2", "--sessions", "1")
    assert figures["web_peak_mib"] >= figures["web_idle_mib"] > 10
    assert figures["baseline_mib"] > 10
