"""The documentation site and the scripts beside it: `make docs` publishes pages and their
pictures only (never a script from docs/), and every package those scripts import is pinned."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from mkdocs.config import load_config
from mkdocs.structure.files import get_files

ROOT = Path(__file__).resolve().parents[2]
OURS = {"reviewflow", "flows", "tasks", "tests", "bench"}


def test_the_site_holds_pages_and_pictures_only() -> None:
    config = load_config(str(ROOT / "mkdocs.yml"))
    published = [f.src_uri for f in get_files(config) if not f.inclusion.is_excluded()]
    assert "index.md" in published
    others = [uri for uri in published if not uri.endswith(".md") and not uri.startswith("assets/")]
    assert others == [], f"copied into site/ though not a page or a picture: {others}"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        requirements += extra
    return {_norm(req.split("==")[0]) for req in requirements if "==" in req}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - OURS - {"__future__"}


def test_the_docs_scripts_import_pinned_packages_only() -> None:
    scripts = sorted((ROOT / "docs").rglob("*.py"))
    assert ROOT / "docs/pictures.py" in scripts
    owners = metadata.packages_distributions()
    pinned = _pinned()
    unpinned = {
        f"{script.relative_to(ROOT)}: {module}"
        for script in scripts
        for module in _imports(script)
        if not {_norm(dist) for dist in owners.get(module, [])} & pinned
    }
    assert sorted(unpinned) == []
