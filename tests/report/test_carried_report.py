"""A publishing re-run on the same head reviews nothing new, yet its gate fails on the findings
still open on the request from the earlier review: the console and Markdown reports list those
carried findings (file:line, severity, title) and the header says why the gate fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from reviewflow.report.mdsafe import md_inline
from tests.flows.reviewer import ScriptedReviewer
from tests.publish import fake_github
from tests.publish.scenario import LEAK, SPLIT, GitHubSide, PullRequest, use_env
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _run(pr: PullRequest, wire: WireServer, mp: pytest.MonkeyPatch, out: Path) -> dict[str, Any]:
    use_env(mp, wire, pr.side.env())
    args = ["review", "--repo", str(pr.repo.root), "--publish", "github", "--report-dir", str(out)]
    assert main([*args, "--console", "summary", "--no-progress"]) == 1
    report: dict[str, Any] = json.loads((out / "review-report.json").read_text())
    return report


def test_a_rerun_lists_the_carried_findings_that_fail_its_gate(
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with fake_github.FakeGitHub() as github:
        pr = PullRequest.create(tmp_path, GitHubSide(github))
        wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK]}))
        first = _run(pr, wire, monkeypatch, tmp_path / "out1")
        capsys.readouterr()
        again = _run(pr, wire, monkeypatch, tmp_path / "out2")

    carried = again["pull_request"]["carried"]
    assert again["findings"] == [] and len(carried) == 2
    out = capsys.readouterr().out
    assert "gate failed: 2 open findings carried from the earlier review" in out
    markdown = (tmp_path / "out2" / "review-report.md").read_text()
    assert "2 open findings carried from the earlier review" in markdown
    for finding in first["findings"]:
        where = f"{finding['path']}:{finding['start_line']}"
        line = f"[{finding['severity'].upper()}] {where}  {finding['title']}  (carried)"
        assert line in out
        item = f"**{finding['severity']}** {md_inline(where)}: {md_inline(finding['title'])}"
        assert f"  - {item} (carried)" in markdown
