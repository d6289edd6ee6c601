"""`review --preview --diff -` as a user runs it: what Git reads is listed, or exit 2, one line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from flows.cli.main import main
from tests.git.gitapply import git_numstat
from tests.gitutil import GitRepo

STAMP = "2010-08-18 20:13:08.000000000 +0530"


Run = Callable[[GitRepo, bytes], tuple[int, str, str, Path]]


@pytest.fixture
def run(rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """`main(["review", "--preview", "--diff", "-", ...])` with the diff on stdin."""

    def review(repo: GitRepo, diff: bytes) -> tuple[int, str, str, Path]:
        out = repo.root.parent / "preview.json"
        monkeypatch.chdir(repo.root)
        monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(diff)))
        code = main(["review", "--preview", "--diff", "-", "--json", str(out)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err, out

    return review


def _listed(run: Run, repo: GitRepo, diff: bytes) -> dict[str, tuple[int, int] | str]:
    """path -> (added, removed) for reviewed files, the reason for excluded ones."""
    code, _, err, out = run(repo, diff)
    assert code == 0, err
    doc = json.loads(out.read_text())
    listed: dict[str, tuple[int, int] | str] = {
        f["path"]: (f["added"], f["removed"]) for f in doc["files"]
    }
    listed |= {f["path"]: f["reason"] for f in doc["excluded_files"]}
    return listed


def _refused(run: Run, repo: GitRepo, diff: bytes) -> str:
    """The one stderr line of a refused diff (exit 2, nothing on stdout, no report written)."""
    code, stdout, stderr, out = run(repo, diff)
    assert code == 2, (stdout, stderr)
    assert stdout == "" and not out.exists()
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
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
    two_commits: GitRepo, rf_home: Path, run: Run
) -> None:
    """The issue's pipe: `git -c color.ui=always diff ... | python -m flows.cli review ...`."""
    paths = ["HEAD~1", "HEAD", "--", "logo.png", "src/app.py"]
    coloured = two_commits.git("-c", "color.ui=always", "diff", *paths).encode()
    out = two_commits.root.parent / "preview.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "review",
            "--preview",
            "--diff",
            "-",
            "--json",
            str(out),
        ],
        cwd=two_commits.root,
        input=coloured,
        env=dict(os.environ, REVIEWFLOW_HOME=str(rf_home), PYTHONPATH=os.getcwd()),
        capture_output=True,
    )
    assert (result.returncode, result.stdout, out.exists()) == (2, b"", False)
    (line,) = result.stderr.decode().strip().splitlines()
    assert "ANSI colour codes" in line and "--no-color" in line
    plain = two_commits.git("diff", *paths).encode()
    assert _listed(run, two_commits, plain) == {"src/app.py": (5, 1), "logo.png": "binary"}


def test_custom_prefixes_are_stripped(two_commits: GitRepo, run: Run) -> None:
    diff = two_commits.git(
        "diff", "--src-prefix=old/", "--dst-prefix=new/", "HEAD~1", "HEAD", "--", "src/app.py"
    ).encode()
    assert _listed(run, two_commits, diff) == {"src/app.py": (5, 1)}
    assert git_numstat(diff, 1, two_commits.root) == {"src/app.py": (5, 1)}


def test_no_prefix_diff_reads_at_p0(two_commits: GitRepo, run: Run) -> None:
    diff = two_commits.git("diff", "--no-prefix", "HEAD~1", "HEAD", "--", "src/app.py").encode()
    assert _listed(run, two_commits, diff) == {"src/app.py": (5, 1)}
    assert git_numstat(diff, 0, two_commits.root) == {"src/app.py": (5, 1)}


@pytest.mark.parametrize("gap", ["\t", " ", "     "])
def test_timestamp_after_spaces_is_not_part_of_the_name(repo: GitRepo, run: Run, gap: str) -> None:
    """Git's t4135 "damaged" headers: the TAB before the timestamp became spaces."""
    diff = (
        f"--- postimage.txt.orig{gap}{STAMP}\n+++ postimage.txt{gap}{STAMP}\n"
        "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    ).encode()
    assert _listed(run, repo, diff) == {"postimage.txt": "unsupported_ext"}
    assert git_numstat(diff, 0, repo.root) == {"postimage.txt": (1, 1)}


def test_traditional_diff_keeps_a_tab_in_the_name(repo: GitRepo, run: Run) -> None:
    diff = (
        f"--- a/src/tab\there.py\t{STAMP}\n+++ b/src/tab\there.py\t{STAMP}\n"
        "@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
    ).encode()
    assert _listed(run, repo, diff) == {"src/tab\there.py": (1, 0)}
    assert git_numstat(diff, 1, repo.root) == {"src/tab\there.py": (1, 0)}


def test_patch_series_touching_a_path_twice_says_what_to_do(repo: GitRepo, run: Run) -> None:
    repo.write("a.py", "x = 1\n")
    base = repo.commit("base")
    repo.write("a.py", "x = 2\n")
    repo.commit("one")
    repo.write("a.py", "x = 3\n")
    repo.commit("two")
    series = repo.git("format-patch", "--stdout", f"{base}..HEAD").encode()
    line = _refused(run, repo, series)
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
    repo: GitRepo, run: Run, diff: bytes, words: str
) -> None:
    line = _refused(run, repo, diff)
    assert line.startswith("reviewflow: error: malformed diff at line ") and words in line
    assert git_numstat(diff, 0, repo.root) is None or git_numstat(diff, 1, repo.root) is None
