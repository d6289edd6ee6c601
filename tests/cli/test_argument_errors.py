"""Argument errors of every command: no abbreviations, and one documented line, exit 2."""

from __future__ import annotations

import pytest

from flows.cli.main import main


def refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as stopped:
        code = stopped.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.rstrip("\n")


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["server", "stop", "--forc"], "unknown flag --forc (did you mean --force?)"),
        (["review", "--previe"], "unknown flag --previe (did you mean --preview?)"),
        (["review", "--max-cos", "2"], "unknown flag --max-cos (did you mean --max-cost?)"),
        (["config", "show", "--zzzzzz"], "unknown flag --zzzzzz"),
        (["--verbos"], "unknown flag --verbos"),
    ],
)
def test_no_abbreviations_and_unknown_flags_name_the_closest(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    assert refusal(capsys, argv) == f"reviewflow: error: {line}"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["review", "--max-cost", "abc"], "invalid value for --max-cost: 'abc'"),
        (["review", "--max-cost=abc"], "invalid value for --max-cost: 'abc'"),
        (["review", "--pull-request", "abc"], "invalid value for --pull-request: 'abc'"),
        (["review", "--concurrency", "1.5"], "invalid value for --concurrency: '1.5'"),
        (
            ["review", "--confidence-threshold", "hi"],
            "invalid value for --confidence-threshold: 'hi'",
        ),
        (["review", "--console", "loud"], "invalid value for --console: 'loud'"),
        (["review", "--publish", "svn"], "invalid value for --publish: 'svn'"),
        (["review", "--protocol", "soap"], "invalid value for --protocol: 'soap'"),
        (["review", "--task-runner", "gpu"], "invalid value for --task-runner: 'gpu'"),
        (["review", "--max-cost"], "--max-cost needs a value"),
        (["review", "--preview", "--max-cost", "0"], "invalid value for --max-cost: '0' ("),
        (["review", "--preview", "--max-cost", "1e309"], "invalid value for --max-cost: '1e309' ("),
    ],
)
def test_bad_values_in_the_documented_style(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    err = refusal(capsys, argv)
    assert err.startswith(f"reviewflow: error: {line}"), err
    assert "argument" not in err


def test_choices_errors_list_what_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, ["review", "--console", "loud"])
    assert "(accepted: " in err and "'loud'" in err


def test_unknown_command_in_the_same_style(capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, ["reveiw"])
    assert err.startswith("reviewflow: error: invalid value for COMMAND: 'reveiw'"), err
    assert "did you mean review?" in err


def test_config_set_missing_key_names_the_mapping_and_what_it_lacks(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pytest.TempPathFactory,
) -> None:
    monkeypatch.setenv("REVIEWFLOW_HOME", str(tmp_path))
    err = refusal(capsys, ["config", "set", "model.price", "{input: 2.5}"])
    assert err == (
        "reviewflow: error: invalid value for 'model.price': a YAML mapping without 'output' "
        "(accepted: a mapping that sets output)"
    )
