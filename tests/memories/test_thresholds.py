"""Thresholds belong to the embedding model; the environment overrides them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from memories.thresholds import FALLBACK, MODEL_THRESHOLDS, model_thresholds
from ultron_site.env import REGISTRY

pytestmark = pytest.mark.django_db  # the configured space's stored calibration is read from the database


def test_the_configured_model_chooses_its_row():
    assert model_thresholds() == MODEL_THRESHOLDS["all-MiniLM-L6-v2"]
    assert model_thresholds("text-embedding-v4") == MODEL_THRESHOLDS["text-embedding-v4"]
    assert model_thresholds("some-new-model") == FALLBACK


def test_the_environment_overrides_one_value_at_a_time(settings):
    settings.ULTRON_CLUSTER_SIMILARITY_THRESHOLD = 0.42
    chosen = model_thresholds()
    assert chosen.cluster == 0.42
    assert chosen.duplicate == MODEL_THRESHOLDS["all-MiniLM-L6-v2"].duplicate


def test_a_soft_threshold_above_the_duplicate_threshold_is_refused(settings):
    settings.ULTRON_DUPLICATE_SOFT_THRESHOLD = 0.99
    with pytest.raises(ImproperlyConfigured, match="ULTRON_DUPLICATE_SOFT_THRESHOLD"):
        model_thresholds()


@pytest.mark.parametrize(("name", "field"), [
    ("ULTRON_DUPLICATE_THRESHOLD", "duplicate"),
    ("ULTRON_DUPLICATE_SOFT_THRESHOLD", "soft"),
    ("ULTRON_CLUSTER_SIMILARITY_THRESHOLD", "cluster"),
    ("ULTRON_CLUSTER_MERGE_THRESHOLD", "cluster_merge"),
    ("ULTRON_SEGMENT_SHIFT_THRESHOLD", "shift"),
    ("ULTRON_SEARCH_RELEVANCE_FLOOR", "floor"),
])
def test_the_settings_reference_states_the_table(name, field):
    value = getattr(MODEL_THRESHOLDS["all-MiniLM-L6-v2"], field)
    assert f"{value:.2f} for all-MiniLM-L6-v2" in REGISTRY[name].doc_default


def test_every_value_has_its_setting():
    from dataclasses import fields

    from memories.thresholds import OVERRIDES, VALUES, ModelThresholds

    assert set(VALUES) == {f.name for f in fields(ModelThresholds)} - {"calibration"} == set(OVERRIDES)
    for setting in OVERRIDES.values():
        assert setting in REGISTRY
