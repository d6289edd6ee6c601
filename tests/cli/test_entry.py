"""`reviewflow.entry`, the CLI's one entry point to a review: the front half it hands the flow,
a review cancelled before the flow took the cancel, a diff on stdin, and a start-up that does
not import the stages it runs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviewflow import entry
from reviewflow.config import Config, load_config
from reviewflow.errors import ConfigError, OutputError
from reviewflow.request import ReviewRequest
from tests.gitutil import GitRepo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def changed(repo: GitRepo) -> GitRepo:
    repo.write("a.py", "def f(x):\n    return x\n")
    repo.write("README.md", "# r\n")
    repo.commit("base")
    repo.write("a.py", "def f(x):\n    return x + 1\n")
    repo.write("README.md", "# r, again\n")
    return repo


def _config(home: Path, **output: str) -> Config:
    flags = {"model": {"name": "gpt-4o"}, "output": {"progress": False, **output}}
    return load_config(home, dict(os.environ), flags)


def _request(repo: GitRepo, home: Path, diff_source: str | None = None) -> ReviewRequest:
    return ReviewRequest.from_flags(str(repo.root), home=str(home), diff_source=diff_source)


def test_the_front_half_holds_what_the_estimate_counted(changed: GitRepo, rf_home: Path) -> None:
    config = _config(rf_home)
    with entry.prepare(_request(changed, rf_home), config) as front:
        kept = [item.file.path for item in front.scope.selection.kept]
        assert kept == ["a.py"]  # README.md: documentation is left out
        assert front.line is not None and front.line.startswith("estimate: ~")
        assert front.estimate is not None and front.estimate["requests"] >= 1
        assert front.packs is not None and set(front.packs) == {"a.py"}
        assert front.early is None and not front.request.sast_prescanned


def test_with_the_console_off_the_flow_makes_the_estimate(changed: GitRepo, rf_home: Path) -> None:
    """`--console off` keeps stderr to an exit 2's one line: no estimate, so none handed on."""
    front = entry.prepare(_request(changed, rf_home), _config(rf_home, console="off"))
    assert (front.line, front.estimate, front.packs) == (None, None, None)
    assert len(front.scope.selection.kept) == 1


def test_a_review_cancelled_before_its_flow_ends_with_its_report(
    changed: GitRepo, rf_home: Path
) -> None:
    config = _config(rf_home)
    front = entry.prepare(_request(changed, rf_home), config)
    run = entry.cancelled_run(front, config)
    assert run.exit_code == 130 and run.report_error is None
    report = json.loads(Path(run.written["json"]).read_text())
    assert report["status"] == "incomplete" and report["exit_code"] == 130
    assert report["findings"] == [] and run.outcome.files_changed == 2


def test_a_diff_on_stdin_is_saved_for_the_flows_tasks_then_removed(
    changed: GitRepo, rf_home: Path
) -> None:
    diff = subprocess.run(
        ["git", "-C", str(changed.root), "diff"], capture_output=True, check=True
    ).stdout
    request = _request(changed, rf_home, diff_source="-")
    with entry.stdin_saved(request, io.BytesIO(diff)) as saved:
        assert saved.stdin_copy is not None
        copy = Path(saved.stdin_copy)
        assert copy.read_bytes() == diff
        front = entry.prepare(saved, _config(rf_home, console="off"))
        assert [item.file.path for item in front.scope.selection.kept] == ["a.py"]
    assert not copy.exists()
    unchanged = _request(changed, rf_home)
    with entry.stdin_saved(unchanged, None) as same:
        assert same is unchanged  # no diff on stdin: stdin is not read


def test_report_paths_that_cannot_be_written_fail_before_the_review(
    tmp_path: Path, rf_home: Path
) -> None:
    with pytest.raises(ConfigError, match="at most one report can"):
        entry.check_outputs(_config(rf_home, json="-", sarif="-").output, rf_home)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="is not a writable directory"):
        entry.check_outputs(_config(rf_home, report_dir=str(blocker / "reports")).output, rf_home)


def test_the_commands_path_imports_none_of_the_stages() -> None:
    """`flows.cli.main` imports `reviewflow.entry` at module level; the stages the entry point
    runs (scope, SAST, cost, index, report, the console) and Prefect are imported only when a
    review starts, so `reviewflow config` and the others stay instant."""
    code = "import sys, flows.cli.main; print('\\n'.join(sorted(sys.modules)))"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    loaded = set(out.stdout.split())
    assert "reviewflow.entry" in loaded
    stages = {
        "prefect",
        "reviewflow.select.scope",
        "reviewflow.sast.early",
        "reviewflow.cost.review",
        "reviewflow.review.packs",
        "reviewflow.report.outcome",
        "reviewflow.report.console",
    }
    assert loaded & stages == set()
