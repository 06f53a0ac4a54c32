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


APPS = ["agents", "memories", "clusters", "ingestion", "ultron_site"]


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


def test_no_view_touches_the_orm_or_a_provider():
    """Views parse input, call one service or selector and serialize: no queryset, cursor or
    provider (LLM, embeddings, redaction) in them."""
    offenders = []
    for app in APPS:
        for name in ("api.py", "views.py"):
            path = ROOT / app / name
            if not path.exists():
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in ("objects", "_default_manager", "cursor"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
            for module in _imports(tree):
                if module.startswith(("django.db", "memories.providers", "memories.redaction", "django.shortcuts")):
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
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
