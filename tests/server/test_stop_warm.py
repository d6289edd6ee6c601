"""Ctrl-C, SIGTERM and a second Ctrl-C 50 ms after the first, at points of the life of a review
handed over to the warm review process: before the hand-over, before the child took it, while
it reads the change, in each model stage, in a retry's delay and while its reports are written.
Each ends with exit 130 within the bound, one line and no traceback, no child left, no model
request after the signal, and the report (status incomplete) whenever the review had started
(unless a second signal ended it first: that one means now).

One home, server, warm process and wire model serve the module (`setup.ensure_warm`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import copy_prepared
from tests.server.stopping import (
    WarmReviews,
    assert_cancelled,
    children,
    connected_unix_socket,
    eventually,
    fifo_drained,
    reading_a_pipe,
    written_before,
)
from tests.wire_server import WireServer

INT, TERM = signal.SIGINT, signal.SIGTERM
KINDS = {"SIGINT": (INT,), "SIGTERM": (TERM,), "SIGINT twice": (INT, INT)}
# A review that had started writes its report as cancelled, unless a second signal ends it
# first: that one means now (either way, then).
STARTED = {"SIGINT": True, "SIGTERM": True, "SIGINT twice": None}


def kinds(point: int) -> list[object]:
    """Every kind at a point: one (in turn over the points) in the default run, the others
    in the stress matrix (`make test-stress`; CI runs a slice of it per commit)."""
    names = list(KINDS)
    return [
        name if i == point % len(names) else pytest.param(name, marks=pytest.mark.stress)
        for i, name in enumerate(names)
    ]


@pytest.fixture(scope="module")
def reviews(tmp_path_factory: pytest.TempPathFactory, prepared_home: Path) -> Iterator[WarmReviews]:
    runtime = Path(tempfile.mkdtemp(prefix="rf-stop-", dir="/tmp"))
    try:
        with WireServer() as wire:
            reviews = WarmReviews(tmp_path_factory.mktemp("stop-warm"), wire, runtime)
            copy_prepared(prepared_home, reviews.home)
            yield reviews
            reviews.reset()
            subprocess.run(
                [sys.executable, "-m", "flows.cli", "server", "stop"], env=reviews.env(),
                capture_output=True, check=False,
            )  # fmt: skip
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def warm_pid(reviews: WarmReviews) -> Iterator[int]:
    pid = reviews.ensure_warm()
    reviews.reset()
    yield pid
    reviews.reset()
    assert eventually(lambda: not children(pid)), "a review child was left"
    assert reviews.warm_pid() == pid  # the warm process itself goes on


@pytest.mark.parametrize("kind", kinds(0))
def test_at_start_up(reviews: WarmReviews, warm_pid: int, kind: str) -> None:
    run = reviews.start()
    run.wait_for(run.handlers_in_place, "the CLI's handlers")
    assert_cancelled(run.interrupt(KINDS[kind]), started=None)


@pytest.mark.parametrize("kind", kinds(1))
def test_before_the_child_took_it(reviews: WarmReviews, warm_pid: int, kind: str) -> None:
    """The warm process is frozen: the CLI has connected and waits for `taken`."""
    os.kill(warm_pid, signal.SIGSTOP)
    try:
        run = reviews.start()
        run.wait_for(lambda: connected_unix_socket(run.process.pid), "the hand-over")
        ended = run.interrupt(KINDS[kind], then=lambda: os.kill(warm_pid, signal.SIGCONT))
    finally:
        os.kill(warm_pid, signal.SIGCONT)
    assert_cancelled(ended, started=False)


@pytest.mark.parametrize("kind", kinds(2))
def test_while_the_child_reads_the_change(reviews: WarmReviews, warm_pid: int, kind: str) -> None:
    run = reviews.start("--diff", "-", stdin=subprocess.PIPE)
    try:
        run.wait_for(
            lambda: any(reading_a_pipe(child) for child in children(warm_pid)), "reading stdin"
        )
        ended = run.interrupt(KINDS[kind])
    finally:
        assert run.process.stdin is not None
        run.process.stdin.close()
    assert_cancelled(ended, started=False)


@pytest.mark.parametrize("kind", kinds(3))
@pytest.mark.parametrize("stage", ["plan", "main", "relocate", "filter", "localize"])
def test_in_a_model_stage(reviews: WarmReviews, warm_pid: int, stage: str, kind: str) -> None:
    run = reviews.start(*(["--language", "de"] if stage == "localize" else []))
    run.wait_for(reviews.stage(stage), f"a {stage} request at the model")
    assert_cancelled(run.interrupt(KINDS[kind]), started=STARTED[kind])


@pytest.mark.parametrize("kind", kinds(4))
def test_in_a_retrys_delay(reviews: WarmReviews, warm_pid: int, kind: str) -> None:
    """A 500, retried by Prefect 2 s later: the retry is never sent."""
    reviews.reviewer.fail_once = True
    left = reviews.wire.in_flight  # hanging requests of earlier tests, abandoned by their review
    run = reviews.start()
    run.wait_for(
        lambda: reviews.reviewer.failed.is_set() and reviews.wire.in_flight <= left, "the 500"
    )
    assert_cancelled(run.interrupt(KINDS[kind]), started=STARTED[kind])


@pytest.mark.parametrize("kind", kinds(5))
def test_while_the_reports_are_written(reviews: WarmReviews, warm_pid: int, kind: str) -> None:
    """The Markdown report is a FIFO: the JSON one is written, the Markdown one waits for a
    reader; the reports are then written again as a cancelled review's."""
    fifo = reviews.root / f"report-{reviews.runs + 1}.md"
    os.mkfifo(fifo, 0o600)
    run = reviews.start("--markdown", str(fifo))
    run.wait_for(run.report_path.exists, "the JSON report")
    with contextlib.ExitStack() as draining:  # the Markdown report is read after the signal
        ended = run.interrupt(KINDS[kind], then=lambda: draining.enter_context(fifo_drained(fifo)))
    if ended.code == 1 and not ended.stderr:
        # The signal reaches the child through the CLI: under load the review may be reported
        # (a cancel no longer cuts it) before it arrives. Then it ended as a whole review does.
        assert ended.report is not None and ended.report["status"] == "complete"
        assert ended.requests_after == 0
        return
    if kind == "SIGINT twice":
        written_before(ended)
    assert_cancelled(ended, started=STARTED[kind])
