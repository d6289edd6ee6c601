"""Acceptance: `prefect server start` on loopback, the `reviewflow` pool, `prefect deploy --all`
from prefect.yaml, a process worker with the model settings in its environment, and the two
deployments triggered as CI and the nightly schedule would. One server for the module; every
process started here is stopped at its end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterDeploymentId
from prefect.client.schemas.objects import FlowRun
from prefect.client.schemas.sorting import FlowRunSort
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows.local.process import DATABASE_FILE
from flows.local.settings import prefect_home
from reviewflow.report.artifacts import artifact_key
from reviewflow.report.gate import summary_key
from tests.deploy.readback import ENGINE_TYPE_ERROR, artifacts, assert_failed_with_reason, log_lines
from tests.deploy.scenario import RISKY, SPLIT, model_env, origin, push
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).parent / "prefect")
REVIEWFLOW = str(Path(sys.executable).parent / "reviewflow")
CODE = "def {name}(value):\n    return value * 2\n"


@dataclass
class Stack:
    api: str
    env: dict[str, str]
    prefect_home: Path
    rf_home: Path
    wire: WireServer
    repo: GitRepo
    url: str
    logs: Path  # server.log, worker.log

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip


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
    procs: list[subprocess.Popen[bytes]] = []
    with WireServer() as wire:
        try:
            server_env = {**env, "PREFECT_API_URL": ""}
            port = api.rsplit(":", 1)[1].split("/")[0]
            server = [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", port]
            procs.append(_start(server, server_env, tmp / "server.log"))
            _wait_healthy(api, procs[0], tmp / "server.log")
            stack = Stack(api, env, tmp / "prefect", tmp / "rfhome", wire, repo, url, tmp)
            created = stack.run("work-pool", "create", "reviewflow", "--type", "process")
            assert created.returncode == 0, created.stdout + created.stderr
            deploy_env = {**env, "REVIEWFLOW_NIGHTLY_REPOSITORY": url}
            deployed = subprocess.run(
                [PREFECT, "--no-prompt", "deploy", "--all"], env=deploy_env, cwd=ROOT,
                capture_output=True, text=True, timeout=240, check=False,
            )  # fmt: skip
            assert deployed.returncode == 0, deployed.stdout + deployed.stderr
            # It looks for scheduled runs every second, not every 10 s: each run starts sooner.
            worker_env = {**env, **model_env(wire), "PREFECT_WORKER_QUERY_SECONDS": "1"}
            worker = [PREFECT, "worker", "start", "--pool", "reviewflow", "--limit", "2"]
            procs.append(_start(worker, worker_env, tmp / "worker.log"))
            yield stack
        finally:
            for proc in reversed(procs):
                _stop(proc)


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
        assert ENGINE_TYPE_ERROR not in (stack.logs / "worker.log").read_text()
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


def test_nightly_reviews_only_new_commits(stack: Stack) -> None:
    repo = stack.repo
    for branch, path in (("release/1", "app/one.py"), ("release/2", "app/two.py")):
        repo.git("checkout", "--quiet", "-B", branch, "main")
        repo.write(path, CODE.format(name=Path(path).stem))
        repo.commit(f"add {path}")
    push(repo, "release/1", "release/2")
    stack.wire.respond("openai", ScriptedReviewer({}))

    first = stack.deployment_run("release-review/nightly-release-review")
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.startswith("Completed: 2 branch(es) passed\n# Nightly release review of")
    repo.git("checkout", "--quiet", "release/1")
    repo.write("app/three.py", CODE.format(name="three"))
    repo.commit("add three")
    push(repo, "release/1")
    sent = len(stack.wire.requests())

    second = stack.deployment_run("release-review/nightly-release-review")
    assert second.returncode == 0, second.stdout + second.stderr
    later = json.dumps([r.body for r in stack.wire.requests()[sent:]])
    assert "app/three.py" in later
    assert "app/one.py" not in later and "app/two.py" not in later
    assert "release-review-origin-git" in _artifact_keys(stack)
