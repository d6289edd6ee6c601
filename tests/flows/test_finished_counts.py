"""Files counted as reviewed only once finished: a review the budget stopped before any
request says 0 of 1 files reviewed, lists the file incomplete with reason `budget`, and names
the cost budget in the price's currency (`$0.001`)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer


@pytest.fixture
def one(repo: GitRepo) -> GitRepo:
    repo.write("a.py", "def f(x):\n    return x\n")
    repo.commit("base")
    repo.write("a.py", "def f(x):\n    return open(x).read()\n")
    repo.commit("change")
    return repo


def _review(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, *flags: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o-mini")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "summary"]
    args += ["--report-dir", str(out), "--no-progress", "--concurrency", "1", *flags]
    code = main(args)
    return code, json.loads((out / "review-report.json").read_text())


@pytest.mark.usefixtures("prefect_harness")
def test_a_budget_that_refuses_the_first_request_reports_no_file_reviewed(
    one: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wire.respond("openai", ScriptedReviewer({"a.py": []}))
    code, report = _review(one, wire, monkeypatch, "--max-cost", "0.000001")

    assert code == 2 and wire.requests() == []
    jsonschema.validate(report, report_schema())
    assert report["stats"]["files_reviewed"] == 0
    assert report["incomplete_files"] == [{"path": "a.py", "reason": "budget"}]
    assert report["budget"]["files_finished"] == 0
    captured = capsys.readouterr()
    assert "0 of 1 file reviewed (1 incomplete: budget)" in captured.out
    assert "budget of $0.000001 in cost reached after 0 of 1 files" in captured.err
    assert "incomplete: budget of 0.0000" not in captured.err
