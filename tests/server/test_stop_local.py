"""Ctrl-C, SIGTERM and a second Ctrl-C 50 ms after the first, at points of the life of a review
run in the CLI's own process: with the warm process off (`--no-warm`, the managed server reused
and left running), and in CI (`CI=true`: the review starts its own server and must stop it).
Points: start-up, a cold server start, a home's first-ever database migration, each model
stage, a retry's delay, and while the reports are written. Each ends with exit 130 within the
bound, one line and no traceback, nothing left in the review's session (nor, in CI, its server),
no model request after the signal, and the report (status incomplete) whenever the review had
started. A home whose first migration was cancelled serves its next review.

One wire model and one home per mode serve the module; the cold-start and migration points
take a fresh home each (a copy of the prepared database, or an empty one).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flows.local.api import PREPARING_NOTE
from flows.local.process import DATABASE_FILE, is_ours, read_state, stop_process
from flows.local.settings import prefect_home
from tests.conftest import copy_prepared
from tests.server.conftest import server_pids
from tests.server.stopping import (
    Ended,
    Reviews,
    Run,
    assert_cancelled,
    eventually,
    fifo_drained,
    written_before,
)
from tests.wire_server import WireServer

INT, TERM = signal.SIGINT, signal.SIGTERM
KINDS = {"SIGINT": (INT,), "SIGTERM": (TERM,), "SIGINT twice": (INT, INT)}
MODES = ("no-warm", "ci")
# Every process start here costs seconds (Prefect's import; in CI a server's start too), so
# past start-up the points take the kinds in turn, over the modes (`bench/time_to_exit.py`
# sends every kind at every point).
# In `make test`, two stages with the warm process off (every stage is shown in the warm
# process's child, `test_stop_warm.py`: the same flow, cancelled the same way), and in CI (a
# server of the review's own, started and stopped by it: seconds more each) a cold start and
# the reports' point; the other points are in the stress matrix (`make test-stress`; CI runs
# a slice of it per commit).
ROTATED = [("no-warm", "SIGINT"), ("ci", "SIGTERM"), ("no-warm", "SIGINT twice")]
STRESS = pytest.mark.stress
STAGE_CASES = [
    ("no-warm", "plan", "SIGTERM"),
    ("no-warm", "main", "SIGINT twice"),
    pytest.param("no-warm", "relocate", "SIGINT", marks=STRESS),
    pytest.param("no-warm", "filter", "SIGTERM", marks=STRESS),
    pytest.param("no-warm", "localize", "SIGINT twice", marks=STRESS),
    pytest.param("ci", "main", "SIGINT", marks=STRESS),
    pytest.param("ci", "localize", "SIGTERM", marks=STRESS),
]
LATE_CASES = [("no-warm", "SIGTERM"), pytest.param("ci", "SIGINT twice", marks=STRESS)]


def started_unless_twice(kind: str) -> bool | None:
    """A second signal ends the process at once: the report is there only if the first one's
    cancel had written it by then (else none at all, never a broken one)."""
    return None if kind == "SIGINT twice" else True


class LocalReviews(Reviews):
    """Reviews run in the CLI's process: `mode` no-warm (in the module's home, whose server is
    reused) or ci (in a home of its own, each review starting and stopping its server)."""

    def __init__(self, root: Path, wire: WireServer, runtime: Path, template: Path) -> None:
        super().__init__(root, wire, runtime)
        self.template = template
        self.ci_home = root / "home-ci"
        copy_prepared(template, self.home)
        copy_prepared(template, self.ci_home)
        self.homes = 0

    def fresh_home(self, *, prepared: bool) -> Path:
        """A home with the prepared database and no server (or an empty one)."""
        self.homes += 1
        home = self.root / f"home-{self.homes}"
        if prepared:
            copy_prepared(self.template, home)
        else:
            home.mkdir()
        return home

    def start_in(self, mode: str, *flags: str, home: Path | None = None) -> Run:
        where = home or (self.ci_home if mode == "ci" else self.home)
        if mode == "ci":
            return self.start(*flags, REVIEWFLOW_HOME=str(where), CI="true")
        return self.start("--no-warm", *flags, REVIEWFLOW_HOME=str(where))


@pytest.fixture(scope="module")
def reviews(
    tmp_path_factory: pytest.TempPathFactory, prepared_home: Path
) -> Iterator[LocalReviews]:
    runtime = Path(tempfile.mkdtemp(prefix="rf-stop-", dir="/tmp"))
    root = tmp_path_factory.mktemp("stop-local")
    try:
        with WireServer() as wire:
            yield LocalReviews(root, wire, runtime, prepared_home)
    finally:
        for pid in server_pids(root):  # the no-warm home's server, and any a test left
            with contextlib.suppress(ProcessLookupError):
                signal_and_wait(pid)
        shutil.rmtree(runtime, ignore_errors=True)


def signal_and_wait(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    eventually(lambda: not Path(f"/proc/{pid}").exists(), within=10)


@pytest.fixture
def fresh(reviews: LocalReviews) -> Iterator[LocalReviews]:
    reviews.reset()
    yield reviews
    reviews.reset()


def check_left(reviews: LocalReviews, run: Run, mode: str, home: Path | None = None) -> None:
    """Nothing left in the review's session; in CI, its server gone too; outside CI, only the
    home's recorded (reusable) server may still run."""
    assert not run.session(), f"left in the review's session: {run.session()}"
    where = home or (reviews.ci_home if mode == "ci" else reviews.home)
    phome = prefect_home(where)
    if mode == "ci":
        assert eventually(lambda: not server_pids(phome), within=60), "CI left its server"
        return
    state = read_state(phome)
    recorded = {state.pid} if state is not None and is_ours(state) else set()
    assert set(server_pids(phome)) <= recorded, "a server the home does not record was left"


