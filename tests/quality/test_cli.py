"""run.py's own lines: the dry run, bad flags, an absent peer, passes and agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.harness import Settings
from bench.quality.review import ModelChoice
from bench.quality.run import _agreement, main
from tests.quality.tiny import build


def test_dry_run_lists_each_case_and_what_it_would_fetch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build(tmp_path)
    assert (
        main(
            [
                "--cases",
                str(tmp_path / "cases.json"),
                "--dry-run",
                "--cache-dir",
                str(tmp_path / "c"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("cases.json: 2 cases, 3 golden comments (tests/quality/tiny.py)")
    base, head = data["cases"][0]["base"], data["cases"][0]["head"]
    assert (
        out[1]
        == f"tiny-window\t1 golden\tgit fetch {data['cases'][0]['repo']} {base[:12]} {head[:12]}"
    )
    assert not (tmp_path / "c").exists()  # nothing fetched


def test_the_martian_dry_run_asks_github_for_the_pull_request_s_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "--cases",
                "martian",
                "--dry-run",
                "--case",
                "getsentry-sentry-93824",
                "--cache-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    line = capsys.readouterr().out.splitlines()[1]
    assert line == (
        "getsentry-sentry-93824\t5 golden\tGET https://api.github.com/repos/getsentry/"
        "sentry/pulls/93824, then git fetch base + pull/93824/head"
    )


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path)
    cases = str(tmp_path / "cases.json")
    assert (
        main(
            [
                "--cases",
                cases,
                "--model",
                "m",
                "--protocol",
                "openai",
                "--endpoint",
                "http://127.0.0.1:9/v1",
                "--price",
                "cheap",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err == "quality: --price cheap: expected IN,OUT in USD per million tokens, e.g. 2.5,10\n"
    assert main(["--cases", cases]) == 2
    assert "no model configured" in capsys.readouterr().err


def test_an_absent_peer_is_one_line_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path)
    flags = [
        "--cases",
        str(tmp_path / "cases.json"),
        "--model",
        "m",
        "--protocol",
        "openai",
        "--endpoint",
        "http://127.0.0.1:9/v1",
        "--rejudge",
        "--peer",
        "pr-agent",
        "--cassettes",
        str(tmp_path / "none"),
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(flags) == 1  # no cassettes: each case is an error, the run still reports
    err = capsys.readouterr().err
    assert (
        "quality: peer pr-agent is not installed (no `pr-agent` command on PATH); "
        "reviewflow runs alone\n" in err
    )
    assert "[1/2] tiny-window: no cassette at " in err
    assert (tmp_path / "out" / "results.md").exists()


def test_a_bad_judge_temperature_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path)
    flags = ["--cases", str(tmp_path / "cases.json"), "--model", "m", "--protocol", "openai"]
    flags += ["--endpoint", "http://127.0.0.1:9/v1", "--judge-temperature", "warm"]
    assert main(flags) == 2
    assert capsys.readouterr().err == (
        "quality: --judge-temperature warm: expected a number from 0 to 2, or `default`\n"
    )


def test_passes_and_agreement_reach_the_review_and_name_their_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path)
    flags = ["--cases", str(tmp_path / "cases.json"), "--model", "m", "--protocol", "openai"]
    flags += ["--endpoint", "http://127.0.0.1:9/v1", "--replay"]
    flags += ["--cassettes", str(tmp_path / "tapes"), "--out", str(tmp_path / "out")]
    assert main([*flags, "--passes", "3"]) == 1  # no cassettes of three passes yet
    err = capsys.readouterr().err
    assert f"no cassette at {tmp_path / 'tapes' / 'passes-3-k2' / 'tiny-window.json'}" in err
    data = json.loads((tmp_path / "out" / "passes-3-k2" / "results.json").read_text())
    assert (data["passes"], data["min_agreement"], data["label"]) == (3, 2, "tapes")

    assert main([*flags, "--passes", "6"]) == 2
    assert (
        capsys.readouterr().err == "quality: --passes 6: expected a number of passes from 1 to 5\n"
    )
    assert main([*flags, "--passes", "2", "--min-agreement", "3"]) == 2
    assert capsys.readouterr().err == (
        "quality: --min-agreement 3: expected a number from 1 to --passes 2\n"
    )


def test_the_review_gets_the_passes_as_flags(tmp_path: Path) -> None:
    build(tmp_path)
    settings = Settings(
        review=ModelChoice("openai", "m", "http://127.0.0.1:9/v1"),
        judge=ModelChoice("openai", "m", "http://127.0.0.1:9/v1"),
        review_key=None,
        judge_key=None,
        cache=tmp_path,
        cassettes=tmp_path / "tapes",
        mode="replay",
        review_args=["--verify"],
    )
    three = _agreement(settings, 3, 1)
    assert three.review_args == ["--verify", "--passes", "3", "--min-agreement", "1"]
    assert three.cassettes == tmp_path / "tapes" / "passes-3-k1"
    assert _agreement(settings, None, None) == settings
