"""Recovery of the team server (deployments/server/, issue 40) after machines die mid-review, timed.

The team server as tests/teamserver starts it (a real PostgreSQL and Redis on loopback, the API
server and its services by deployments/server/start.sh, `start.sh setup`'s automation), the
`reviewflow` pool and prefect.yaml's deployments (the nightly one run at a time), two process
workers. The nightly reviews a `bench/synth.py` repository's release branch against
`bench/scale.py`'s scripted model (its own process, answering after `--latency`). Once the model
has answered `--kill-after` requests, the API server, the services, Redis and the worker running
the nightly are SIGKILLed at once; they are started again at once (Redis first) and the nightly
is triggered again, as the next night's schedule or an operator would. Nobody marks the dead run
Crashed: the server's own automation does, its heartbeats having stopped.

Timed from the kill: until the API answers /health again, until the dead run is Crashed (by the
automation: its state message is checked), until the re-run has completed (it waits for the dead
run's slot: the nightly's limit is 1). Counted: the model requests the first run paid before the
kill, those the re-run paid, and the requests of the same review uninterrupted (a third run on a
fresh branch of the same commits, with `--no-cache`'s equivalent: a fresh home's cache).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from uuid import UUID

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
import scale  # noqa: E402
from synth import make_repo  # noqa: E402

from tests.deploy.test_worker import (  # noqa: E402
    PREFECT,
    REVIEWFLOW,
    _base_env,
    _descendants,
    _start,
    _stop,
    _wait_healthy,
)
from tests.teamserver.services import (  # noqa: E402
    START,
    Datastores,
    find_binaries,
    free_port,
    server_commands,
)

NIGHTLY = "release-review/nightly-release-review"
BRANCH = "release/bench"
WORKERS = ("worker-1", "worker-2")
KILLED = ("server", "services", "redis")  # and the worker running the nightly


@dataclass
class Recovery:
    files: int
    latency: float
    within: int
    first_requests: int  # paid by the first run before the kill
    rerun_requests: int
    full_requests: int  # the same review, uninterrupted
    to_health: float  # seconds from the kill
    to_crashed: float
    to_rerun_done: float
    crashed_message: str
    rerun_exit: int
    head_moved_to_head: bool
    load: float

    def __str__(self) -> str:
        return (
            f"{self.files} files, model latency {self.latency:g} s, heartbeat window "
            f"{self.within} s, load {self.load:.1f}\n"
            f"  from the kill: API answers {self.to_health:.1f} s, dead run Crashed by the server "
            f"{self.to_crashed:.1f} s ('{self.crashed_message}'), re-run completed "
            f"{self.to_rerun_done:.1f} s (exit {self.rerun_exit})\n"
            f"  requests: first run {self.first_requests} before the kill, re-run "
            f"{self.rerun_requests}; uninterrupted {self.full_requests} "
            f"(re-run paid {self.rerun_requests / max(self.full_requests, 1):.0%} of a whole "
            f"review); branch head at the new head: {self.head_moved_to_head}"
        )


class Team:
    """The processes by name, each started and killed as tests/teamserver's stack does."""

    def __init__(self, work: Path, model: scale.Model, within: int) -> None:
        bins = find_binaries()
        if isinstance(bins, str):
            raise SystemExit(f"recovery: {bins}")
        self.work, self.logs = work, work / "logs"
        self.logs.mkdir()
        self.stores = Datastores.create(bins)
        port = free_port()
        self.api = f"http://127.0.0.1:{port}/api"
        self.env = _base_env(work, self.api)
        (work / "prefect").mkdir(mode=0o700)
        self.commands = server_commands(self.stores, self.env, port)
        worker_env = {**self.env, "PREFECT_WORKER_QUERY_SECONDS": "1"}
        worker_env.update(REVIEWFLOW_MODEL_NAME="bench-model", REVIEWFLOW_MODEL_ENDPOINT=model.url)
        worker_env["REVIEWFLOW_MODEL_API_KEY"] = _test_key()
        for name in WORKERS:
            args = [PREFECT, "worker", "start", "--pool", "reviewflow", "--name", name]
            self.commands[name] = ([*args, "--limit", "1"], worker_env)
        self.within = within
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        args, env = self.commands[name]
        self.procs[name] = _start(args, env, self.logs / f"{name}.log")
        if name == "postgres":
            self.stores.wait_postgres()
        elif name == "redis":
            self.stores.wait_redis()
        elif name == "server":
            _wait_healthy(self.api, self.procs[name], self.logs / "server.log")

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        for pid in [proc.pid, *_descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        proc.wait()

    def setup(self) -> None:
        env = {**self.commands["server"][1], "REVIEWFLOW_HEARTBEAT_WITHIN": str(self.within)}
        done = subprocess.run(["sh", str(START), "setup"], env=env, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"recovery: start.sh setup failed: {done.stderr}")

    def deploy(self, repository: str) -> None:
        prefect = [PREFECT, "work-pool", "create", "reviewflow", "--type", "process"]
        subprocess.run(prefect, env=self.env, capture_output=True, check=True, timeout=240)
        env = {**self.env, "REVIEWFLOW_NIGHTLY_REPOSITORY": repository}
        subprocess.run([PREFECT, "--no-prompt", "deploy", "--all"], env=env, cwd=ROOT,
                       capture_output=True, check=True, timeout=300)  # fmt: skip

    def nightly(self, branch: str) -> subprocess.Popen[str]:
        params = json.dumps({"branches": [branch]})
        args = [REVIEWFLOW, "deployment-run", NIGHTLY, "--timeout", "3600s", "--params", params]
        return subprocess.Popen(args, env=self.env, cwd=self.logs, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            _stop(self.procs.pop(name))
        self.stores.remove()


def _test_key() -> str:
    from tests.wire_server import TEST_KEY

    return TEST_KEY


@contextlib.contextmanager
def _client(api: str) -> Iterator[object]:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        yield c


def _running_run(api: str) -> UUID | None:
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    running = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING]))
    with _client(api) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(state=running))  # type: ignore[attr-defined]
    nightly = [run for run in runs if run.deployment_id and run.parent_task_run_id is None]
    return nightly[0].id if nightly else None


