"""A stop on Dask is a stop: Ctrl-C or SIGTERM during `--task-runner dask`, through real CLI
processes, on a real `dask scheduler` with two `dask worker` processes on loopback (which outlive
the review, as a shared cluster's do) and on the LocalCluster a review starts itself.

The model holds every request until the test lets it go, so the signal comes with requests in
flight on the workers. The review ends as on threads: exit 130, the partial report, the flow run
Cancelled; and once the held requests are answered, no worker sends another (a tool loop that
would go on finds its pool stopped, the stages not started yet are cancelled). Read back from
the Prefect API, the task runs in flight on the workers (the requests and their tool loops) end
Cancelled, none Failed or Completed after the signal; the stages Dask cancelled before they
started have no task run at all. (A model request is no task run of its own since issue 40: the
request held ends its stage's task run Cancelled.) On threads (the test this one matches) they
end so too."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conftest import copy_prepared
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.server.stopping import Reviews, WarmReviews, assert_cancelled, children, eventually
from tests.wire_server import Delay, RecordedRequest, Reply, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

FILES = [f"app/m{i}.py" for i in range(8)]
# the task runs that send model requests (each request sent inside its stage's task run): a
# cancel must end those in flight Cancelled, on a worker as on threads
MODEL_STAGES = {"plan", "tool_loop", "relocate", "review_filter", "verify", "localize"}
UNFINISHED = {"SCHEDULED", "PENDING", "RUNNING"}


class HoldingReviewer(ScriptedReviewer):
    """`ScriptedReviewer` whose every request waits until `release` is set."""

    def __init__(self) -> None:
        super().__init__({path: [] for path in FILES})
        self.release = threading.Event()
        self.held = 0
        self._count = threading.Lock()

    def __call__(self, record: RecordedRequest) -> Reply:
        with self._count:
            self.held += 1
        if not self.release.wait(120):
            return Delay(0)
        return super().__call__(record)


class Cluster:
    """`dask scheduler` and two single-threaded `dask worker` processes on loopback, the
    workers with the model key in their own environment."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.base, self.env = base, env
        self.processes: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def start(self) -> None:
        file = self.base / "scheduler.json"
        quiet = ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
        self._spawn("scheduler", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                    "--port", "0", *quiet, "--scheduler-file", str(file))  # fmt: skip
        assert eventually(lambda: file.exists() and file.read_text().endswith("}"), 120), (
            self.logs()
        )
        self.address = json.loads(file.read_text())["address"]
        for name in ("worker-1", "worker-2"):
            (self.base / name).mkdir()
            self._spawn(name, "distributed.cli.dask_worker", self.address, "--name", name,
                        "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1", *quiet,
                        "--local-directory", str(self.base / name))  # fmt: skip

    def _spawn(self, name: str, module: str, *args: str) -> None:
        log = (self.base / f"{name}.log").open("wb")
        command = [sys.executable, "-m", module, *args]
        self.processes.append(
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        )

    def stop(self) -> None:
        print(self.logs())  # shown when the test fails
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in self.base.glob("*.log"))


@pytest.fixture
def reviews(tmp_path: Path, wire: WireServer) -> Iterator[Reviews]:
    runtime = Path(tempfile.mkdtemp(prefix="rf-dask-stop-", dir="/tmp"))
    reviews = Reviews(tmp_path, wire, runtime)
    _holding(reviews)
    try:
        yield reviews
    finally:
        reviews.reviewer.release.set()
        shutil.rmtree(runtime, ignore_errors=True)


def _holding(reviews: Reviews) -> HoldingReviewer:
    """`reviews` of eight changed files, each a tool loop of its own, by a `HoldingReviewer`."""
    repo = GitRepo.init(reviews.root / "files")
    for path in FILES:
        repo.write(path, "x = 1\n")
    repo.commit("base")
    for index, path in enumerate(FILES):
        repo.write(path, f"def f{index}(value):\n    return value + {index}\n")
    repo.commit("change")
    reviewer = HoldingReviewer()
    reviews.repo, reviews.reviewer = repo, reviewer  # type: ignore[assignment]
    reviews.wire.respond("openai", reviewer)
    return reviewer


