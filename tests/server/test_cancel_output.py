"""A cancelled review run in the CLI's own process prints its console report before anything
that may wait after it.

The CLI used to start the warm process for the next review before printing; starting one
stops a stale warm process first, waiting up to 10 s for it. A cancel's watchdog ends the
process `GRACE_S` (4 s) after the signal, so a review cancelled while a stale warm process was
slow to stop printed only `reviewflow: cancelled`, its reports written. Here a stale warm
process that ignores SIGTERM is recorded while the review runs: that wait happens at once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.local.settings import prefect_home
from flows.local.warm.sockets import install_key
from flows.local.warm.state import WarmState, read_warm, write_warm
from tests.conftest import copy_prepared
from tests.flows.test_resume import FAST, ROOT, SLOW, HangOnSlow, _changed_repo
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

# A process that the warm process's identity check takes for one (its instance id is on its
# command line) and that ignores SIGTERM, as a warm process busy importing would for a while.
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"


@pytest.fixture
def home(tmp_path: Path, prepared_home: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    copy_prepared(prepared_home, home)  # its server starts cold, not first-ever
    yield home
    os.environ.update(REVIEWFLOW_HOME=str(home))
    main(["server", "stop"])


@pytest.fixture
def runtime() -> Iterator[Path]:
    """The hand-over sockets' directory: short, outside pytest's temporary tree."""
    path = Path(tempfile.mkdtemp(prefix="rf-run-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _stale_warm(home: Path, runtime: Path) -> subprocess.Popen[bytes]:
    """A warm process recorded for another server, slow to stop."""
    instance = "reviewflow-warm-stale"
    process = subprocess.Popen([sys.executable, "-c", STUBBORN, instance])
    state = WarmState(
        process.pid, instance, "another-server", "3", install_key(), sys.executable,
        str(runtime / "stale.sock"), str(home / "stale.log"), time.time(),
    )  # fmt: skip
    write_warm(prefect_home(home), state)
    return process


def test_a_cancel_prints_the_console_report_before_starting_a_warm_process(
    repo: GitRepo, wire: WireServer, home: Path, runtime: Path, tmp_path: Path
) -> None:
    _changed_repo(repo.root)
    wire.respond("openai", HangOnSlow({FAST: [], SLOW: []}))
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # the managed server
    env.update(
        REVIEWFLOW_HOME=str(home),
        REVIEWFLOW_MODEL_NAME="test-model",
        REVIEWFLOW_MODEL_ENDPOINT=wire.base_url("openai"),
        REVIEWFLOW_MODEL_API_KEY=TEST_KEY,
        XDG_RUNTIME_DIR=str(runtime),
    )
    out = tmp_path / "out"
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--report-dir", str(out)]
    cli = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args, "--console", "summary", "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stale = None
    try:
        deadline = time.monotonic() + 120
        while not any(SLOW in str(request.body) for request in wire.requests()):
            assert cli.poll() is None, "the review ended before it reached the model"
            assert time.monotonic() < deadline, "the review never reached the model"
            time.sleep(0.1)
        stale = _stale_warm(home, runtime)  # after the CLI looked for a warm process to use
        cli.send_signal(signal.SIGINT)
        stdout, stderr = cli.communicate(timeout=60)
        left = read_warm(prefect_home(home), install_key())
    finally:
        cli.kill()
        if stale is not None:
            stale.kill()
            stale.wait()
    assert cli.returncode == 130, stderr
    assert "incomplete, exit code 130" in stdout, stderr
    assert f"reviewflow: cancelled (report: {out / 'review-report.json'})" in stderr
    assert stderr.count("reviewflow: cancelled") == 1
    # Nor was a warm process started after the cancel (the stale one was not even stopped).
    assert left is not None and left.instance == "reviewflow-warm-stale"
