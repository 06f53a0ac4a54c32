from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ultron_site import pipeline
from ultron_site.env import env_bool, env_choice, env_float, env_int

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value", ["maybe", "2", "yes please"])
def test_bad_booleans_fail(monkeypatch, value):
    monkeypatch.setenv("X_FLAG", value)
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG", False)


def test_numbers_are_parsed_strictly(monkeypatch):
    monkeypatch.setenv("X_NUM", "12abc")
    with pytest.raises(ImproperlyConfigured, match="X_NUM"):
        env_int("X_NUM", 1)
    monkeypatch.setenv("X_NUM", "nan")
    with pytest.raises(ImproperlyConfigured):
        env_float("X_NUM", 1.0)
    monkeypatch.setenv("X_NUM", "-1")
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("X_NUM", 1, minimum=0)
    monkeypatch.setenv("X_NUM", " 7 ")
    assert env_int("X_NUM", 1) == 7


def test_choices_are_checked(monkeypatch):
    monkeypatch.setenv("X_CHOICE", "gpt")
    with pytest.raises(ImproperlyConfigured, match="must be one of"):
        env_choice("X_CHOICE", "a", ["a", "b"])


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ULTRON_DUPLICATE_THRESHOLD", "high"),
        ("ULTRON_HOT_PERCENT", "90"),  # with WARM 40 that is over 100
        ("ULTRON_LLM_PROVIDER", "dashscope"),  # no key
        ("DJANGO_DEBUG", "perhaps"),
        ("DATABASE_URL", "mysql://u:p@h/db"),
    ],
)
def test_bad_settings_stop_start_up(name, value):
    env = {**os.environ, name: value, "DJANGO_SETTINGS_MODULE": "ultron_site.settings"}
    env.pop("DASHSCOPE_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name.split("_")[0] in result.stderr or "DATABASE_URL" in result.stderr


def test_env_example_lists_every_setting_read_by_settings():
    import re

    settings_src = (ROOT / "ultron_site" / "settings.py").read_text()
    used = set(re.findall(r'env_\w+\(\s*"([A-Z0-9_]+)"', settings_src))
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s*([A-Z0-9_]+)=", example, re.M))
    assert used - listed == set(), f"missing from .env.example: {sorted(used - listed)}"


def test_every_pipeline_step_resolves_to_a_function():
    for name, path in pipeline.STEPS:
        assert callable(import_string(path)), name


@pytest.mark.django_db
def test_schedule_registration_is_idempotent_and_resolves():
    from django_q.models import Schedule

    pipeline.schedule_register()
    pipeline.schedule_register()
    schedules = Schedule.objects.filter(name=pipeline.SCHEDULE_NAME)
    assert schedules.count() == 1
    schedule = schedules.get()
    assert callable(import_string(schedule.func))
    assert schedule.minutes == 360


@pytest.mark.django_db
def test_run_pipeline_runs_every_step_and_reports():
    results = pipeline.run_pipeline()
    assert list(results) == pipeline.step_names()
    assert "error" not in results["tier_rebalance"]
