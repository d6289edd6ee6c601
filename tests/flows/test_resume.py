"""A review killed part-way (`kill -9` while the model answers), run again, pays only the rest;
one cancelled with Ctrl-C reports what it finished and exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_review_e2e import SPLIT
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, Delay, RecordedRequest, Reply, WireServer

ROOT = Path(__file__).resolve().parents[2]
FAST, SLOW = "app/fast.py", "app/slow.py"


class HangOnSlow(ScriptedReviewer):
    """Answers the fast file's session at once; the slow file's requests hang."""

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        if SLOW in text:
            return Delay(600)  # cut short when the wire server stops
        return super()._main(record, text)


def _changed_repo(root: Path) -> GitRepo:
    repo = GitRepo.init(root)
    for path in (FAST, SLOW):
        repo.write(path, "def f():\n    return 1\n")
    repo.commit("base")
    for path in (FAST, SLOW):
        repo.write(path, "def f():\n    return open('x').read()\n")
    repo.commit("change")
    return repo


@pytest.mark.usefixtures("prefect_harness")
def test_killed_review_resumed_pays_only_for_unfinished_files(
    repo: GitRepo, wire: WireServer, rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.settings import PREFECT_API_URL

    _changed_repo(repo.root)
    wire.respond("openai", HangOnSlow({FAST: [], SLOW: []}))
    model_env = {
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
    }
    env = {**os.environ, **model_env, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    child = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = rf_home / "cache" / "results"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _fast_done_and_slow_asked(results, wire):
            assert child.poll() is None, "the review ended before it could be killed"
            time.sleep(0.1)
        assert _fast_done_and_slow_asked(results, wire)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    first = len(wire.requests())

    wire.respond("openai", ScriptedReviewer({FAST: [], SLOW: [SPLIT]}))
    for name, value in model_env.items():
        monkeypatch.setenv(name, value)
    assert main(args) == 0
    again = wire.requests()[first:]
    assert again, "the unfinished file was reviewed"
    assert all(FAST not in str(request.body) for request in again)  # the finished file: cached
    assert any(SLOW in str(request.body) for request in again)


def _fast_done_and_slow_asked(results: Path, wire: WireServer, stage: str = "tool_loop") -> bool:
    """The fast file's `stage` result is stored and the slow file's session has begun."""
    done = list(results.glob(f"{stage}-*")) if results.is_dir() else []
    return bool(done) and any(SLOW in str(request.body) for request in wire.requests())


@pytest.mark.usefixtures("prefect_harness")
def test_ctrl_c_keeps_finished_files_and_exits_130(
    repo: GitRepo, wire: WireServer, rf_home: Path, tmp_path: Path
) -> None:
    _changed_repo(repo.root)
    finding = {**SPLIT, "file": FAST, "existing_code": "return open('x').read()"}
    wire.respond("openai", HangOnSlow({FAST: [finding], SLOW: []}))
    env = {
        **os.environ,
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
    }
    out = tmp_path / "out"
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--report-dir", str(out)]
    child = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args, "--console", "off"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _fast_done_and_slow_asked(
            rf_home / "cache" / "results", wire, stage="review_filter"
        ):
            assert child.poll() is None, "the review ended before it could be cancelled"
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        _, stderr = child.communicate(timeout=60)
        waited = time.monotonic() - interrupted
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    assert waited < 30, "Ctrl-C waited for the request in flight"  # its model timeout is 120 s
    report = json.loads((out / "review-report.json").read_text())
    assert (report["status"], report["exit_code"]) == ("incomplete", 130)
    assert [f["path"] for f in report["findings"]] == [FAST]  # the finished file is kept
    assert "cancelled" in [w["code"] for w in report["warnings"]]
    # Every request sent counts, the one abandoned in flight too (a provider may bill it).
    assert report["usage"]["requests"] == len(wire.requests())
