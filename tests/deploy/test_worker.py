"""Acceptance: `prefect server start` on loopback, the `reviewflow` pool, `prefect deploy --all`
from prefect.yaml, two process workers with the model settings in their environment, and the two
deployments triggered as CI and the nightly schedule would; two workers taking two branches at
once, and a nightly that resumes after its workers and the server were killed. One server for
the module; every process started here is stopped at its end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import DeploymentUpdate
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterDeploymentId,
    TaskRunFilter,
    TaskRunFilterName,
    TaskRunFilterStartTime,
    TaskRunFilterState,
    TaskRunFilterStateType,
)
from prefect.client.schemas.objects import ConcurrencyLimitStrategy, FlowRun, StateType
from prefect.client.schemas.sorting import FlowRunSort
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows.local.process import DATABASE_FILE
from flows.local.settings import prefect_home
from reviewflow.report.artifacts import artifact_key
from reviewflow.report.gate import summary_key
from reviewflow.report.release import variable_name
from tests.deploy.readback import ENGINE_TYPE_ERROR, artifacts, assert_failed_with_reason, log_lines
from tests.deploy.scenario import RISKY, SPLIT, model_env, origin, push
from tests.flows.reviewer import ScriptedReviewer, stage_of
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, Delay, RecordedRequest, Reply, WireServer

ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).parent / "prefect")
REVIEWFLOW = str(Path(sys.executable).parent / "reviewflow")
CODE = "def {name}(value):\n    return value * 2\n"


WORKERS = ("worker-1", "worker-2")


@dataclass
class Stack:
    api: str
    env: dict[str, str]
    prefect_home: Path
    rf_home: Path
    wire: WireServer
    repo: GitRepo
    url: str
    logs: Path  # <process>.log, appended to across restarts
    commands: dict[str, tuple[list[str], dict[str, str]]] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PREFECT, *args], env=self.env, cwd=ROOT, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip

    def deployment_run(self, deployment: str, *flags: str) -> subprocess.CompletedProcess[str]:
        """`reviewflow deployment-run` as a CI job runs it (the API URL its only setting)."""
        return subprocess.run(
            [REVIEWFLOW, "deployment-run", deployment, "--timeout", "200s", *flags],
            env=self.env, cwd=self.logs, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip

    def start(self, name: str) -> None:
        """Start the server or a worker (`commands[name]`); the server once it is healthy."""
        args, env = self.commands[name]
        self.procs[name] = _start(args, env, self.logs / f"{name}.log")
        if name == "server":
            _wait_healthy(self.api, self.procs[name], self.logs / "server.log")

    def kill(self, name: str) -> None:
        """SIGKILL the process and every process under it, as a machine that died."""
        proc = self.procs.pop(name)
        for pid in [proc.pid, *_descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            _stop(self.procs.pop(name))

    def worker_log(self) -> str:
        return "".join((self.logs / f"{name}.log").read_text() for name in WORKERS)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip


def _descendants(pid: int) -> list[int]:
    """The processes under `pid` (flow runs may start sessions of their own), from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the worker's flow-run children too
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_healthy(api: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"prefect server did not start: {log.read_text()[-2000:]}")


