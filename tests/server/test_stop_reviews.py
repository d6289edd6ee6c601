"""`reviewflow server stop` while reviews run on the managed server, through real processes.

A review waits at the model (its first tool-loop request is held by the scripted model) in the
CLI process (`--no-warm`) or in the warm review process's child: `server stop` refuses, names
it and stops nothing, and the review goes on to its end unharmed; `server stop --force` cancels
it (exit 130, one line, its report incomplete, no model request after), then stops the server.

One home, wire model and (when the test needs one) warm process serve the module.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.local.process import STATE_FILE, read_state
from flows.local.reviews import reviews_dir
from flows.local.settings import prefect_version
from tests.conftest import copy_prepared
from tests.server.conftest import server_pids
from tests.server.stopping import (
    EXIT_BOUND_S,
    Ended,
    Run,
    WarmReviews,
    assert_cancelled,
    children,
    eventually,
)
from tests.wire_server import WireServer

WHERE = {"in the CLI": ("--no-warm",), "in the warm process": ()}


def places(shown: str) -> list[object]:
    """Both places, `shown` in `make test`; the other in the stress matrix (`make
    test-stress`): the refusal is shown in the warm process, the forced stop in the CLI."""
    return [w if w == shown else pytest.param(w, marks=pytest.mark.stress) for w in WHERE]


@pytest.fixture(scope="module")
def reviews(tmp_path_factory: pytest.TempPathFactory, prepared_home: Path) -> Iterator[WarmReviews]:
    runtime = Path(tempfile.mkdtemp(prefix="rf-stopcmd-", dir="/tmp"))
    try:
        with WireServer() as wire:
            reviews = WarmReviews(tmp_path_factory.mktemp("stop-reviews"), wire, runtime)
            copy_prepared(prepared_home, reviews.home)
            yield reviews
            reviews.reset()
            reviews.cli("server", "stop", "--force")
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _held(reviews: WarmReviews, where: str) -> tuple[Run, int]:
    """A review waiting at the model (its first tool-loop request), and the pid of the process
    that runs it (the CLI's, or the warm process's child)."""
    reviews.reset()
    warm = reviews.ensure_warm() if where == "in the warm process" else None
    reviews.reset()
    run = reviews.start(*WHERE[where])
    run.wait_for(reviews.stage("main"), "a main request at the model")
    (record,) = _records(reviews)  # written before the review took the server's lock
    pid = record["pid"]
    assert isinstance(pid, int)
    assert pid in (children(warm) if warm is not None else [run.process.pid])
    return run, pid


def _records(reviews: WarmReviews) -> list[dict[str, object]]:
    folder = reviews_dir(reviews.phome)
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


@pytest.mark.parametrize("where", places("in the warm process"))
def test_stop_refuses_and_the_review_goes_on(reviews: WarmReviews, where: str) -> None:
    run, pid = _held(reviews, where)
    (record,) = _records(reviews)
    assert (record["pid"], record["repository"]) == (pid, str(reviews.repo.root))
    assert oct((reviews_dir(reviews.phome) / f"{pid}.json").stat().st_mode & 0o777) == "0o600"
    assert oct(reviews_dir(reviews.phome).stat().st_mode & 0o777) == "0o700"
    server = read_state(reviews.phome)
    assert server is not None

    refused = reviews.cli("server", "stop")

    assert (refused.returncode, refused.stdout) == (2, "")
    (line,) = refused.stderr.splitlines()
    assert line.startswith("reviewflow: error: not stopping: a review runs on the local Prefect")
    assert f"pid {pid} ({reviews.repo.root}, since " in line
    assert "`reviewflow server stop --force`" in line
    assert server_pids(reviews.root) and read_state(reviews.phome) == server  # nothing stopped
    status = reviews.cli("server", "status")
    assert f"review running: pid {pid} ({reviews.repo.root}, since " in status.stdout

    reviews.reviewer.release.set()
    assert run.process.wait(timeout=240) == 1  # complete, its finding matches `fail_on`
    assert run.stderr == ""  # nothing of Prefect's on the review's terminal
    report = json.loads(run.report_path.read_text())
    assert (report["status"], len(report["findings"])) == ("complete", 1)
    assert _records(reviews) == []  # the record is gone with the review


@pytest.mark.parametrize("where", places("in the CLI"))
def test_stop_force_cancels_the_review_then_stops(reviews: WarmReviews, where: str) -> None:
    run, pid = _held(reviews, where)
    server = read_state(reviews.phome)
    assert server is not None
    warm = reviews.warm_pid()
    stop: list[str] = []

    def force() -> None:
        done = reviews.cli("server", "stop", "--force")
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        stop.extend(done.stdout.splitlines())

    ended: Ended = run.interrupt(signals=(), then=force)

    assert_cancelled(ended, started=True)
    assert ended.seconds < EXIT_BOUND_S  # the stop waits for it: < 5 s, with a generous bound
    assert stop[0].startswith(f"cancelled the review pid {pid} ({reviews.repo.root}, since ")
    assert not stop[0].endswith("it has not ended yet")
    assert f"stopped (pid {server.pid}, Prefect {prefect_version()})" in stop
    if warm is not None:
        assert f"stopped the warm review process (pid {warm})" in stop
    assert eventually(lambda: not server_pids(reviews.root))
    assert not (reviews.phome / STATE_FILE).exists()
    assert _records(reviews) == []


def test_stale_records_are_ignored_and_removed(reviews: WarmReviews) -> None:
    """A record whose pid is gone, or whose pid is now another process (another start time),
    refuses nothing; `server stop` removes it."""
    reviews.reset()
    folder = reviews_dir(reviews.phome)
    folder.mkdir(mode=0o700, exist_ok=True)
    gone = {"pid": 2**22 + 1, "process_start": "1", "repository": "/r", "started_at": 0.0}
    (folder / "gone.json").write_text(json.dumps(gone))
    reused = {**gone, "pid": os.getppid(), "process_start": "1"}  # alive, but started later
    (folder / "reused.json").write_text(json.dumps(reused))
    (folder / "junk.json").write_text("not a record")

    done = reviews.cli("server", "stop")

    assert (done.returncode, done.stderr) == (0, "")
    assert list(folder.iterdir()) == []
