"""Every kind of bad input: one line on stderr naming the problem, exit 2, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flows.cli import main
from tests.cli.test_preview import binary_stdin
from tests.gitutil import GitRepo


@pytest.fixture
def committed(repo: GitRepo) -> GitRepo:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    return repo


def run_failing(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]) -> str:
    out = tmp_path / "out" / "preview.json"
    code = main([*args, "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("reviewflow: error: ")
    assert captured.out == ""
    assert not out.exists()
    return captured.err


def test_not_a_git_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    err = run_failing(capsys, tmp_path, ["review", "--preview", "--repo", str(plain)])
    assert "not a Git repository" in err


@pytest.mark.parametrize(
    "flags",
    [["--commit", "no-such-ref"], ["--from", "main", "--to", "nope"], ["--commit=-p"]],
)
def test_unknown_ref(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    err = run_failing(
        capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root), *flags]
    )
    assert "unknown revision" in err


def test_from_without_to(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_failing(
        capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root), "--from", "main"]
    )
    assert "--from and --to must be given together" in err


def test_commit_with_from(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["review", "--preview", "--repo", str(committed.root), "--commit", "HEAD"]
    err = run_failing(capsys, tmp_path, [*args, "--from", "HEAD", "--to", "HEAD"])
    assert "--commit cannot be combined with --from/--to" in err


def test_malformed_diff_on_stdin(
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    garbage = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,5 +1,5 @@\n-x\n"
    monkeypatch.setattr(sys, "stdin", binary_stdin(garbage))
    err = run_failing(
        capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root), "--diff", "-"]
    )
    assert "diff" in err.lower()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("review: [1,\n", "invalid YAML"), ("review:\n  colour: red\n", "review.colour")],
)
def test_bad_config(
    committed: GitRepo,
    rf_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    fragment: str,
) -> None:
    (rf_home / "config.yaml").write_text(text)
    err = run_failing(capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root)])
    assert fragment in err


def test_rules_json_syntax_error_names_file_and_line(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    committed.write(".reviewflow/rules.json", '{\n  "exclude": ["a",]\n}\n')
    err = run_failing(capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root)])
    assert "rules.json" in err and "line 2" in err


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_rule_file(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    rule = tmp_path / "rules.json"
    if kind == "directory":
        rule.mkdir()
    args = ["review", "--preview", "--repo", str(committed.root), "--rule", str(rule)]
    err = run_failing(capsys, tmp_path, args)
    assert str(rule) in err


def test_bad_flag_value(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["review", "--preview", "--repo", str(committed.root), "--fail-on", "urgent"]
    err = run_failing(capsys, tmp_path, args)
    assert "review.fail_on" in err


def test_ci_without_trusted_ref_fails_closed(
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    err = run_failing(capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root)])
    assert "--trusted-ref" in err
    assert (
        main(["review", "--preview", "--repo", str(committed.root), "--trusted-ref", "HEAD"]) == 0
    )