def _base_env(tmp: Path, api: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "REVIEWFLOW_"))}
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    env.update(
        PREFECT_HOME=str(tmp / "prefect"),
        PREFECT_API_URL=api,
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        REVIEWFLOW_HOME=str(tmp / "rfhome"),
        REVIEWFLOW_CODE_DIR=str(ROOT),
    )
    return env


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, prepared_home: Path) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("stack")
    api = f"http://127.0.0.1:{_free_port()}/api"
    env = _base_env(tmp, api)
    # Prefect's own server on a database already migrated (the session's first start): the
    # same schema `prefect server start` makes, without ~10 s of migrations here.
    (tmp / "prefect").mkdir(mode=0o700)
    for part in prefect_home(prepared_home).glob(DATABASE_FILE + "*"):  # with any -wal, -shm
        shutil.copy2(part, tmp / "prefect" / part.name)
    repo, bare = origin(tmp)
    url = bare.as_uri()
    with WireServer() as wire:
        stack = Stack(api, env, tmp / "prefect", tmp / "rfhome", wire, repo, url, tmp)
        port = api.rsplit(":", 1)[1].split("/")[0]
        server = [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", port]
        stack.commands["server"] = (server, {**env, "PREFECT_API_URL": ""})
        # It looks for scheduled runs every second, not every 10 s: each run starts sooner.
        worker_env = {**env, **model_env(wire), "PREFECT_WORKER_QUERY_SECONDS": "1"}
        for name in WORKERS:  # one flow run at a time each: two runs at once take both
            worker = [PREFECT, "worker", "start", "--pool", "reviewflow", "--name", name]
            stack.commands[name] = ([*worker, "--limit", "1"], worker_env)
        try:
            stack.start("server")
            created = stack.run("work-pool", "create", "reviewflow", "--type", "process")
            assert created.returncode == 0, created.stdout + created.stderr
            deploy_env = {**env, "REVIEWFLOW_NIGHTLY_REPOSITORY": url}
            deployed = subprocess.run(
                [PREFECT, "--no-prompt", "deploy", "--all"], env=deploy_env, cwd=ROOT,
                capture_output=True, text=True, timeout=240, check=False,
            )  # fmt: skip
            assert deployed.returncode == 0, deployed.stdout + deployed.stderr
            one_at_a_time_then_two(stack)
            for name in WORKERS:
                stack.start(name)
            yield stack
        finally:
            stack.stop_all()


def one_at_a_time_then_two(stack: Stack) -> None:
    """The nightly as prefect.yaml deployed it runs one at a time, a run started meanwhile
    waiting (ENQUEUE); then raised to two, as docs/deployments.md tells a team with many release
    branches, for the tests of two branches at once."""
    with _client_of(stack) as client:
        nightly = client.read_deployment_by_name("release-review/nightly-release-review")
        assert nightly.global_concurrency_limit is not None
        assert nightly.global_concurrency_limit.limit == 1
        assert nightly.concurrency_options is not None
        assert nightly.concurrency_options.collision_strategy == ConcurrencyLimitStrategy.ENQUEUE
        client.update_deployment(nightly.id, DeploymentUpdate(concurrency_limit=2))


def _stored_bytes(*roots: Path) -> bytes:
    return b"".join(p.read_bytes() for root in roots for p in root.rglob("*") if p.is_file())


@contextlib.contextmanager
def _client_of(stack: Stack) -> Iterator[SyncPrefectClient]:
    """A Prefect client of the stack's server, in this process."""
    with (
        temporary_settings(updates={PREFECT_API_URL: stack.api}),
        get_client(sync_client=True) as client,
    ):
        yield client


def _artifact_keys(stack: Stack) -> set[str]:
    with _client_of(stack) as client:
        return {artifact.key for artifact in client.read_artifacts() if artifact.key}


def _last_run(stack: Stack, deployment: str) -> FlowRun:
    """The deployment's latest flow run, as the API holds it."""
    with _client_of(stack) as client:
        found = client.read_deployment_by_name(deployment)
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(deployment_id=FlowRunFilterDeploymentId(any_=[found.id])),
            sort=FlowRunSort.EXPECTED_START_TIME_DESC,
            limit=1,
        )
    return runs[0]


