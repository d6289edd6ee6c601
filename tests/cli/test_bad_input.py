"""Every kind of bad input: one line on stderr naming the problem, exit 2, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flows.cli import main
from tests.cli.test_preview import binary_stdin
from tests.gitutil import GitRepo


@pytest.fixture(params=["preview", "model review"])
def review_cmd(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each bad input is refused the same way by a preview and by a model review."""
    if request.param == "preview":
        return ["review", "--preview"]
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", "http://127.0.0.1:9/v1")
    return ["review"]


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


def test_not_a_git_repository(
    review_cmd: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(plain)])
    assert "not a Git repository" in err


@pytest.mark.parametrize(
    "flags",
    [["--commit", "no-such-ref"], ["--from", "main", "--to", "nope"], ["--commit=-p"]],
)
def test_unknown_ref(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
) -> None:
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root), *flags])
    assert "unknown revision" in err


def test_from_without_to(
    review_cmd: list[str], committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_failing(
        capsys, tmp_path, [*review_cmd, "--repo", str(committed.root), "--from", "main"]
    )
    assert "--from and --to must be given together" in err


def test_commit_with_from(
    review_cmd: list[str], committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*review_cmd, "--repo", str(committed.root), "--commit", "HEAD"]
    err = run_failing(capsys, tmp_path, [*args, "--from", "HEAD", "--to", "HEAD"])
    assert "--commit cannot be combined with --from/--to" in err


def test_malformed_diff_on_stdin(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    garbage = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,5 +1,5 @@\n-x\n"
    monkeypatch.setattr(sys, "stdin", binary_stdin(garbage))
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root), "--diff", "-"])
    assert "diff" in err.lower()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("review: [1,\n", "invalid YAML"), ("review:\n  colour: red\n", "review.colour")],
)
def test_bad_config(
    review_cmd: list[str],
    committed: GitRepo,
    rf_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    fragment: str,
) -> None:
    (rf_home / "config.yaml").write_text(text)
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root)])
    assert fragment in err


def test_rules_json_syntax_error_names_file_and_line(
    review_cmd: list[str], committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    committed.write(".reviewflow/rules.json", '{\n  "exclude": ["a",]\n}\n')
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root)])
    assert "rules.json" in err and "line 2" in err


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_rule_file(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    rule = tmp_path / "rules.json"
    if kind == "directory":
        rule.mkdir()
    args = [*review_cmd, "--repo", str(committed.root), "--rule", str(rule)]
    err = run_failing(capsys, tmp_path, args)
    assert str(rule) in err


def test_bad_flag_value(
    review_cmd: list[str], committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*review_cmd, "--repo", str(committed.root), "--fail-on", "urgent"]
    err = run_failing(capsys, tmp_path, args)
    assert "review.fail_on" in err


def test_ci_without_trusted_ref_fails_closed(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root)])
    assert "--trusted-ref" in err
    if review_cmd == ["review", "--preview"]:
        args = [*review_cmd, "--repo", str(committed.root), "--trusted-ref", "HEAD"]
        assert main(args) == 0


@pytest.mark.parametrize("target", ["directory", "under-a-file"])
def test_unwritable_json_path(
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    path = tmp_path if target == "directory" else blocker / "out.json"
    code = main(["review", "--preview", "--repo", str(committed.root), "--json", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot write" in err
    assert not list(tmp_path.glob(".*.tmp"))


def test_odd_file_names_are_escaped_in_output(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import os

    (repo.root / os.fsdecode(b"caf\xe9.py")).write_text("x = 1\n")
    repo.write("evil\x1b]0;pwned\x07.py", "x = 1\n")
    repo.write("x.py\nReviewed files (9):\n  fake.py", "x = 1\n")
    out = tmp_path / "p.json"
    assert main(["review", "--preview", "--repo", str(repo.root), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text
    assert "\nReviewed files (9)" not in text
    doc = json.loads(out.read_text(encoding="utf-8"))
    paths = {f["path"] for f in doc["files"]} | {e["path"] for e in doc["excluded_files"]}
    assert "caf\\xe9.py" in paths