@pytest.fixture
def cluster(reviews: Reviews) -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="reviewflow-stop-cluster-"))
    env = {**reviews.env(), "PREFECT_LOGGING_LEVEL": "WARNING"}
    cluster = Cluster(base, env)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _flow_run_state(repo: Path) -> str | None:
    """The state of the review flow run that reviewed `repo` (on the test's Prefect API)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async def read() -> str | None:
        async with get_client() as client:
            flows = FlowFilter(name=FlowFilterName(any_=["review"]))
            for run in await client.read_flow_runs(flow_filter=flows):
                if run.parameters.get("request", {}).get("repo") == str(repo):
                    return run.state.type.value if run.state else None
        return None

    return asyncio.run(read())


class TaskRunState(NamedTuple):
    stage: str  # the task's name
    state: str  # its state's type
    message: str
    at: float  # when it entered that state (a timestamp)


def _task_runs(repo: Path) -> list[TaskRunState]:
    """The task runs of the review flow run that reviewed `repo`, read from the Prefect API
    (those the workers ran too: they report to it themselves)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    async def read() -> list[TaskRunState]:
        async with get_client() as client:
            reviews = await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["review"])),
                sort=FlowRunSort.EXPECTED_START_TIME_DESC,
                limit=20,  # the newest: the shared test API holds every test's
            )
            mine = FlowRunFilterId(any_=[run.id for run in reviews if _reviewed(run, repo)])
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=mine))
        return [
            TaskRunState(
                run.name.rsplit("-", 1)[0],
                run.state.type.value,
                run.state.message or "",
                run.state.timestamp.timestamp(),
            )
            for run in runs
            if run.state is not None
        ]

    return asyncio.run(read())


def _reviewed(run: Any, repo: Path) -> bool:
    return bool(run.parameters.get("request", {}).get("repo") == str(repo))


def _model_runs_cancelled(repo: Path, signalled: float, in_flight: int) -> list[TaskRunState]:
    """The model task runs of the review of `repo`, once none is left unfinished (a worker's
    states reach the API a moment after): none Failed, none Completed after the signal (sent at
    `signalled`), and the stages of the `in_flight` requests held then Cancelled by it."""
    runs: list[TaskRunState] = []

    def settled() -> bool:
        runs[:] = [run for run in _task_runs(repo) if run.stage in MODEL_STAGES]
        loops = [run for run in runs if run.stage == "tool_loop"]
        return len(loops) >= in_flight and not any(run.state in UNFINISHED for run in runs)

    assert eventually(settled, within=60), runs
    assert not [run for run in runs if run.state == "FAILED"], runs
    assert not [run for run in runs if run.state == "COMPLETED" and run.at >= signalled], runs
    cancelled = [run for run in runs if run.state == "CANCELLED"]
    assert all("the review was cancelled" in run.message for run in cancelled), cancelled
    loops = [run for run in cancelled if run.stage == "tool_loop"]
    assert len(loops) >= in_flight, runs
    return runs


def _processing(address: str) -> int:
    """The tasks the cluster's workers are running now."""
    from distributed import Client

    with Client(address, timeout="30s") as client:
        return sum(len(keys) for keys in client.processing().values())


# The rest of the matrix, in `make test-stress` (CI runs a slice of it per commit): SIGTERM on a
# scheduler's workers (SIGINT is here; both reach the runner as one cancel) and one SIGINT on
# the review's own LocalCluster (the warm process's test below sends that one, in its child).
STRESS = pytest.mark.stress