def test_ci_review_gates_a_ci_job(stack: Stack) -> None:
    repo = stack.repo
    repo.git("checkout", "--quiet", "-B", "feature", "main")
    repo.write("app/settings.py", RISKY)
    head = repo.commit("read settings")
    push(repo, "main", "feature")
    params = ["--param", f"repository={stack.url}", "--param", "from_ref=main"]
    params += ["--param", "to_ref=feature"]

    stack.wire.respond("openai", ScriptedReviewer({"app/settings.py": []}))
    passed = stack.deployment_run("ci-review/ci-review", *params, "--run-name", "PR 1")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    out = passed.stdout.splitlines()
    assert out[0] == "Completed: gate passed"
    assert out[1].startswith("review ") and ": complete, exit code 0, 0 findings; " in out[1]
    assert f"ci-review/ci-review: flow run 'PR 1' created: {stack.api[:-4]}/runs/flow-run/" in (
        passed.stderr
    )

    stack.wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    failed = stack.deployment_run("ci-review/ci-review", *params, "--params", '{"no_cache": true}')
    assert failed.returncode == 1, failed.stdout + failed.stderr
    # The reason reaches the CI log (`prefect deployment run --watch` printed only the state).
    gate, summary_text = failed.stdout.splitlines()
    assert gate.startswith("Failed: gate failed: 1 finding(s), high app/settings.py:10 Lines")
    assert ": complete, exit code 1, 1 finding; reports on the worker: json " in summary_text
    run = _last_run(stack, "ci-review/ci-review")
    assert run.state and run.state.message == gate.removeprefix("Failed: ")
    with _client_of(stack):  # the engine ended the run with its reason, not a TypeError
        lines = log_lines(run.id)
        assert not [line for line in lines if ENGINE_TYPE_ERROR in line]
        assert ENGINE_TYPE_ERROR not in stack.worker_log()
        assert run.state.message in lines  # the flow's own error line
        assert_failed_with_reason(run.state)
        [summary] = artifacts(run.id)[summary_key(stack.url)]
    assert (summary["status"], summary["exit_code"], summary["findings"]) == ("complete", 1, 1)

    empty = stack.deployment_run(
        "ci-review/ci-review", "--param", "repository=", "--param", "commit=HEAD"
    )
    assert empty.returncode == 2, empty.stdout + empty.stderr
    assert empty.stdout.startswith(
        "Failed: Flow run encountered an exception: ConfigError: invalid value for 'repository': ''"
    )
    missing = stack.deployment_run("ci-review/nope", *params)
    assert (missing.returncode, missing.stdout) == (2, ""), missing.stderr
    assert missing.stderr == (
        f"reviewflow: error: no deployment 'ci-review/nope' on the Prefect API at {stack.api} "
        "(`prefect deployment ls` lists them; `prefect --no-prompt deploy --all` creates them)\n"
    )

    [checkout] = [p for p in (stack.rf_home / "cache" / "repos").iterdir() if p.is_dir()]
    assert repo.git("-C", str(checkout), "rev-parse", "feature").strip() == head
    assert artifact_key(str(checkout), "range") in _artifact_keys(stack)
    # The key was in the worker's environment only: nowhere in Prefect's database, results,
    # or reviewflow's cache and reports.
    assert stack.wire.requests()
    assert TEST_KEY.encode() not in _stored_bytes(stack.prefect_home, stack.rf_home)


NIGHTLY = "release-review/nightly-release-review"


class _Gate:
    """Holds every request of the branches' files until requests of both have arrived: the two
    reviews were in flight at once (one run waiting for the other's worker never opens it)."""

    def __init__(self, reviewer: ScriptedReviewer, paths: set[str]) -> None:
        self.reviewer = reviewer
        self.waiting = set(paths)
        self.opened = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, record: RecordedRequest) -> Reply:
        text = json.dumps(record.body)
        with self._lock:
            self.waiting -= {path for path in self.waiting if path in text}
            if not self.waiting:
                self.opened.set()
        self.opened.wait(timeout=180)
        return self.reviewer(record)


class _Hold:
    """Holds the main requests of `path` (a slow file the run never finishes)."""

    def __init__(self, reviewer: ScriptedReviewer, path: str) -> None:
        self.reviewer = reviewer
        self.path = path

    def __call__(self, record: RecordedRequest) -> Reply:
        text = json.dumps(record.body)
        if stage_of(text) == "main" and self.path in text:
            return Delay(600)
        return self.reviewer(record)


def _branch(repo: GitRepo, branch: str, paths: list[str]) -> str:
    repo.git("checkout", "--quiet", "-B", branch, "main")
    for path in paths:
        repo.write(path, CODE.format(name=Path(path).stem))
    head = repo.commit(f"add {len(paths)} file(s)")
    push(repo, branch)
    return head