def cancelled(
    reviews: LocalReviews,
    run: Run,
    mode: str,
    kind: str,
    *,
    started: bool | None,
    home: Path | None = None,
    note: str = "",
) -> Ended:
    ended = run.interrupt(KINDS[kind])
    assert "Traceback" not in ended.stderr, ended.stderr
    assert_cancelled(ended, started=started, note=note)
    check_left(reviews, run, mode, home)
    return ended


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_at_start_up(fresh: LocalReviews, mode: str, kind: str) -> None:
    run = fresh.start_in(mode)
    run.wait_for(run.handlers_in_place, "the CLI's handlers")
    cancelled(fresh, run, mode, kind, started=None)


def booting(home: Path) -> Callable[[], bool]:
    """Until the home's server has been spawned (recorded, alive) and does not answer yet."""

    def check() -> bool:
        state = read_state(prefect_home(home))
        return state is not None and not state.prefect_version and is_ours(state)

    return check


@pytest.mark.parametrize(("mode", "kind"), ROTATED)
def test_during_a_cold_server_start(fresh: LocalReviews, mode: str, kind: str) -> None:
    home = fresh.fresh_home(prepared=True)
    run = fresh.start_in(mode, home=home)
    try:
        run.wait_for(booting(home), "the server's spawn")
        cancelled(fresh, run, mode, kind, started=None, home=home)
    finally:
        state = read_state(prefect_home(home))
        if state is not None:
            stop_process(state)


def migrating(run: Run, home: Path) -> Callable[[], bool]:
    """Until the note is out and the server has begun its home's first migration."""
    database = prefect_home(home) / DATABASE_FILE
    return lambda: PREPARING_NOTE in run.stderr and database.exists()


@pytest.mark.parametrize(("mode", "kind"), [("no-warm", "SIGINT")])  # a first start: ~15 s
def test_during_the_first_migration(fresh: LocalReviews, mode: str, kind: str) -> None:
    """The next review in that home works: the database is whole. (`bench/time_to_exit.py`
    sends every kind at this point.)"""
    home = fresh.fresh_home(prepared=False)
    run = fresh.start_in(mode, home=home)
    try:
        run.wait_for(migrating(run, home), "the first migration")
        started = started_unless_twice(kind)
        cancelled(fresh, run, mode, kind, started=started, home=home, note=PREPARING_NOTE)
        fresh.reset()
        extra = {"CI": "true"} if mode == "ci" else {}
        flags = () if mode == "ci" else ("--no-warm",)
        done = fresh.review(*flags, "--no-cache", REVIEWFLOW_HOME=str(home), **extra)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
    finally:
        state = read_state(prefect_home(home))
        if state is not None:
            stop_process(state)


@pytest.mark.parametrize(("mode", "stage", "kind"), STAGE_CASES)
def test_in_a_model_stage(fresh: LocalReviews, mode: str, stage: str, kind: str) -> None:
    run = fresh.start_in(mode, *(["--language", "de"] if stage == "localize" else []))
    run.wait_for(fresh.stage(stage), f"a {stage} request at the model")
    cancelled(fresh, run, mode, kind, started=started_unless_twice(kind))


@pytest.mark.parametrize(("mode", "kind"), LATE_CASES)
def test_in_a_retrys_delay(fresh: LocalReviews, mode: str, kind: str) -> None:
    """A 500, retried by Prefect 2 s later: the retry is never sent."""
    fresh.reviewer.fail_once = True
    left = fresh.wire.in_flight  # hanging requests of earlier tests, abandoned by their review
    run = fresh.start_in(mode)
    run.wait_for(lambda: fresh.reviewer.failed.is_set() and fresh.wire.in_flight <= left, "the 500")
    cancelled(fresh, run, mode, kind, started=started_unless_twice(kind))


@pytest.mark.parametrize(("mode", "kind"), [("no-warm", "SIGINT twice"), ("ci", "SIGTERM")])
def test_while_the_reports_are_written(fresh: LocalReviews, mode: str, kind: str) -> None:
    """The Markdown report is a FIFO: the JSON one is written, the Markdown one waits for a
    reader; the reports are then written again as a cancelled review's."""
    fifo = fresh.root / f"report-{fresh.runs + 1}.md"
    os.mkfifo(fifo, 0o600)
    run = fresh.start_in(mode, "--markdown", str(fifo))
    run.wait_for(run.report_path.exists, "the JSON report")
    with contextlib.ExitStack() as draining:  # the Markdown report is read after the signal
        ended = run.interrupt(KINDS[kind], then=lambda: draining.enter_context(fifo_drained(fifo)))
    assert "Traceback" not in ended.stderr, ended.stderr
    if kind == "SIGINT twice":
        written_before(ended)
    assert_cancelled(ended, started=started_unless_twice(kind))
    check_left(fresh, run, mode)
