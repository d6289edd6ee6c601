"""`review --preview --diff -` as a user runs it: what Git reads is listed, or exit 2, one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.git.gitapply import git_numstat
from tests.gitutil import GitRepo

STAMP = "2010-08-18 20:13:08.000000000 +0530"


def _review(
    repo: GitRepo, home: Path, diff: bytes
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = repo.root.parent / "preview.json"
    args = ["review", "--preview", "--diff", "-", "--json", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=repo.root,
        input=diff.decode("utf-8", "surrogateescape"),
        env=dict(os.environ, REVIEWFLOW_HOME=str(home), PYTHONPATH=os.getcwd()),
        capture_output=True,
        text=True,
        errors="surrogateescape",
    )
    return result, out


def _listed(repo: GitRepo, home: Path, diff: bytes) -> dict[str, tuple[int, int] | str]:
    """path -> (added, removed) for reviewed files, the reason for excluded ones."""
    result, out = _review(repo, home, diff)
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    listed: dict[str, tuple[int, int] | str] = {
        f["path"]: (f["added"], f["removed"]) for f in doc["files"]
    }
    listed |= {f["path"]: f["reason"] for f in doc["excluded_files"]}
    return listed


def _refused(repo: GitRepo, home: Path, diff: bytes) -> str:
    """The one stderr line of a refused diff (exit 2, nothing on stdout, no report written)."""
    result, out = _review(repo, home, diff)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == "" and not out.exists()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def two_commits(repo: GitRepo) -> GitRepo:
    repo.write("logo.png", b"\x89PNG\x00\x01")
    repo.write("src/app.py", "def f():\n    return 1\n")
    repo.commit("base")
    repo.write("logo.png", b"\x89PNG\x00\x02")
    repo.write("src/app.py", "def f():\n    return 2\n\n\ndef g():\n    return 3\n")
    repo.commit("change")
    return repo


def test_coloured_diff_after_a_binary_is_refused_and_names_the_fix(
    two_commits: GitRepo, rf_home: Path
) -> None:
    args = ["diff", "HEAD~1", "HEAD", "--", "logo.png", "src/app.py"]
    coloured = two_commits.git("-c", "color.ui=always", *args[:1], "--color=always", *args[1:])
    line = _refused(two_commits, rf_home, coloured.encode())
    assert "ANSI colour codes" in line and "--no-color" in line
    plain = two_commits.git(*args).encode()
    assert _listed(two_commits, rf_home, plain) == {"src/app.py": (5, 1), "logo.png": "binary"}


def test_custom_prefixes_are_stripped(two_commits: GitRepo, rf_home: Path) -> None:
    diff = two_commits.git(
        "diff", "--src-prefix=old/", "--dst-prefix=new/", "HEAD~1", "HEAD", "--", "src/app.py"
    ).encode()
    assert _listed(two_commits, rf_home, diff) == {"src/app.py": (5, 1)}
    assert git_numstat(diff, 1, two_commits.root) == {"src/app.py": (5, 1)}


def test_no_prefix_diff_reads_at_p0(two_commits: GitRepo, rf_home: Path) -> None:
    diff = two_commits.git("diff", "--no-prefix", "HEAD~1", "HEAD", "--", "src/app.py").encode()
    assert _listed(two_commits, rf_home, diff) == {"src/app.py": (5, 1)}
    assert git_numstat(diff, 0, two_commits.root) == {"src/app.py": (5, 1)}


@pytest.mark.parametrize("gap", ["\t", " ", "     "])
def test_timestamp_after_spaces_is_not_part_of_the_name(
    repo: GitRepo, rf_home: Path, gap: str
) -> None:
    """Git's t4135 "damaged" headers: the TAB before the timestamp became spaces."""
    diff = (
        f"--- postimage.txt.orig{gap}{STAMP}\n+++ postimage.txt{gap}{STAMP}\n"
        "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    ).encode()
    assert _listed(repo, rf_home, diff) == {"postimage.txt": "unsupported_ext"}
    assert git_numstat(diff, 0, repo.root) == {"postimage.txt": (1, 1)}


def test_traditional_diff_keeps_a_tab_in_the_name(repo: GitRepo, rf_home: Path) -> None:
    diff = (
        f"--- a/src/tab\there.py\t{STAMP}\n+++ b/src/tab\there.py\t{STAMP}\n"
        "@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
    ).encode()
    assert _listed(repo, rf_home, diff) == {"src/tab\there.py": (1, 0)}
    assert git_numstat(diff, 1, repo.root) == {"src/tab\there.py": (1, 0)}


def test_patch_series_touching_a_path_twice_says_what_to_do(repo: GitRepo, rf_home: Path) -> None:
    repo.write("a.py", "x = 1\n")
    base = repo.commit("base")
    repo.write("a.py", "x = 2\n")
    repo.commit("one")
    repo.write("a.py", "x = 3\n")
    repo.commit("two")
    series = repo.git("format-patch", "--stdout", f"{base}..HEAD").encode()
    line = _refused(repo, rf_home, series)
    assert "'a.py' appears twice" in line
    assert "--from A --to B" in line and "git diff A..B" in line


@pytest.mark.parametrize(
    ("diff", "words"),
    [
        (
            b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\nx [-1-]{+2+}\n",
            "word diff",
        ),
        (
            b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
            b"--- y.py\n+++ y.py\n@@ -1 +1 @@\n-a\n+b\n",
            "mixes",
        ),
        (b"--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n", "hunk truncated"),
        (b"just some text\n", "no file header"),
    ],
)
def test_unreadable_diffs_exit_2_with_one_line(
    repo: GitRepo, rf_home: Path, diff: bytes, words: str
) -> None:
    line = _refused(repo, rf_home, diff)
    assert line.startswith("reviewflow: error: malformed diff at line ") and words in line
    assert git_numstat(diff, 0, repo.root) is None or git_numstat(diff, 1, repo.root) is None
