"""Rule references: per-layer bases, size limit, escapes, symlinks, warnings and fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.rules import RuleLayer, load_rules
from reviewflow.rules.loader import MAX_REFERENCE_BYTES
from reviewflow.rules.system import SystemCatalog
from tests.gitutil import GitRepo
from tests.rules.helpers import write_json


def _project(repo: GitRepo, *rules: tuple[str, str]) -> None:
    write_json(
        repo.root / ".reviewflow/rules.json",
        {"rules": [{"path": path, "rule": rule} for path, rule in rules]},
    )


def test_reference_bases_per_layer(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    custom_dir = tmp_path / "ci"
    custom = write_json(custom_dir / "rules.json", {"rules": [{"path": "*.c", "rule": "c.md"}]})
    (custom_dir / "c.md").write_text("CUSTOM C FROM BESIDE THE FILE")
    repo.write("c.md", "wrong base: repo root")
    _project(repo, ("*.py", ".reviewflow/docs/py.md"))
    repo.write(".reviewflow/docs/py.md", "PROJECT PY FROM REPO ROOT")
    write_json(rf_home / "rules.json", {"rules": [{"path": "*.go", "rule": "docs/go.txt"}]})
    (rf_home / "docs").mkdir()
    (rf_home / "docs/go.txt").write_text("GLOBAL GO FROM HOME")
    rules = load_rules(repo.root, rf_home, custom, system=system)
    assert rules.warnings == []
    c = rules.resolve("x.c")
    assert (c.layer, c.text, c.reference) == (
        RuleLayer.CUSTOM,
        "CUSTOM C FROM BESIDE THE FILE",
        "c.md",
    )
    py = rules.resolve("a/b.py")
    assert (py.text, py.reference) == ("PROJECT PY FROM REPO ROOT", ".reviewflow/docs/py.md")
    assert rules.resolve("cmd/x.go").text == "GLOBAL GO FROM HOME"


def test_reference_extensions_and_inline_text(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    repo.write("r/a.markdown", "MARKDOWN")
    repo.write("r/b.TXT", "UPPER TXT")
    _project(
        repo,
        ("*.a", "./r/a.markdown"),
        ("*.b", "r/b.TXT"),
        ("*.c", "Check every call of\nfoo.md"),  # two lines: inline text
        ("*.d", "Inline text that is not a reference."),
    )
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.resolve("x.a").text == "MARKDOWN"
    assert rules.resolve("x.b").text == "UPPER TXT"
    assert rules.resolve("x.c").text == "Check every call of\nfoo.md"
    assert rules.resolve("x.d").text == "Inline text that is not a reference."
    assert rules.resolve("x.d").reference is None


def test_size_limit(repo: GitRepo, rf_home: Path, system: SystemCatalog) -> None:
    repo.write("ok.md", "x" * MAX_REFERENCE_BYTES)
    repo.write("big.md", "x" * (MAX_REFERENCE_BYTES + 1))
    _project(repo, ("*.ok", "ok.md"), ("*.big", "big.md"))
    rules = load_rules(repo.root, rf_home, system=system)
    assert MAX_REFERENCE_BYTES == 512 * 1024
    assert len(rules.resolve("a.ok").text) == MAX_REFERENCE_BYTES
    big = rules.resolve("a.big")
    assert big.layer is RuleLayer.SYSTEM
    [warning] = rules.warnings
    assert warning.code == "rule_reference_failed"
    assert "big.md" in warning.message and "larger than 524288 bytes" in warning.message


def _failed(repo: GitRepo, rf_home: Path, system: SystemCatalog, reference: str) -> str:
    """Resolve a path whose project rule uses `reference`; return the one warning's message."""
    _project(repo, ("*.py", reference), ("*.md", "INLINE MD"))
    write_json(rf_home / "rules.json", {"rules": [{"path": "*.py", "rule": "GLOBAL PY"}]})
    rules = load_rules(repo.root, rf_home, system=system)
    resolved = rules.resolve("pkg/a.py")
    assert (resolved.layer, resolved.text) == (RuleLayer.GLOBAL, "GLOBAL PY")  # fell back
    assert rules.resolve("README.md").text == "INLINE MD"  # the layer's other rules still apply
    assert len(rules.warnings) == 1
    warning = rules.warnings[0]
    assert warning.code == "rule_reference_failed"
    assert warning.path == reference
    assert reference in warning.message and ".reviewflow/rules.json" in warning.message
    assert rules.describe()[0]["failed_references"] == 1
    return warning.message


