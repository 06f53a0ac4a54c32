from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ultron_site import env, pipeline, settings_reference, startup
from ultron_site.env import env_bool, env_choice, env_float, env_get, env_int, env_list, env_str

ROOT = Path(__file__).resolve().parents[2]
DOC = {"help": "A test variable.", "group": "core"}


@pytest.fixture
def registry(monkeypatch):
    """A registry of its own, so that test variables stay out of the real one."""
    monkeypatch.setattr(env, "REGISTRY", {})
    return env.REGISTRY


def _run(code: str, **overrides: str | None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "ultron_site.settings"}
    environ.pop("DASHSCOPE_API_KEY", None)
    for name, value in overrides.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
        timeout=120,
    )


@pytest.mark.parametrize("value", ["maybe", "2", "yes please"])
def test_bad_booleans_fail(registry, monkeypatch, value):
    monkeypatch.setenv("X_FLAG", value)
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG", False, **DOC)


def test_numbers_are_parsed_strictly(registry, monkeypatch):
    monkeypatch.setenv("X_NUM", "12abc")
    with pytest.raises(ImproperlyConfigured, match="X_NUM"):
        env_int("X_NUM", 1, **DOC)
    monkeypatch.setenv("X_FLOAT", "nan")
    with pytest.raises(ImproperlyConfigured):
        env_float("X_FLOAT", 1.0, **DOC)
    monkeypatch.setenv("X_MIN", "-1")
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("X_MIN", 1, minimum=0, **DOC)
    monkeypatch.setenv("X_NUM", " 7 ")
    assert env_int("X_NUM", 1, **DOC) == 7


def test_choices_are_checked(registry, monkeypatch):
    monkeypatch.setenv("X_CHOICE", "gpt")
    with pytest.raises(ImproperlyConfigured, match="must be one of"):
        env_choice("X_CHOICE", "a", ["a", "b"], **DOC)


def test_every_call_records_its_variable(registry, monkeypatch):
    monkeypatch.delenv("X_LIST", raising=False)
    assert env_list("X_LIST", ["a", "b"], help="Some names.", group="search") == ["a", "b"]
    assert env_int("X_INT", 5, minimum=1, maximum=9, help="A count.", group="tuning") == 5
    var = registry["X_INT"]
    assert (var.kind, var.default, var.minimum, var.maximum, var.group, var.help) == (
        "int", 5, 1, 9, "tuning", "A count."
    )
    assert registry["X_LIST"].default == ("a", "b")
    # Read again without documentation: the declaration is reused, and must match.
    assert env_int("X_INT", 5, minimum=1, maximum=9) == 5
    with pytest.raises(ValueError, match="declared as"):
        env_int("X_INT", 6, minimum=1, maximum=9)
    with pytest.raises(ValueError, match="declared twice"):
        env_int("X_INT", 5, help="Another meaning.", group="tuning")
    with pytest.raises(KeyError, match="not declared"):
        env_str("X_UNDECLARED")
    with pytest.raises(KeyError, match="not declared"):
        env_get("X_UNDECLARED")
    with pytest.raises(ValueError, match="unknown group"):
        env_str("X_GROUPLESS", help="Nowhere.", group="misc")


