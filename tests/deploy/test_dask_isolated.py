"""A review on a Dask cluster on "another machine" (`tests/deploy/netns.py`: a scheduler and two
workers in a network namespace of their own, reaching only the scheduler, the scripted model and
what this machine binds to the veth pair's address; the caller's files hidden from them).

The caller holds no model key (the protocol, anthropic, needs one); the workers do. A Prefect API
on this machine's loopback is out of the workers' reach: the preflight refuses the review in one
line, exit 2, naming the API and the worker, before any model request. With the managed server
bound to the veth address (`--server-host`), every stage the workers ran and every model request
they sent is a task run on that server, read back from its API.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.local.api import ensure_api
from flows.local.control import stop_server
from flows.local.process import DATABASE_FILE
from flows.local.settings import prefect_home
from tests.conftest import copy_prepared
from tests.deploy.netns import IsolatedCluster, Namespace, available
from tests.deploy.scenario import RISKY, SPLIT
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.netguard.netguard import ALLOW_VARIABLE
from tests.server.stopping import eventually
from tests.wire_server import TEST_KEY, WireServer

FILES = ("app/settings.py", "app/a.py", "app/b.py")
KEY_VARIABLES = ("REVIEWFLOW_MODEL_API_KEY", "ANTHROPIC_API_KEY")

pytestmark = [
    pytest.mark.stress,  # a scheduler, two workers and a managed server: ~1 min
    pytest.mark.skipif(
        not available(),
        reason="needs root, unshare, nsenter and ip to give the cluster a network of its own",
    ),
]


@pytest.fixture
def namespace(monkeypatch: pytest.MonkeyPatch) -> Iterator[Namespace]:
    made = Namespace()
    monkeypatch.setenv(ALLOW_VARIABLE, made.network)  # here and in every process started
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def model(namespace: Namespace) -> Iterator[WireServer]:
    """The scripted model, on this machine's end of the pair (the workers' only way to it)."""
    with WireServer(namespace.host) as server:
        server.respond(
            "anthropic", ScriptedReviewer({p: [SPLIT] if p == FILES[0] else [] for p in FILES})
        )
        yield server


def _model_env(model: WireServer) -> dict[str, str]:
    return {
        "REVIEWFLOW_MODEL_PROTOCOL": "anthropic",
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": model.base_url("anthropic"),
    }


@pytest.fixture
def home(tmp_path: Path, prepared_home: Path) -> Iterator[Path]:
    made = tmp_path / "home"
    copy_prepared(prepared_home, made)
    yield made
    stop_server(made, force=True)


@pytest.fixture
def cluster(
    namespace: Namespace, model: WireServer, tmp_path: Path, rf_home: Path
) -> Iterator[IsolatedCluster]:
    base = Path(tempfile.mkdtemp(prefix="reviewflow-isolated-"))  # outside the hidden ones
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", *KEY_VARIABLES)}
    env |= {**_model_env(model), "REVIEWFLOW_MODEL_API_KEY": TEST_KEY, "PREFECT_LOGGING_LEVEL":
            "WARNING"}  # fmt: skip
    made = IsolatedCluster(namespace, base, [tmp_path, rf_home], env)
    try:
        made.start()
        yield made
    finally:
        made.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def store() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="reviewflow-store-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _changed(repo: GitRepo) -> GitRepo:
    for path in FILES:
        repo.write(path, "x = 1\n")
    repo.commit("base")
    repo.write(FILES[0], RISKY)
    for path in FILES[1:]:
        repo.write(path, f"def {Path(path).stem}(value):\n    return value\n")
    repo.commit("read settings")
    return repo


def _review(
    repo: GitRepo, home: Path, model: WireServer, out: Path, *flags: str, api: str | None = None
) -> subprocess.CompletedProcess[str]:
    """A review by the CLI, in a process of its own, with no model key in its environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", *KEY_VARIABLES)}
    env |= {**_model_env(model), "REVIEWFLOW_HOME": str(home), "XDG_RUNTIME_DIR": str(out)}
    if api:
        env["PREFECT_API_URL"] = api
    out.mkdir()
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    args += ["--report-dir", str(out), "--no-cache", *flags]
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], env=env, cwd=out, capture_output=True,
        text=True, timeout=600, check=False,
    )  # fmt: skip