def test_parent_escape(repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog) -> None:
    (tmp_path / "x.md").write_text("OUTSIDE")
    assert "'..' is not allowed" in _failed(repo, rf_home, system, "../x.md")


def test_parent_inside_path_is_refused_too(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    repo.write("docs/x.md", "X")
    assert "'..' is not allowed" in _failed(repo, rf_home, system, "docs/../docs/x.md")


def test_absolute_path(repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog) -> None:
    outside = tmp_path / "abs.md"
    outside.write_text("OUTSIDE")
    assert "absolute paths are not allowed" in _failed(repo, rf_home, system, str(outside))


def test_symlink_to_outside(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("OUTSIDE")
    repo.symlink("docs/rule.md", str(outside))
    assert "resolves outside" in _failed(repo, rf_home, system, "docs/rule.md")


def test_symlinked_directory_to_outside(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared/rule.md").write_text("OUTSIDE")
    repo.symlink("docs", str(tmp_path / "shared"))
    assert "resolves outside" in _failed(repo, rf_home, system, "docs/rule.md")


def test_symlink_to_unsupported_extension(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    repo.write("src/settings.py", "SECRET = 1")
    repo.symlink("docs/rule.md", "../src/settings.py")
    assert "symlink target must end with" in _failed(repo, rf_home, system, "docs/rule.md")


def test_symlink_inside_the_base_is_followed(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    repo.write("shared/python.md", "SHARED PY")
    repo.symlink("docs/rule.md", "../shared/python.md")
    _project(repo, ("*.py", "docs/rule.md"))
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.resolve("a.py").text == "SHARED PY"
    assert rules.warnings == []


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        ("missing", "not found"),
        ("directory", "not a regular file"),
        ("empty", "is empty"),
        ("binary", "not UTF-8"),
        ("broken", "broken symlink"),
    ],
)
def test_other_failures(
    repo: GitRepo, rf_home: Path, system: SystemCatalog, setup: str, needle: str
) -> None:
    if setup == "directory":
        (repo.root / "docs/rule.md").mkdir(parents=True)
    elif setup == "empty":
        repo.write("docs/rule.md", "  \n")
    elif setup == "binary":
        repo.write("docs/rule.md", b"\xff\xfe\x00bad")
    elif setup == "broken":
        repo.symlink("docs/rule.md", "nowhere.md")
    assert needle in _failed(repo, rf_home, system, "docs/rule.md")


def test_custom_reference_cannot_escape_its_directory(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    (tmp_path / "above.md").write_text("ABOVE")
    custom = write_json(
        tmp_path / "ci/rules.json", {"rules": [{"path": "**", "rule": "../above.md"}]}
    )
    rules = load_rules(repo.root, rf_home, custom, system=system)
    assert rules.resolve("a.py").source == "system:python"
    [warning] = rules.warnings
    assert warning.path is None and warning.message.startswith("custom rules")


def test_global_reference_symlink_outside_home(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    (tmp_path / "dotfiles").mkdir()
    (tmp_path / "dotfiles/go.md").write_text("GO")
    (rf_home / "go.md").symlink_to(tmp_path / "dotfiles/go.md")
    write_json(rf_home / "rules.json", {"rules": [{"path": "*.go", "rule": "go.md"}]})
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.resolve("a.go").layer is RuleLayer.SYSTEM
    assert "resolves outside" in rules.warnings[0].message


def test_one_warning_per_reference(repo: GitRepo, rf_home: Path, system: SystemCatalog) -> None:
    _project(repo, ("*.py", "gone.md"), ("*.pyi", "gone.md"), ("*.rs", "also-gone.md"))
    rules = load_rules(repo.root, rf_home, system=system)
    assert [w.path for w in rules.warnings] == ["gone.md", "also-gone.md"]
    assert rules.resolve("a.pyi").source == "system:python"


def test_failed_reference_with_merge_falls_back(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    write_json(
        repo.root / ".reviewflow/rules.json",
        {"rules": [{"path": "*.py", "rule": "gone.md", "merge_system_rule": True}]},
    )
    resolved = load_rules(repo.root, rf_home, system=system).resolve("a.py")
    assert (resolved.source, resolved.merged_with) == ("system:python", None)