@pytest.mark.parametrize(
    "sig",
    [signal.SIGINT, pytest.param(signal.SIGTERM, marks=STRESS)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_stop_on_a_dask_cluster_stops_its_workers(
    reviews: Reviews, cluster: Cluster, sig: int
) -> None:
    reviewer: Any = reviews.reviewer
    run = reviews.start("--no-warm", "--task-runner", "dask", "--dask-address", cluster.address)
    run.wait_for(lambda: reviewer.held >= 2, "a request held on each worker")
    before = len(reviews.wire.requests())

    signalled = time.time()
    ended = run.interrupt((sig,))
    assert_cancelled(ended, started=True)
    reviewer.release.set()  # the requests in flight are answered: the workers would go on
    assert eventually(
        lambda: reviews.wire.in_flight == 0 and _processing(cluster.address) == 0, within=60
    ), cluster.logs()
    assert len(reviews.wire.requests()) == before, "a worker sent a request after the signal"
    assert _flow_run_state(reviews.repo.root) == "CANCELLED"
    # the stages in flight on the workers end Cancelled; those not started never start there
    runs = _model_runs_cancelled(reviews.repo.root, signalled, in_flight=2)
    assert sorted(run.stage for run in runs) == ["tool_loop"] * 2, runs


def test_a_stop_on_threads_ends_the_stages_cancelled(reviews: Reviews) -> None:
    """What a stop on Dask matches: on threads too, the tool loops in flight (their requests
    held) end Cancelled, and so do those that start after it (they send nothing)."""
    reviewer: Any = reviews.reviewer
    run = reviews.start("--no-warm", "--concurrency", "2")
    run.wait_for(lambda: reviewer.held >= 2, "two requests held")

    signalled = time.time()
    assert_cancelled(run.interrupt((signal.SIGINT,)), started=True)
    runs = _model_runs_cancelled(reviews.repo.root, signalled, in_flight=2)
    assert {run.stage for run in runs} == {"tool_loop"}, runs


@pytest.mark.parametrize(
    "twice", [pytest.param(False, marks=STRESS), True], ids=["SIGINT", "SIGINT twice"]
)
def test_a_stop_on_a_local_cluster(reviews: Reviews, twice: bool) -> None:
    """The review's own LocalCluster: its workers, busy with requests in flight, end with it
    (a graceful close would wait for those requests); a second signal ends it all at once,
    with nothing of Dask's or multiprocessing's on stderr."""
    reviewer: Any = reviews.reviewer
    # two workers of one thread each: two requests held are all the review has in flight
    run = reviews.start("--no-warm", "--task-runner", "dask", "--concurrency", "2")
    run.wait_for(lambda: reviewer.held >= 2, "a request held on each worker")

    ended = run.interrupt((signal.SIGINT, signal.SIGINT) if twice else (signal.SIGINT,))
    assert_cancelled(ended, started=None if twice else True)  # not the watchdog's exit
    if not twice:
        assert _flow_run_state(reviews.repo.root) == "CANCELLED"
    assert not run.session(), "a worker process outlived the review"


@pytest.mark.stress  # ~25 s: the warm child's stop; make test keeps the CLI's on Dask
def test_a_stop_on_a_local_cluster_in_the_warm_process(
    tmp_path: Path, prepared_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review handed to the warm process: its child's LocalCluster stops the same way, and
    no process of it is left under the warm process."""
    monkeypatch.delenv("PREFECT_API_URL")  # the managed server: a review may go warm
    runtime = Path(tempfile.mkdtemp(prefix="rf-dask-warm-", dir="/tmp"))
    with WireServer() as wire:
        reviews = WarmReviews(tmp_path, wire, runtime)
        copy_prepared(prepared_home, reviews.home)
        try:
            warm = reviews.ensure_warm()
            reviews.reset()
            reviewer = _holding(reviews)
            run = reviews.start("--task-runner", "dask", "--concurrency", "2")
            run.wait_for(lambda: reviewer.held >= 2, "a request held on each worker")

            assert_cancelled(run.interrupt((signal.SIGINT,)), started=True)
            assert eventually(lambda: not children(warm)), "a process of the review was left"
        finally:
            reviews.reviewer.release.set()
            subprocess.run(
                [sys.executable, "-m", "flows.cli", "server", "stop", "--force"],
                env=reviews.env(), capture_output=True, check=False,
            )  # fmt: skip
            shutil.rmtree(runtime, ignore_errors=True)