def _nightly_of(stack: Stack, branch: str) -> subprocess.Popen[str]:
    params = json.dumps({"branches": [branch]})
    return subprocess.Popen(
        [REVIEWFLOW, "deployment-run", NIGHTLY, "--timeout", "200s", "--params", params],
        env=stack.env, cwd=stack.logs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _reviewed_head(stack: Stack, branch: str) -> str | None:
    with _client_of(stack) as client:
        found = client.read_variable_by_name(variable_name(stack.url, branch))
    value = found.value if found else None
    return value.get("head") if isinstance(value, dict) else None


def _ran(stack: Stack, worker: str, ids: list[str]) -> set[str]:
    """The flow runs `worker` ran: both may try to submit a run; the server aborts the later."""
    log = (stack.logs / f"{worker}.log").read_text()
    tried = {i for i in ids if f"Worker '{worker}' submitting flow run '{i}'" in log}
    return {i for i in tried if f"Aborted submission of flow run '{i}'" not in log}


def _main_requests_of(requests: list[RecordedRequest], paths: list[str]) -> set[str]:
    texts = [json.dumps(r.body) for r in requests]
    return {p for p in paths for text in texts if stage_of(text) == "main" and p in text}


def test_two_workers_take_two_branches_at_once(stack: Stack) -> None:
    heads = {b: _branch(stack.repo, b, [f"app/{b[-1]}x.py"]) for b in ("release/3", "release/4")}
    gate = _Gate(ScriptedReviewer({}), {"app/3x.py", "app/4x.py"})
    stack.wire.respond("openai", gate)

    runs = [_nightly_of(stack, branch) for branch in heads]
    outs = [run.communicate(timeout=240) for run in runs]
    assert gate.opened.is_set()  # both reviews were waiting on the model at the same time
    ids = []
    for run, (out, err) in zip(runs, outs, strict=True):
        assert run.returncode == 0, out + err
        assert out.startswith("Completed: 1 branch(es) passed\n"), out
        ids.append(err.rsplit("/runs/flow-run/", 1)[1].split()[0])
    ran = {name: _ran(stack, name, ids) for name in WORKERS}
    assert sorted(len(found) for found in ran.values()) == [1, 1], ran
    assert {_reviewed_head(stack, b) for b in heads} == set(heads.values())
    [mirror] = [p for p in (stack.rf_home / "cache" / "repos").iterdir() if p.is_dir()]
    fsck = subprocess.run(["git", "-C", str(mirror), "fsck", "--no-progress"], check=False)
    assert fsck.returncode == 0


def _completed_loops(stack: Stack, since: datetime) -> int:
    with _client_of(stack) as client:
        runs = client.read_task_runs(
            task_run_filter=TaskRunFilter(
                name=TaskRunFilterName(like_="tool_loop"),
                state=TaskRunFilterState(type=TaskRunFilterStateType(any_=[StateType.COMPLETED])),
                start_time=TaskRunFilterStartTime(after_=since),
            )
        )
    return len(runs)


@pytest.mark.stress  # a kill and restart of the server (~50 s): in the stress rotation
def test_a_nightly_killed_with_its_server_resumes_from_the_files_done(stack: Stack) -> None:
    fast = [f"app/fast{n}.py" for n in range(4)]
    slow = "app/slow.py"
    head = _branch(stack.repo, "release/9", [*fast, slow])
    stack.wire.respond("openai", _Hold(ScriptedReviewer({}), slow))
    since = datetime.now(UTC)
    interrupted = _nightly_of(stack, "release/9")
    deadline = time.monotonic() + 180
    while _completed_loops(stack, since) < len(fast) or not _main_requests_of(
        stack.wire.requests(), [slow]
    ):
        assert time.monotonic() < deadline, "the fast files' reviews never completed"
        time.sleep(1)

    for name in (*WORKERS, "server"):  # the machines die mid-run
        stack.kill(name)
    interrupted.kill()
    interrupted.wait()
    for name in ("server", *WORKERS):
        stack.start(name)
    stack.wire.respond("openai", ScriptedReviewer({}))
    sent = len(stack.wire.requests())

    resumed = stack.deployment_run(NIGHTLY, "--params", json.dumps({"branches": ["release/9"]}))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _main_requests_of(stack.wire.requests()[sent:], [*fast, slow]) == {slow}
    assert _reviewed_head(stack, "release/9") == head

    stack.repo.git("checkout", "--quiet", "release/9")
    stack.repo.write("app/later.py", CODE.format(name="later"))
    later = stack.repo.commit("add later")
    push(stack.repo, "release/9")
    sent = len(stack.wire.requests())
    nightly = stack.deployment_run(NIGHTLY)  # as scheduled: every release/* branch
    assert nightly.returncode == 0, nightly.stdout + nightly.stderr
    assert nightly.stdout.startswith("Completed: ") and "# Nightly release review of" in (
        nightly.stdout
    )
    reviewed = _main_requests_of(stack.wire.requests()[sent:], [*fast, slow, "app/later.py"])
    assert reviewed == {"app/later.py"}  # the other branches had nothing new
    assert _reviewed_head(stack, "release/9") == later
    assert "release-review-origin-git" in _artifact_keys(stack)