def test_deprecated_names_are_read_with_a_warning(registry, monkeypatch, caplog):
    monkeypatch.setattr(logging.getLogger("ultron"), "propagate", True)  # to caplog

    def read() -> float:
        return env_float("X_NEW", 6.0, minimum=0.05, deprecated_names=["X_OLD"], **DOC)

    monkeypatch.delenv("X_NEW", raising=False)
    monkeypatch.delenv("X_OLD", raising=False)
    assert read() == 6.0
    monkeypatch.setenv("X_OLD", "2")
    with pytest.warns(DeprecationWarning, match="X_OLD is deprecated: use X_NEW"):
        assert read() == 2.0
    assert "X_OLD is deprecated: use X_NEW" in caplog.text
    monkeypatch.setenv("X_OLD", "0.01")  # checked under the name it was given
    with pytest.warns(DeprecationWarning), pytest.raises(ImproperlyConfigured, match="X_OLD=0.01"):
        read()
    monkeypatch.setenv("X_OLD", "2")
    monkeypatch.setenv("X_NEW", "2.0")  # both, the same value: fine
    with pytest.warns(DeprecationWarning):
        assert read() == 2.0
    monkeypatch.setenv("X_NEW", "3")
    with pytest.warns(DeprecationWarning), pytest.raises(ImproperlyConfigured, match="disagree"):
        read()
    monkeypatch.delenv("X_OLD")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read() == 3.0


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
    result = _run("import django; django.setup()", DJANGO_SECRET_KEY="k", **{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


@pytest.mark.parametrize(
    ("old", "new", "value", "shown"),
    [
        ("ULTRON_DECAY_INTERVAL_HOURS", "ULTRON_PIPELINE_INTERVAL_HOURS", "2", "2.0"),
        ("RAW_ARCHIVE_REDACT", "ULTRON_RAW_ARCHIVE_REDACT", "true", "True"),
    ],
)
def test_renamed_settings_still_read_their_old_names(old, new, value, shown):
    code = f"from ultron_site import settings; print(settings.{new})"
    result = _run(code, **{old: value, new: None})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == shown
    assert f"{old} is deprecated: use {new}" in result.stderr
    result = _run(code, **{old: None, new: value})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == shown
    assert "deprecated" not in result.stderr
    result = _run(code, **{old: value, new: "0" if value != "0" else "1"})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "disagree" in result.stderr


def test_settings_read_the_secret_key_and_never_write_it(tmp_path):
    code = "from ultron_site import settings; print(settings.SECRET_KEY)"
    result = _run(code, ULTRON_DATA_DIR=str(tmp_path), DJANGO_SECRET_KEY=None)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DJANGO_SECRET_KEY" in result.stderr
    assert list(tmp_path.iterdir()) == []
    startup.secret_key_path(tmp_path).write_text("from-the-file\n")
    result = _run(code, ULTRON_DATA_DIR=str(tmp_path), DJANGO_SECRET_KEY=None)
    assert result.stdout.strip() == "from-the-file", result.stderr
    result = _run(code, ULTRON_DATA_DIR=str(tmp_path), DJANGO_SECRET_KEY="from-the-env")
    assert result.stdout.strip() == "from-the-env", result.stderr


def test_settings_need_a_database_url_from_start_up(tmp_path):
    result = _run("import ultron_site.settings", DATABASE_URL=None, DJANGO_SECRET_KEY="k",
                  ULTRON_DATA_DIR=str(tmp_path))
    assert result.returncode != 0
    assert "DATABASE_URL is not set" in result.stderr and "prepare()" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_manage_py_with_an_external_database_writes_nothing(tmp_path):
    """Start-up and settings leave the data directory alone when the database is not ours."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    environ = {**os.environ, "ULTRON_DATA_DIR": str(data_dir), "DJANGO_SECRET_KEY": "external"}
    assert environ.get("DATABASE_URL"), "the test run has a DATABASE_URL (start-up sets it)"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=environ,
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(data_dir.iterdir()) == []


def test_prepare_with_an_external_database_starts_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://someone@db.example.invalid/hub")
    monkeypatch.setenv("ULTRON_DATA_DIR", str(tmp_path / "data"))
    prepared = startup.prepare()
    assert (prepared.embedded, prepared.started) == (False, False)
    assert prepared.database_url == os.environ["DATABASE_URL"]
    assert not (tmp_path / "data").exists()
    startup.prepare(serve=True)  # the web server needs the static directory, nothing else
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["static"]


# --- the reference of every variable, generated from the code -----------------------------

# Reads of the environment in the project's code: env_*("NAME"), os.environ.get("NAME"),
# os.environ["NAME"] (not assigned), os.getenv("NAME"), "NAME" in os.environ.
_READS = [
    re.compile(r"""\benv_\w+\(\s*["']([A-Za-z0-9_]+)["']"""),
    re.compile(r"""\bos\.environ\.get\(\s*["']([A-Za-z0-9_]+)["']"""),
    re.compile(r"""\bos\.getenv\(\s*["']([A-Za-z0-9_]+)["']"""),
    re.compile(r"""\bos\.environ\[\s*["']([A-Za-z0-9_]+)["']\s*\](?!\s*=[^=])"""),
    re.compile(r"""["']([A-Za-z0-9_]+)["']\s+(?:not\s+)?in\s+os\.environ\b"""),
]
_CODE = ["ultron_site", "memories", "ingestion", "clusters", "agents"]


def _variables_read(text: str) -> set[str]:
    return {name for pattern in _READS for name in pattern.findall(text)}


def test_the_scan_for_reads_finds_them():
    sample = """
x = env_int("A_VAR", 1, help="h", group="core")
y = os.environ.get('B_VAR', "")
z = os.environ["C_VAR"]
os.environ["WRITTEN"] = "1"
os.environ.setdefault("LIBRARY_SWITCH", "1")
if "D_VAR" not in os.environ: pass
w = os.getenv("E_VAR")
v = env_get("F_VAR")
"""
    assert _variables_read(sample) == {"A_VAR", "B_VAR", "C_VAR", "D_VAR", "E_VAR", "F_VAR"}


def test_every_variable_the_code_reads_is_registered():
    registry = settings_reference.collect()
    files = [ROOT / "manage.py"] + [
        path for folder in _CODE if (ROOT / folder).is_dir()
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    unregistered = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in files for name in _variables_read(path.read_text(encoding="utf-8"))
        if name not in registry and name != "DJANGO_SETTINGS_MODULE"
    }
    assert not unregistered, (
        "read without a declaration (declare it with help= and group=, in settings.py or at the "
        f"bottom of ultron_site/env.py): {sorted(unregistered)}"
    )


def test_docs_and_env_example_match_the_code():
    stale = [str(path.relative_to(ROOT)) for path in settings_reference.stale()]
    assert not stale, f"out of date: {stale}; run python -m ultron_site.settings_reference --write"


def test_the_reference_does_not_depend_on_the_environment():
    """Each variable is declared by one unconditional call: another provider, another reference
    would mean a declaration hidden in a branch."""
    code = (
        "import sys; import ultron_site.settings; from ultron_site import settings_reference as r; "
        "sys.exit(1 if r.stale() else 0)"
    )
    result = _run(
        code, DJANGO_SECRET_KEY="k", DASHSCOPE_API_KEY="sk-x", ULTRON_LLM_PROVIDER="openai",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1", ULTRON_EMBEDDING_PROVIDER="dashscope",
        ULTRON_EMBEDDING_DIMENSIONS="512",
    )
    assert result.returncode == 0, result.stderr


def test_every_variable_has_a_group_help_and_a_reference_entry():
    registry = settings_reference.collect()
    docs = settings_reference.DOCS.read_text()
    example = settings_reference.ENV_EXAMPLE.read_text()
    assert len(registry) >= 68
    for name, var in registry.items():
        assert var.group in env.GROUPS and var.help, name
        assert f"| `{name}` |" in docs, name
        assert re.search(rf"^(# )?{name}=", example, re.M), name
    tuning = [line for line in example.splitlines() if "ULTRON_SEARCH_EF=" in line]
    assert tuning == ["# ULTRON_SEARCH_EF=200"]  # tuning knobs: last, commented out


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
    assert pipeline.failed_steps(results) == [], results
    assert set(results["tier_rebalance"]) >= {"hot", "warm", "cold"}
