"""``manage.py calibrate``: every threshold fitted on the labelled sets with the configured
embedder (here an embedding server on loopback), stored for that embedding space, and read back
by ``model_thresholds()`` under the environment's overrides."""

from __future__ import annotations

import subprocess
from io import StringIO

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from memories.calibration import ScoredPairs, best_plateau, fit_duplicate, fit_soft, grid
from memories.models import EmbeddingCalibration
from memories.text import EMBEDDING_TEXT_FORMAT
from memories.thresholds import FALLBACK, MODEL_THRESHOLDS, VALUES, model_thresholds
from tests.fakes import served_embeddings

pytestmark = pytest.mark.django_db


def _calibrate(*args: str) -> str:
    out = StringIO()
    call_command("calibrate", *args, stdout=out)
    return out.getvalue()


@pytest.mark.slow  # two calibrations against the server, ~15 s each on 2 cores
def test_calibrate_stores_the_spaces_values_which_model_thresholds_then_reads(settings):
    with served_embeddings(settings, "openai", 64) as server:
        dry = _calibrate("--dry-run")
        assert not EmbeddingCalibration.objects.exists()
        assert "nothing stored (--dry-run)" in dry
        assert model_thresholds() == FALLBACK  # nomic-embed-text: not in the table, nothing stored
        asked = len(server.embedding_requests)
        assert asked > 0

        printed = _calibrate()
        row = EmbeddingCalibration.objects.get()
        assert (row.provider, row.model, row.dimensions, row.text_format) == (
            "openai", "nomic-embed-text", 64, EMBEDDING_TEXT_FORMAT)
        assert set(row.values) == set(VALUES)
        # The same values as printed, per set, as the dry run printed them.
        assert printed.split("\n", 1)[1].rsplit("\n", 2)[0] == dry.split("\n", 1)[1].rsplit("\n", 2)[0]
        for name in VALUES:
            assert f"\n{name} = {row.values[name]:.3f}" in printed
            assert row.report[name]["sets"], name
        for set_name in ("hard_negatives", "sessions", "locomo", "relevance queries", "nonsense queries",
                         "sessions_written", "sessions_heldout"):
            assert f"[{set_name}]" in printed
        chosen = model_thresholds()
        assert {name: getattr(chosen, name) for name in VALUES} == row.values
        assert chosen.calibration.startswith("manage.py calibrate")
        # Random vectors separate nothing: the recall-first floor sits low enough to keep relevant pairs
        # whatever their (random) similarity, and the soft threshold never exceeds the duplicate one.
        assert chosen.floor < 0 and chosen.soft <= chosen.duplicate

        # The environment still wins, one value at a time.
        settings.ULTRON_SEARCH_RELEVANCE_FLOOR = 0.42
        settings.ULTRON_SEGMENT_SHIFT_THRESHOLD = 0.31
        overridden = model_thresholds()
        assert (overridden.floor, overridden.shift) == (0.42, 0.31)
        assert overridden.duplicate == row.values["duplicate"]
        settings.ULTRON_SEARCH_RELEVANCE_FLOOR = settings.ULTRON_SEGMENT_SHIFT_THRESHOLD = None

        # Every file calibrate read is in the repository, so present in any clone.
        sources = sorted({path for name in VALUES for path in row.report[name]["sources"]})
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", *sources], cwd=django_settings.BASE_DIR,
                                 capture_output=True, text=True)
        assert tracked.returncode == 0, tracked.stderr
        assert "tests/data/relevance_queries.jsonl" in sources
    # Back on the local model: its own row, the other space's calibration does not apply.
    assert model_thresholds() == MODEL_THRESHOLDS["all-MiniLM-L6-v2"]


def test_the_duplicate_rule_stops_below_the_first_wrong_merge_and_adds_its_margin():
    pairs = ScoredPairs.from_arrays(similarity=[0.95, 0.90, 0.85, 0.80, 0.60], truth=[True, True, False, True, False])
    fitted = fit_duplicate({"set": pairs})
    # 0.85 is a wrong merge: the lowest safe value is just above it; then halfway to 1.0.
    assert fitted.rule.endswith("then halfway to 1.0") and "(0.855)" in fitted.rule
    assert fitted.value == pytest.approx(0.93)
    soft = fit_soft({"set": pairs}, fitted.value)
    assert soft.value == pytest.approx(0.80)  # the highest value at which ≥ 0.85 of the 3 duplicates are judged: all


def test_a_tie_takes_the_middle_of_the_longest_best_run():
    values = grid(0.1, 0.9, 0.1)
    assert best_plateau(values, [0, 1, 1, 0, 1, 1, 1, 1, 0]) == pytest.approx(0.6)
    assert np.allclose(grid(0.0, 0.02, 0.005), [0.0, 0.005, 0.01, 0.015, 0.02])
