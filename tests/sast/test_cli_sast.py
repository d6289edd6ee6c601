"""`--sast` through the CLI: a whole review against the wire server, and the failures that end
a review with one line before any model request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.flows.reviewer import ScriptedReviewer, stage_of
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

SHELL_RULE = "reviewflow-python-subprocess-shell-true"


def _model(monkeypatch: pytest.MonkeyPatch, wire: WireServer) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)


def _messages(body: dict[str, Any], role: str) -> str:
    return "\n".join(
        json.dumps(m.get("content"), ensure_ascii=False)
        for m in body.get("messages", [])
        if m.get("role") == role
    )


@pytest.mark.usefixtures("prefect_harness")
def test_sast_results_reach_only_user_messages_and_only_for_added_lines(
    shell_change: GitRepo,
    semgrep: str,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _model(monkeypatch, wire)
    wire.respond("openai", ScriptedReviewer({"app/run.py": []}))  # reads, reports nothing
    assert main(["config", "set", "review.sast_semgrep", semgrep]) == 0
    out = tmp_path / "out"
    flags = ["--console", "off", "--report-dir", str(out), "--json", "report.json"]
    flags += ["--markdown", "off", "--sarif", "off", "--no-progress"]
    code = main(["review", "--repo", str(shell_change.root), "--commit", "HEAD", "--sast", *flags])
    assert code == 0, (out / "report.json").read_text() if out.exists() else code
    report = json.loads((out / "report.json").read_text())
    assert report["findings"] == []  # a SAST result is never a finding on its own
    sast = report["metadata"]["sast"]
    assert (sast["semgrep_version"], sast["rules"], sast["results"]) == ("1.185.0", "bundled", 2)
    assert sast["files"] == sast["cached"] == 2  # the CLI's early scan ran them; the stage read
    mains = [r.body for r in wire.requests() if stage_of(json.dumps(r.body)) == "main"]
    by_file = {p: [b for b in mains if p in _messages(b, "user")] for p in ("run.py", "page.js")}
    for body in by_file["run.py"]:
        user, system = _messages(body, "user"), _messages(body, "system")
        assert f"{SHELL_RULE} [warning] app/run.py:10:" in user
        assert "command-injection" not in user  # os.system is on an unchanged line
        assert "app/run.py" not in system and SHELL_RULE not in system
        assert "Dismiss false positives silently" in system
    assert "reviewflow-js-xss" in _messages(by_file["page.js"][0], "user")
    for body in [*mains, *(r.body for r in wire.requests())]:
        assert "reviewflow-" not in _messages(body, "system")


def _fake_semgrep(tmp_path: Path, version: str) -> Path:
    fake = tmp_path / "semgrep"
    fake.write_text(f"#!/bin/sh\necho {version}\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize(
    ("semgrep_setting", "expected"),
    [
        ("missing", "review.sast_semgrep '{path}' is not an executable file"),
        ("other", "semgrep 1.2.3 is installed ({path}); reviewflow accepts 1.185.0 only"),
    ],
)
def test_sast_without_the_accepted_semgrep_is_one_line_and_exit_2_before_any_request(
    semgrep_setting: str,
    expected: str,
    shell_change: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _model(monkeypatch, wire)
    path = (
        tmp_path / "nowhere" if semgrep_setting == "missing" else _fake_semgrep(tmp_path, "1.2.3")
    )
    assert main(["config", "set", "review.sast_semgrep", str(path)]) == 0
    capsys.readouterr()
    args = ["review", "--repo", str(shell_change.root), "--commit", "HEAD", "--sast"]
    for extra in ([], ["--preview"]):
        assert main([*args, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expected.format(path=path) in err, err
    assert wire.requests() == []
