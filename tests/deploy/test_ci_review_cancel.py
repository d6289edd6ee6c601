"""A deployed `ci-review` run cancelled where the CLI would exit 130 ends Cancelled: its reason
is the state's message, its summary artifact says exit code 130, and the API holds the run as
Cancelled (not Completed, not Failed, and no engine error reading its result).

The cancel comes as a signal to this process while the model holds the review's request: the
handlers are `reviewflow.cancel`'s, as in a CLI or a worker's flow-run process."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefect.exceptions import CancelledRun

from flows.deployed import ci_review
from reviewflow.cancel import EXIT_CODE, Canceller
from reviewflow.report.gate import summary_key
from tests.deploy.readback import ENGINE_TYPE_ERROR, artifacts, log_lines, read_back
from tests.deploy.scenario import RISKY, origin, use_model
from tests.flows.reviewer import ScriptedReviewer
from tests.wire_server import Delay, RecordedRequest, Reply, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")


class SignalOnRequest(ScriptedReviewer):
    """Signals this process (SIGINT, as Ctrl-C) when the first request arrives, and holds
    every request until `release` is set."""

    def __init__(self) -> None:
        super().__init__({"app/settings.py": []})
        self.release = threading.Event()
        self.signalled = False

    def __call__(self, record: RecordedRequest) -> Reply:
        if not self.signalled:
            self.signalled = True
            os.kill(os.getpid(), signal.SIGINT)
        self.release.wait(60)
        return Delay(0)


@pytest.fixture
def handlers(canceller: Canceller, monkeypatch: pytest.MonkeyPatch) -> Iterator[Canceller]:
    """`canceller` handling this process's SIGINT and SIGTERM (restored after the test)."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    canceller.install()
    try:
        yield canceller
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_a_cancelled_review_ends_the_run_cancelled(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch, handlers: Canceller
) -> None:
    use_model(monkeypatch, wire)
    repo, _ = origin(tmp_path)
    repo.write("app/settings.py", RISKY)
    head = repo.commit("read settings")
    reviewer = SignalOnRequest()
    wire.respond("openai", reviewer)
    try:
        state = ci_review(str(repo.root), commit=head, return_state=True)
    finally:
        reviewer.release.set()

    assert reviewer.signalled and handlers.requested()
    assert state.is_cancelled(), (state.type, state.message)
    assert str(state.message).startswith("review cancelled: 0 of 1 file finished")
    run_id = state.state_details.flow_run_id
    [summary] = artifacts(run_id)[summary_key(str(repo.root))]
    assert summary["exit_code"] == EXIT_CODE and summary["status"] == "incomplete"
    stored = read_back(run_id)
    assert stored.is_cancelled() and stored.message == state.message
    with pytest.raises(CancelledRun, match=re.escape(state.message)):
        stored.result()  # as the client reads a cancelled run: its reason
    assert not any(ENGINE_TYPE_ERROR in line for line in log_lines(run_id))
    assert len(wire.requests()) == 1  # nothing sent after the signal
