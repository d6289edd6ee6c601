"""A review's flow run as the Prefect UI shows it: named by the review's ID (the report's), and
ended in the state its exit code says: Completed for 0 and 1, Failed with the reason for 2 (an
incomplete review), Cancelled for 130 (Ctrl-C). Read back from the Prefect API."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_finished_counts import _filters_completed, _review
from tests.flows.test_resume import FAST, ROOT, SLOW, HangOnSlow, _changed_repo
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer


def _runs_named(name: str) -> list[Any]:
    """The flow runs the Prefect API holds under `name`."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    async def read() -> list[Any]:
        async with get_client() as client:
            named = FlowRunFilter(name=FlowRunFilterName(any_=[name]))
            return list(await client.read_flow_runs(flow_run_filter=named))

    return asyncio.run(read())


@pytest.fixture
def one(repo: GitRepo) -> GitRepo:
    repo.write("a.py", "def f(x):\n    return x\n")
    repo.commit("base")
    repo.write("a.py", "def f(x):\n    return open(x).read()\n")
    repo.commit("change")
    return repo


@pytest.mark.usefixtures("prefect_harness")
def test_an_incomplete_review_ends_failed_with_its_reason_named_by_its_id(
    one: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond("openai", ScriptedReviewer({"a.py": []}))
    code, report = _review(one, wire, monkeypatch, "--max-cost", "0.000001")  # refuses all

    assert code == 2
    [run] = _runs_named(report["review_id"])
    assert run.state.type.value == "FAILED"
    assert run.state.message.startswith("review incomplete: budget of $0.000001 in cost")


@pytest.mark.usefixtures("prefect_harness")
def test_a_complete_review_ends_completed_named_by_its_id(
    one: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond("openai", ScriptedReviewer({"a.py": []}))
    # a change of its own: the previous test's review of `one`, started within the same
    # second, would carry the same ID (its time to the second and the diff's hash)
    one.write("a.py", "def f(x):\n    return open(x).read(1)\n")
    one.commit("another change")
    code, report = _review(one, wire, monkeypatch)

    assert code == 0
    [run] = _runs_named(report["review_id"])
    assert run.state.type.value == "COMPLETED"


@pytest.mark.usefixtures("prefect_harness")
def test_a_cancelled_review_ends_cancelled_named_by_its_id(
    repo: GitRepo, wire: WireServer, rf_home: Path, tmp_path: Path
) -> None:
    """Ctrl-C while the slow file's request hangs: exit 130, and its flow run Cancelled."""
    _changed_repo(repo.root)
    wire.respond("openai", HangOnSlow({FAST: [], SLOW: []}))
    env = {
        **os.environ,
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
    }
    out = tmp_path / "out"
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--report-dir", str(out)]
    before = _filters_completed("tool_loop")
    child = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args, "--console", "off"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:  # the fast file is done and the slow file's request hangs
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            any(SLOW in str(request.body) for request in wire.requests())
            and _filters_completed("tool_loop") > before
        ):
            assert child.poll() is None, "the review ended before it could be cancelled"
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    report = json.loads((out / "review-report.json").read_text())
    [run] = _runs_named(report["review_id"])
    assert run.state.type.value == "CANCELLED"
    assert (
        run.state.message == "the review was cancelled: only the files finished before are reported"
    )
