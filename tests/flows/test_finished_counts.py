"""Files counted as reviewed only once finished: a review the budget stopped before any
request says 0 of 1 files reviewed, lists the file incomplete with reason `budget`, and names
the cost budget in the price's currency (`$0.001`); one cancelled with a request in flight
counts only the file that finished, with or without findings (the other: `cancelled`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_resume import (
    FAST,
    ROOT,
    SLOW,
    HangOnSlow,
    _changed_repo,
    _fast_done_and_slow_asked,
)
from tests.flows.test_review_e2e import SPLIT
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


def _filters_completed(stage: str = "review_filter") -> int:
    """The `stage` task runs the Prefect API holds as completed (of every test so far)."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        TaskRunFilter,
        TaskRunFilterName,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    completed = TaskRunFilterState(type=TaskRunFilterStateType(any_=[StateType.COMPLETED]))
    runs = TaskRunFilter(name=TaskRunFilterName(like_=stage), state=completed)

    async def count() -> int:
        async with get_client() as client:
            return len(await client.read_task_runs(task_run_filter=runs))

    return asyncio.run(count())


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("findings", [1, 0], ids=["with-a-finding", "no-finding"])
def test_a_cancel_with_a_request_in_flight_counts_only_the_finished_file(
    repo: GitRepo, wire: WireServer, rf_home: Path, tmp_path: Path, findings: int
) -> None:
    """Ctrl-C while the slow file's request hangs: 1 of 2 files reviewed, the slow one
    incomplete with reason `cancelled`; so too when the finished file had no finding (its
    tool loop said `task_done`: no relocation or filter follows it)."""
    _changed_repo(repo.root)
    finding = {**SPLIT, "file": FAST, "existing_code": "return open('x').read()"}
    wire.respond("openai", HangOnSlow({FAST: [finding] * findings, SLOW: []}))
    last = "review_filter" if findings else "tool_loop"  # the fast file's last stage
    env = {
        **os.environ,
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
    }
    out = tmp_path / "out"
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--report-dir", str(out)]
    before = _filters_completed(last)
    child = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args, "--console", "off"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the fast file's filter is done (its result stored and its run completed in the API,
        # not only written to the cache) and the slow file's request hangs
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            _fast_done_and_slow_asked(rf_home / "cache" / "results", wire, stage=last)
            and _filters_completed(last) > before
        ):
            assert child.poll() is None, "the review ended before it could be cancelled"
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    report = json.loads((out / "review-report.json").read_text())
    jsonschema.validate(report, report_schema())
    assert report["stats"]["files_reviewed"] == 1
    assert report["incomplete_files"] == [{"path": SLOW, "reason": "cancelled"}]
    markdown = (out / "review-report.md").read_text()
    assert "2 changed, 1 reviewed (1 incomplete: cancelled)" in markdown
    assert len(report["findings"]) == findings
