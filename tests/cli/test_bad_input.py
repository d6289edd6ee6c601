"""Every kind of bad input: one line on stderr naming the problem, exit 2, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from flows.cli.main import main
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
    assert err == (
        "reviewflow: error: invalid value for --fail-on: 'urgent' "
        "(accepted: one or more of critical, high, medium, low, e.g. critical,high)\n"
    )


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


def test_escaped_names_keep_the_columns_aligned(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("evil\x1b[2J.txt", "x = 1\n")
    repo.write("plain_name_longer.md", "x = 1\n")
    assert main(["review", "--preview", "--repo", str(repo.root)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("  evil", "  plain"))]
    assert len(rows) == 2 and "  evil\\x1b[2J.txt  " in out
    columns = {
        row.index(" invalid_path") if "invalid" in row else row.index(" unsupported")
        for row in rows
    }
    assert len(columns) == 1, rows


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-file-bytes", "10"], "--max-file-bytes: 10 (accepted: an integer from 1024 to"),
        (["--concurrency", "0"], "--concurrency: 0 (accepted: an integer from 1 to 64)"),
        (["--timeout", "1y"], "--timeout: '1y' (accepted: a positive duration such as 120s"),
        (["--model", ""], "--model: '' (accepted: a model name, e.g. gpt-4o)"),
        (["--passes", "6"], "--passes: '6' (accepted: a number of passes from 1 to 5)"),
    ],
)
def test_bad_flag_values_name_flag_value_and_accepted(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str,
) -> None:
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root), *flags])
    assert err.startswith(f"reviewflow: error: invalid value for {message}"), err


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "review.fail_on",
            "critical,urgent",
            "'review.fail_on': 'urgent' (accepted: one or more of critical, high, medium, low",
        ),
        ("review.concurrency", "abc", "'review.concurrency': 'abc' (accepted: an integer from 1"),
        (
            "model.protocol",
            "openia",
            "'model.protocol': 'openia' (accepted: openai, anthropic, gemini, or a protocol an "
            "installed plugin registers",
        ),
        ("output.progress", "maybe", "'output.progress': 'maybe' (accepted: true or false)"),
        (
            "output.language",
            "en_US",
            "'output.language': 'en_US' (accepted: a BCP 47 tag of a known language",
        ),
    ],
)
def test_config_set_refusals_name_key_value_and_accepted(
    rf_home: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, message: str
) -> None:
    assert main(["config", "set", key, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"reviewflow: error: invalid value for {message}"), err
    assert err.count("\n") == 1 and " in value" not in err and "Input should" not in err
    assert not (rf_home / "config.yaml").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "model: gpt-4o\n",
            "'model' in {path}: 'gpt-4o' (accepted: a section with the keys protocol, name, "
            "endpoint, api_key, timeout, api_key_block, platform, region, project, deployment, "
            "api_version, price; e.g. model: {{name: ...}})",
        ),
        (
            "review:\n  fail_on: [high, nope]\n",
            "'review.fail_on' in {path}: 'nope' (accepted: one or more of critical, high",
        ),
    ],
)
def test_config_file_refusals_in_user_terms(
    rf_home: Path,
    committed: GitRepo,
    capsys: pytest.CaptureFixture[str],
    text: str,
    message: str,
) -> None:
    path = rf_home / "config.yaml"
    path.write_text(text)
    review = ["review", "--preview", "--repo", str(committed.root)]
    for argv, code, kind in ((["config", "show"], 0, "note"), (review, 2, "error")):
        assert main(argv) == code  # `config show` shows the rest, and the problem
        err = capsys.readouterr().err
        assert err.startswith(f"reviewflow: {kind}: invalid value for {message.format(path=path)}")
        assert err.count("\n") == 1 and "ModelSettings" not in err


def test_environment_refusal_names_the_variable(
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_TIMEOUT", "soon")
    err = run_failing(capsys, tmp_path, ["review", "--preview", "--repo", str(committed.root)])
    assert err.startswith("reviewflow: error: invalid value for REVIEWFLOW_MODEL_TIMEOUT: 'soon'")


def test_json_path_that_is_a_directory(
    committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], review_cmd: list[str]
) -> None:
    """Refused before the model is paid: a model review checks its report paths first."""
    code = main([*review_cmd, "--repo", str(committed.root), "--json", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err == f"reviewflow: error: cannot write {tmp_path}: is a directory\n"


@pytest.mark.parametrize("flag", ["--sarif", "--markdown", "--report-dir"])
def test_model_review_refuses_unwritable_report_paths_before_starting(
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", "http://127.0.0.1:9/v1")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = blocker if flag == "--report-dir" else tmp_path
    code = main(["review", "--repo", str(committed.root), flag, str(target)])
    err = capsys.readouterr().err
    kind = "is not a directory" if flag == "--report-dir" else "is a directory"
    assert code == 2 and err == f"reviewflow: error: cannot write {target}: {kind}\n"


def _read_a_directory(*args: object) -> bytes:
    raise IsADirectoryError(21, "Is a directory")


_UNREADABLE = SimpleNamespace(buffer=SimpleNamespace(read=_read_a_directory))  # `< /`


@pytest.mark.parametrize(
    ("stdin", "reason"), [(None, "stdin is closed"), (_UNREADABLE, "Is a directory")]
)
def test_a_diff_on_an_unreadable_stdin(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: object,
    reason: str,
) -> None:
    monkeypatch.setattr(sys, "stdin", stdin)
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root), "--diff", "-"])
    assert err == f"reviewflow: error: cannot read the diff from stdin: {reason}\n"


def test_a_deleted_working_directory(
    review_cmd: list[str],
    committed: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    err = run_failing(capsys, tmp_path, [*review_cmd, "--repo", str(committed.root)])
    assert err == (
        "reviewflow: error: the current directory cannot be used (No such file or directory; "
        "deleted?): cd to an existing directory and run the command again\n"
    )


@pytest.mark.parametrize(("target", "where"), [("/proc/version", "/proc"), ("/sys/x.json", "/sys")])
def test_a_report_path_where_no_file_can_be_made_is_refused_before_the_review(
    committed: GitRepo,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    where: str,
) -> None:
    """/proc and /sys look writable to root; writing a report there failed only at the end."""
    if not Path(where).is_dir():
        pytest.skip(f"no {where} here")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", "http://127.0.0.1:9/v1")
    code = main(["review", "--repo", str(committed.root), "--json", target])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(
        f"reviewflow: error: cannot write {target}: no file can be created in {where} ("
    )


def test_more_agreement_than_passes_names_both(
    review_cmd: list[str], committed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--repo", str(committed.root), "--passes", "2", "--min-agreement", "3"]
    err = run_failing(capsys, tmp_path, [*review_cmd, *flags])
    assert err == (
        "reviewflow: error: conflicting settings: --min-agreement is '3' and --passes is 2: no "
        "finding is found by more passes than the review makes; change or unset one of them\n"
    )
