"""With `--sast`, the estimate the CLI prints before the review counts the scan's hints, and is
the report's estimate: one number, made by one function (`reviewflow.cost.review`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.cost.text import estimate_line
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer


@pytest.mark.usefixtures("prefect_harness")
def test_the_cli_estimate_counts_the_sast_hints_the_report_counts(
    shell_change: GitRepo,
    semgrep: str,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    wire.respond("openai", ScriptedReviewer({"app/run.py": []}))
    assert main(["config", "set", "review.sast_semgrep", semgrep]) == 0
    out = tmp_path / "out"
    flags = ["--console", "summary", "--report-dir", str(out), "--json", "report.json"]
    flags += ["--markdown", "off", "--sarif", "off", "--no-progress"]
    capsys.readouterr()
    code = main(["review", "--repo", str(shell_change.root), "--commit", "HEAD", "--sast", *flags])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["metadata"]["sast"]["results"] == 2  # hints in the main prompts
    printed = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("reviewflow: es")
    ]
    assert printed == [f"reviewflow: {estimate_line(report['estimate'])}"]