def _post(api: str, route: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{api}/{route}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _task_runs(api: str) -> list[dict[str, Any]]:
    """The task runs of the one review flow run on the server at `api`."""
    runs = _post(api, "flow_runs/filter", {"flows": {"name": {"any_": ["review"]}}})
    assert len(runs) == 1, runs
    flow_run = {"id": {"any_": [runs[0]["id"]]}}
    found: list[dict[str, Any]] = _post(
        api, "task_runs/filter", {"flow_runs": flow_run, "limit": 200}
    )
    assert len(found) < 200
    return found


def _stage(key: str) -> str:
    return key.rsplit("-", 1)[0]


def _task_names() -> dict[str, str]:
    """Each task's name (its task runs') by its function's name (what Dask's keys start with)."""
    from prefect import Task

    import tasks

    names = {}
    for info in pkgutil.iter_modules(tasks.__path__):
        for value in vars(importlib.import_module(f"tasks.{info.name}")).values():
            if isinstance(value, Task):
                names[value.fn.__name__] = value.name
    return names


def test_a_worker_that_cannot_reach_the_api_is_refused_before_any_request(
    cluster: IsolatedCluster,
    model: WireServer,
    home: Path,
    repo: GitRepo,
    store: Path,
    tmp_path: Path,
    prefect_harness: str,
) -> None:
    """The shared test API listens on this machine's loopback: no worker reaches it."""
    flags = ["--dask-address", cluster.address, "--shared-store", str(store)]
    result = _review(_changed(repo), home, model, tmp_path / "out", *flags, api=prefect_harness)
    print(result.stderr)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr
    worker = re.escape(f"tcp://{cluster.namespace.inside}:") + r"\d+"
    expected = (
        rf"reviewflow: error: the Dask worker {worker} cannot reach the Prefect API at "
        rf"{re.escape(prefect_harness)}: the connection was refused \(its task runs would not "
        r"be recorded\); run the review where the workers reach its API: `--server-host ADDR`"
    )
    assert re.match(expected, result.stderr), result.stderr
    assert model.requests() == []


def test_every_stage_on_the_workers_is_a_task_run_of_the_bound_server(
    cluster: IsolatedCluster,
    model: WireServer,
    home: Path,
    repo: GitRepo,
    store: Path,
    tmp_path: Path,
) -> None:
    from distributed import Client

    host = cluster.namespace.host
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    api = ensure_api(home, env, ci=False, reuse=True, host=host).url  # the review reuses it
    assert api == f"http://{host}:{api.rsplit(':', 1)[1]}" and api.endswith("/api")
    with Client(cluster.address, timeout="60s") as client:
        client.wait_for_workers(2, timeout=120)
        client.get_task_stream()  # starts the scheduler's record of where each task ran
        flags = ["--task-runner", "dask", "--dask-address", cluster.address, "--server-host", host]
        result = _review(_changed(repo), home, model, tmp_path / "out", *flags, "--shared-store",
                         str(store))  # fmt: skip
        stream = client.get_task_stream()
    names = _task_names()
    ran = Counter(names[_stage(task["key"])] for task in stream)
    print(result.stderr)
    assert result.returncode == 1  # the finding
    report = json.loads((tmp_path / "out" / "review-report.json").read_text())
    assert [f["title"] for f in report["findings"]] == [SPLIT["title"]]
    requests = model.requests()
    assert report["usage"]["requests"] == len(requests) > 0
    assert {r.credential for r in requests} == {TEST_KEY}  # the workers' own key

    assert ran["tool_loop"] == len(FILES), ran  # the stages ran on the workers
    for name in ("worker-1", "worker-2"):  # asked once, not again for each task it ran
        log = (cluster.base / f"{name}.log").read_text()
        assert log.count("Run out-of-band function 'on_worker'") == 1, log
    assert api is not None

    def recorded() -> Counter[str]:
        return Counter(_stage(run["name"]) for run in _task_runs(api))

    def all_there() -> bool:
        runs = recorded()
        return all(runs[s] >= n for s, n in ran.items())  # a request is in its stage's run

    assert eventually(all_there, 60), (recorded(), ran)
    states = {run["name"]: run["state_type"] for run in _task_runs(api)}
    assert set(states.values()) == {"COMPLETED"}, states
    database = prefect_home(home) / DATABASE_FILE
    assert TEST_KEY.encode() not in database.read_bytes()
