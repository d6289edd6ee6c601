"""Filter order, reason codes and path safety (000 §6, §12)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.select.filtering import is_supported, path_problem
from tests.cli.test_preview import binary_stdin
from tests.gitutil import GitRepo


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/etc/passwd", "absolute path"),
        ("C:/x.py", "absolute path"),
        ("a/../b.py", "path traversal or empty component"),
        ("./a.py", "path traversal or empty component"),
        ("a//b.py", "path traversal or empty component"),
        (".git/config", "inside .git"),
        (".GIT/hooks/pre-commit", "inside .git"),
        ("evil\x1b[2J.py", "control character in path"),
        ("line\nbreak.py", "control character in path"),
        ("", "empty or NUL in path"),
        ("ok/name with spaces and ünïcode.py", None),
        ("tab\there.py", None),
        ("a:b.py", None),
        ("C:", "absolute path"),
    ],
)
def test_path_problems(path: str, problem: str | None) -> None:
    assert path_problem(path) == problem


@pytest.mark.parametrize(
    ("path", "supported"),
    [
        ("Dockerfile", True),
        ("docker/Dockerfile.prod", True),
        ("build/Makefile", True),
        ("pom.xml", True),
        ("app/build.gradle", True),
        ("package.json", True),
        ("Cargo.toml", True),
        ("Jenkinsfile", True),
        ("src/Main.KT", True),
        ("README.md", False),
        ("data.json", False),
        ("image.png", False),
        ("LICENSE", False),
    ],
)
def test_supported_files(path: str, supported: bool) -> None:
    assert is_supported(path) is supported


def test_symlinks_escaping_the_worktree(repo: GitRepo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 1\n")
    repo.symlink("evil.py", str(outside / "secret.py"))
    repo.symlink("linkdir", str(outside))
    repo.symlink("cfg.py", ".git/config")
    repo.write("inside.py", "x = 1\n")
    repo.symlink("alias.py", "inside.py")
    root = repo.root
    assert path_problem("evil.py", root) == "symlink escapes the repository"
    assert path_problem("linkdir/secret.py", root) == "symlink escapes the repository"
    assert path_problem("cfg.py", root) == "symlink escapes the repository"
    assert path_problem("alias.py", root) is None
    # A file the diff marks as a symlink is reviewed as link text, never opened.
    assert path_problem("evil.py", root, is_symlink=True) is None
    assert path_problem("linkdir/secret.py", root, is_symlink=True) is not None


def test_stdin_diff_cannot_reach_outside_through_a_symlink(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    repo.symlink("evil.py", str(outside))
    repo.write("good.py", "x = 1\n")
    repo.commit("base")
    diff = (
        "--- a/evil.py\n+++ b/evil.py\n@@ -1 +1 @@\n-secret = 1\n+secret = 2\n"
        "--- a/good.py\n+++ b/good.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    )
    monkeypatch.setattr(sys, "stdin", binary_stdin(diff.encode()))
    out = tmp_path / "p.json"
    args = ["review", "--preview", "--repo", str(repo.root), "--diff", "-", "--json", str(out)]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    assert [f["path"] for f in doc["files"]] == ["good.py"]
    assert doc["excluded_files"][0]["reason"] == "invalid_path"


def test_filter_order_is_the_spec_order(repo: GitRepo, tmp_path: Path) -> None:
    """A deleted binary is `binary`; an excluded deleted file is `deleted`; include bypasses."""
    repo.write("old.bin", b"\x00\x01")
    repo.write("gone.py", "x = 1\n")
    repo.write("tests/test_keep.py", "def test(): pass\n")
    repo.commit("base")
    (repo.root / "old.bin").unlink()
    (repo.root / "gone.py").unlink()
    repo.write("tests/test_keep.py", "def test(): assert 1\n")
    repo.write("notes.txt", "todo\n")
    repo.write(
        ".reviewflow/rules.json",
        json.dumps({"exclude": ["gone.py", "notes.txt"], "include": ["tests/**"]}),
    )
    out = tmp_path / "p.json"
    assert main(["review", "--preview", "--repo", str(repo.root), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    reasons = {e["path"]: e["reason"] for e in doc["excluded_files"]}
    assert reasons["old.bin"] == "binary"
    assert reasons["gone.py"] == "deleted"
    assert reasons["notes.txt"] == "user_exclude"
    assert [f["path"] for f in doc["files"]] == ["tests/test_keep.py"]


@pytest.mark.parametrize(
    "path",
    [
        "build.sbt",
        "config.ru",
        "infra/main.tf.json",
        "main.tofu",
        "scripts/test.bats",
        "app.pyw",
        "views/a.phtml",
        "src/a.tpp",
        "x.csx",
        "db/q.psql",
        ".dockerignore",
    ],
)
def test_files_a_system_rule_names_are_reviewed(repo: GitRepo, path: str) -> None:
    from reviewflow.git.models import FileDiff, FileStatus
    from reviewflow.rules.loader import load_rules
    from reviewflow.select.filtering import select_files

    rules = load_rules(repo.root, repo.root / "home")
    selection = select_files([FileDiff(path, path, FileStatus.MODIFIED)], rules)
    assert [s.file.path for s in selection.kept] == [path]
    assert selection.kept[0].rule.name != "general"


def test_a_file_that_adds_no_line_is_not_reviewed(repo: GitRepo, tmp_path: Path) -> None:
    """A finding is only ever placed on an added line: a pure rename, a mode change, an empty
    file or removed lines alone would cost requests and could report nothing."""
    repo.write("old_name.py", "x = 1\n")
    repo.write("tool.sh", "echo hi\n")
    repo.write("shrink.py", "a = 1\nb = 2\n")
    repo.write("grow.py", "a = 1\n")
    repo.write("tests/moved.py", "y = 1\n")
    repo.commit("base")
    repo.git("mv", "old_name.py", "new_name.py")
    repo.git("mv", "tests/moved.py", "tests/elsewhere.py")
    (repo.root / "tool.sh").chmod(0o755)
    repo.write("shrink.py", "a = 1\n")
    repo.write("grow.py", "a = 1\nb = 2\n")
    repo.write("empty.py", "")
    repo.write(".reviewflow/rules.json", json.dumps({"include": ["tests/**"]}))
    repo.commit("no added lines")
    out = tmp_path / "p.json"
    flags = ["--commit", "HEAD", "--trusted-ref", "HEAD"]
    assert main(["review", "--preview", "--repo", str(repo.root), "--json", str(out), *flags]) == 0
    doc = json.loads(out.read_text())
    assert [f["path"] for f in doc["files"]] == ["grow.py"]
    found = {e["path"]: (e["reason"], e["detail"]) for e in doc["excluded_files"]}
    assert found == {
        "new_name.py": ("no_added_lines", "renamed from old_name.py, content unchanged"),
        "tests/elsewhere.py": ("no_added_lines", "renamed from tests/moved.py, content unchanged"),
        "tool.sh": ("no_added_lines", "mode 100644 -> 100755 only"),
        "shrink.py": ("no_added_lines", "only lines removed"),
        "empty.py": ("no_added_lines", "empty file"),
        ".reviewflow/rules.json": ("unsupported_ext", None),
    }


def test_an_empty_untracked_file_is_not_reviewed(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("blank.py", "")
    out = tmp_path / "p.json"
    assert main(["review", "--preview", "--repo", str(repo.root), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["files"] == []
    assert doc["excluded_files"] == [
        {"path": "blank.py", "reason": "no_added_lines", "detail": "empty file"}
    ]
