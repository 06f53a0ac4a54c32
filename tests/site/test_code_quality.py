from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_missing_migrations():
    result = subprocess.run(
        [sys.executable, "manage.py", "makemigrations", "--check", "--dry-run"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


APPS = ["core", "agents", "memories", "clusters", "ingestion", "ultron_site"]


def _app_modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_import_contracts_hold():
    """Apps import only downwards (ultron_site > ingestion > clusters > memories > agents),
    lazy imports included, and no app imports the project package (pyproject.toml)."""
    result = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing():
    env = {**os.environ, "DATABASE_URL": "postgresql://lint@localhost/lint", "DJANGO_SECRET_KEY": "lint"}
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_in_the_apps_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in _app_modules()
            if p.parts[len(ROOT.parts)] != "ultron_site" and (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


# Modules whose functions and classes answer requests: every app's API views, the dashboard and
# the merge-review pages. (ModelAdmin classes configure Django's own views and keep their
# get_queryset; the pages the hub writes itself are listed here.)
VIEW_MODULES = sorted({*(p for app in APPS for p in (ROOT / app).glob("api*.py")
                         if p.name not in ("api_schema.py", "api_errors.py")),
                       ROOT / "ultron_site" / "dashboard.py", ROOT / "memories" / "admin_review.py"})

# Queryset methods a view must leave to a selector. (``get``, ``values``, ``update`` and ``first``
# are left out: dicts and lists have them too, and their querysets come from ``objects``, caught
# below.)
QUERYSET_METHODS = {"filter", "exclude", "annotate", "aggregate", "order_by", "values_list", "select_related",
                    "prefetch_related", "defer", "only", "distinct", "exists", "count", "bulk_create",
                    "get_or_create", "update_or_create", "select_for_update", "in_bulk", "iterator", "raw"}


def _view_offences(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text())
    where = path.relative_to(root)
    offences = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("objects", "_default_manager", "cursor"):
            offences.append(f"{where}:{node.lineno} .{node.attr}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in QUERYSET_METHODS):
            offences.append(f"{where}:{node.lineno} .{node.func.attr}()")
        # Slicing what a call returned is paging a queryset; slicing a string or a list is not.
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and isinstance(node.value, ast.Call):
            offences.append(f"{where}:{node.lineno} slices a call's result (paging belongs in a selector)")
    for module in _imports(tree):
        if module.startswith(("django.db", "memories.providers", "memories.redaction", "django.shortcuts")):
            offences.append(f"{where} imports {module}")
    return offences


def test_views_parse_call_one_service_and_serialize():
    """No queryset, model class, cursor, slice or provider (LLM, embeddings, redaction) in a view
    module: views parse input, call a service or selector and serialize what it returns."""
    import importlib

    from django.db import models

    offenders = [offence for path in VIEW_MODULES for offence in _view_offences(path)]
    for path in VIEW_MODULES:
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        offenders += [f"{module.__name__} imports the model {name}" for name, value in vars(module).items()
                      if isinstance(value, type) and issubclass(value, models.Model)]
    assert not offenders, offenders


def test_the_view_guard_catches_what_it_names(tmp_path):
    """The guard above fails on each thing it forbids (a guard that cannot fail guards nothing)."""
    view = tmp_path / "api.py"
    view.write_text("from django.db.models import Q\n"
                    "def get(request):\n"
                    "    rows = Memory.objects.filter(tier='hot').order_by('-hit_count')\n"
                    "    return Memory.objects.all()[:10], rows.count()\n")
    found = " ".join(_view_offences(view, root=tmp_path))
    for word in (".objects", ".filter()", ".order_by()", ".count()", "slices", "imports django.db.models"):
        assert word in found, (word, found)


def test_every_redaction_names_its_occasion():
    """Outside the redaction package, text is redacted through ``policy.redact_for`` (or the
    archive's JSON-aware redaction, which uses it): the policy table is the one place that says
    which detectors run on which text."""
    allowed = {"memories.redaction.policy", "memories.redaction.archive"}
    offenders = []
    for path in _app_modules():
        if "redaction" in path.relative_to(ROOT).parts:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "memories.redaction":
                    offenders += [f"{path.relative_to(ROOT)}: {alias.name}" for alias in node.names
                                  if alias.name != "Redacted"]
                elif node.module == "memories" and any(alias.name == "redaction" for alias in node.names):
                    offenders.append(f"{path.relative_to(ROOT)}: memories.redaction")
                elif node.module.startswith("memories.redaction.") and node.module not in allowed:
                    offenders.append(f"{path.relative_to(ROOT)}: {node.module}")
    assert not offenders, offenders


def test_the_product_does_not_point_at_the_workshop():
    """A user who clones the repository has no ../shared/: code and docs say it themselves."""
    offenders = []
    for path in [*_app_modules(), ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "SPEC §" in line or "SPEC.md" in line or "shared/seeds" in line:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, offenders


def test_the_eval_data_is_found_through_one_helper(monkeypatch, tmp_path):
    """Benches and tests read ../shared/eval through bench._common.eval_dir, which honours
    ULTRON_EVAL_DIR; a module building the path itself would ignore it."""
    from bench._common import eval_dir

    monkeypatch.setenv("ULTRON_EVAL_DIR", str(tmp_path))
    assert eval_dir() == tmp_path
    monkeypatch.delenv("ULTRON_EVAL_DIR")
    assert eval_dir() == ROOT.parent / "shared" / "eval"
    own_path = re.compile(r"""["']shared["']\s*/\s*["']eval["']|environ[^\n]*ULTRON_EVAL_DIR""")
    offenders = [str(path.relative_to(ROOT)) for path in [*sorted((ROOT / "tests").rglob("*.py")),
                                                           *sorted((ROOT / "bench").glob("*.py"))]
                 if path != ROOT / "bench" / "_common.py" and path != Path(__file__)
                 and own_path.search(path.read_text())]
    assert not offenders, offenders


# What only a query, a model instance or a cursor does: none of it belongs in a module that composes services.
_ORM_ATTRIBUTES = {"objects", "_default_manager", "_base_manager", "cursor", "execute", "executemany", "raw",
                   "extra", "save", "delete", "bulk_create", "bulk_update", "create", "get_or_create",
                   "update_or_create", "select_for_update", "values_list", "filter", "exclude", "exists",
                   "refresh_from_db", "annotate", "aggregate"}


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """Ids of the import nodes inside ``if TYPE_CHECKING:`` (annotations only, nothing runs)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            inside.update(id(child) for statement in node.body for child in ast.walk(statement))
    return inside


def test_the_import_writes_only_through_the_apps_services():
    """ultron_site/portable/store.py composes the apps' import services: no manager, queryset,
    model write or cursor in it, no raw SQL helper, and no model imported but for annotations."""
    path = ROOT / "ultron_site" / "portable" / "store.py"
    tree = ast.parse(path.read_text())
    annotations_only = _type_checking_blocks(tree)
    offenders = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _ORM_ATTRIBUTES:
            offenders.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and id(node) not in annotations_only:
            names = {node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)}
            for name in names:
                if (name.endswith(".models") or ".models." in name or name.startswith("django.db.models")
                        or name in ("django.db.connection", "django.db.connections", "memories.vectors")):
                    offenders.append(f"{node.lineno}: imports {name}")
        elif isinstance(node, ast.Import):
            offenders += [f"{node.lineno}: imports {a.name}" for a in node.names if a.name.startswith("django.db")]
    assert not offenders, offenders
    assert "services" in {part for module in _imports(tree) for part in module.split(".")}