def _state(api: str, run_id: UUID) -> tuple[str, str]:
    with _client(api) as client:
        state = client.read_flow_run(run_id).state  # type: ignore[attr-defined]
    return (state.type.value, state.message or "") if state else ("", "")


def _head(api: str, repository: str, branch: str) -> str | None:
    from reviewflow.report.release import variable_name

    with _client(api) as client:
        found = client.read_variable_by_name(variable_name(repository, branch))  # type: ignore[attr-defined]
    value = found.value if found else None
    return value.get("head") if isinstance(value, dict) else None


def _worker_of(team: Team, run_id: UUID) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for name in WORKERS:
            log = (team.logs / f"{name}.log").read_text()
            aborted = f"Aborted submission of flow run '{run_id}'" in log
            if f"submitting flow run '{run_id}'" in log and not aborted:
                return name
        time.sleep(0.5)
    raise SystemExit(f"recovery: no worker took flow run {run_id}")


def _arrivals(model: scale.Model) -> int:
    return len(model.stats()["arrivals"])


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def run(files: int, latency: float, within: int, kill_after: int) -> Recovery:
    work = Path(tempfile.mkdtemp(prefix=f"rf-recovery-{files}-"))
    repo = work / "repo"
    make_repo(repo, files)
    head = _git(repo, "rev-parse", "feature")
    _git(repo, "branch", BRANCH, "feature")
    listed = _git(repo, "ls-tree", "-r", "--name-only", head).splitlines()
    model = scale.Model(latency, sorted(p for p in listed if p.endswith(scale.CODE)), work)
    team = Team(work, model, within)
    try:
        for name in ("postgres", "redis", "server", "services"):
            team.start(name)
        team.setup()
        team.deploy(str(repo))
        for name in WORKERS:
            team.start(name)
        sent = _arrivals(model)
        first = team.nightly(BRANCH)
        while _arrivals(model) - sent < kill_after:
            if first.poll() is not None:
                raise SystemExit(f"recovery: the nightly ended before the kill: {first.stderr}")
            time.sleep(0.2)
        run_id = _running_run(team.api)
        if run_id is None:
            raise SystemExit("recovery: no running nightly at the kill")
        worker = _worker_of(team, run_id)
        killed_at = time.monotonic()
        for name in (*KILLED, worker):
            team.kill(name)
        first_requests = _arrivals(model) - sent
        first.kill()
        first.wait()
        team.start("redis")
        team.start("server")
        to_health = time.monotonic() - killed_at
        team.start("services")
        team.start(worker)
        before_rerun = _arrivals(model)
        rerun = team.nightly(BRANCH)
        to_crashed, message = -1.0, ""
        while to_crashed < 0 or rerun.poll() is None:
            kind, said = _state(team.api, run_id)
            if to_crashed < 0 and kind == "CRASHED":
                to_crashed, message = time.monotonic() - killed_at, said
            if time.monotonic() - killed_at > 1800:
                raise SystemExit("recovery: no recovery in 30 minutes")
            time.sleep(0.5)
        to_done = time.monotonic() - killed_at
        rerun_requests = _arrivals(model) - before_rerun
        moved = _head(team.api, str(repo), BRANCH) == head
        # The same review whole: a fresh branch of the same commits, in a fresh cache.
        shutil.rmtree(Path(team.env["REVIEWFLOW_HOME"]) / "cache" / "results", ignore_errors=True)
        _git(repo, "branch", "release/whole", "feature")
        before_whole = _arrivals(model)
        whole = team.nightly("release/whole")
        whole.communicate()
        full = _arrivals(model) - before_whole
    finally:
        team.stop_all()
        model.close()
    return Recovery(
        files=files, latency=latency, within=within, first_requests=first_requests,
        rerun_requests=rerun_requests, full_requests=full, to_health=to_health,
        to_crashed=to_crashed, to_rerun_done=to_done, crashed_message=message,
        rerun_exit=rerun.returncode, head_moved_to_head=moved, load=os.getloadavg()[0],
    )  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="model answer time, seconds")
    parser.add_argument(
        "--within", type=int, default=90,
        help="seconds without a heartbeat before a run is Crashed (server.env's 90)",
    )  # fmt: skip
    parser.add_argument(
        "--kill-after", type=int, default=None,
        help="kill once the model has answered this many requests (default: files / 2)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also append the result to this file")
    options = parser.parse_args()
    outcome = run(options.files, options.latency, options.within,
                  options.kill_after or options.files // 2)  # fmt: skip
    print(outcome, flush=True)
    if options.json:
        with options.json.open("a") as out:
            out.write(json.dumps(asdict(outcome)) + "\n")
