"""A review on a real Dask cluster whose workers cannot see the caller's files: `dask scheduler`
and two `dask worker` processes on loopback, each in a mount namespace where the repository and
the reviewflow home are hidden under an empty tmpfs, with its own working and temporary
directories. The snapshot reaches them as a Git bundle in the shared store, the API key in their
own environment; the report equals the thread runner's, and the tasks ran on both workers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.deploy.scenario import RISKY, SPLIT, use_model
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, RecordedRequest, Reply, WireServer

FILES = ("app/settings.py", "app/a.py", "app/b.py", "app/c.py")


def _can_hide() -> bool:
    probe = ["unshare", "--mount", "sh", "-c", "mount -t tmpfs none /mnt"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


pytestmark = [
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(
        shutil.which("unshare") is None or not _can_hide(),
        reason="needs a mount namespace (unshare --mount) to hide the caller's files",
    ),
]


class Cluster:
    """A scheduler and two single-threaded workers, started as the `dask` command does."""

    def __init__(self, base: Path, hidden: list[Path], env: dict[str, str]) -> None:
        self.base, self.hidden, self.env = base, hidden, env
        self.processes: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def start(self) -> None:
        file = self.base / "scheduler.json"
        loopback = ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
        self._spawn("scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", "0", *loopback,
                                  "--scheduler-file", str(file)])  # fmt: skip
        while not file.exists():
            if self.processes[0].poll() is not None:
                raise RuntimeError(f"the scheduler exited:\n{self.logs()}")
            time.sleep(0.1)
        time.sleep(0.2)  # written whole right after it appears
        self.address = json.loads(file.read_text())["address"]
        for name in ("worker-1", "worker-2"):
            own = self.base / name
            (own / "tmp").mkdir(parents=True)
            mounts = " && ".join(f"mount -t tmpfs none '{path}'" for path in self.hidden)
            worker = (
                f"{mounts} && cd '{own}' && exec '{sys.executable}' -m distributed.cli.dask_worker "
                f"{self.address} --name {name} --nthreads 1 --no-nanny --host 127.0.0.1 "
                f"{' '.join(loopback)} --local-directory '{own}'"
            )
            env = {**self.env, "TMPDIR": str(own / "tmp"), "PREFECT_HOME": str(own / "prefect")}
            self._spawn(name, ["unshare", "--mount", "sh", "-c", worker], env)

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.base / f"{name}.log").open("wb")
        self.processes.append(
            subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env or self.env)
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
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in self.base.glob("*.log"))


@pytest.fixture
def store() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="reviewflow-store-"))  # outside every hidden directory
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster(tmp_path: Path, rf_home: Path, wire: WireServer) -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="reviewflow-cluster-"))
    env = {
        **os.environ,
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,  # the workers' own: never a task input
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    cluster = Cluster(base, [tmp_path, rf_home], env)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


def _slow(reviewer: ScriptedReviewer) -> Any:
    """The reviewer answering each request after 0.3 s, so the stages overlap."""

    def answer(record: RecordedRequest) -> Reply:
        time.sleep(0.3)
        return reviewer(record)

    return answer


def _review(repo: GitRepo, out: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    code = main([*args, "--report-dir", str(out), "--no-cache", *flags])
    return code, json.loads((out / "review-report.json").read_text())


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    return {
        key: report.get(key)
        for key in (
            "status",
            "exit_code",
            "findings",
            "dropped",
            "stats",
            "excluded_files",
            "incomplete_files",
        )
    }


def test_a_review_on_a_dask_cluster_that_cannot_see_the_repository(
    repo: GitRepo,
    wire: WireServer,
    cluster: Cluster,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from distributed import Client

    def clones_here() -> list[str]:  # defined here: the workers cannot import the tests
        """On a worker: the snapshots it cloned, in its own temporary directory."""
        clones = Path(tempfile.gettempdir()) / f"reviewflow-snapshots-{os.getuid()}"
        found = clones.iterdir() if clones.exists() else iter(())
        return sorted(p.name for p in found if not p.name.startswith("."))

    for path in FILES:
        repo.write(path, "x = 1\n")
    repo.commit("base")
    repo.write("app/settings.py", RISKY)
    for path in FILES[1:]:
        repo.write(path, f"def {Path(path).stem}(value):\n    return value\n")
    repo.commit("read settings")
    findings = {path: [SPLIT] if path == "app/settings.py" else [] for path in FILES}
    wire.respond("openai", _slow(ScriptedReviewer(findings)))
    use_model(monkeypatch, wire)
    code, threads = _review(repo, tmp_path / "threads")

    with Client(cluster.address, timeout="60s") as client:
        client.wait_for_workers(2, timeout=120)
        client.get_task_stream()  # starts the scheduler's record of where each task ran
        assert set(client.run(os.path.exists, str(repo.root)).values()) == {False}
        sent = len(wire.requests())
        use_model(monkeypatch, wire)
        monkeypatch.delenv("REVIEWFLOW_MODEL_API_KEY")  # the workers have their own
        dask_flags = ["--task-runner", "dask", "--dask-address", cluster.address]
        print(f"cluster logs in {cluster.base}")  # shown when the test fails
        flags = [*dask_flags, "--shared-store", str(store)]
        dask_code, dask = _review(repo, tmp_path / "dask", *flags)
        ran = Counter(
            (task["worker"], task["key"].split("-")[0]) for task in client.get_task_stream()
        )
        clones = client.run(clones_here)

    assert (code, dask_code) == (1, 1)
    assert _comparable(dask) == _comparable(threads)
    assert dask["usage"]["requests"] == len(wire.requests()) - sent > 0
    assert {r.credential for r in wire.requests()} == {TEST_KEY}
    workers = {worker for worker, _ in ran}
    assert len(workers) == 2, ran  # the stages ran on both workers
    assert all(ran[(worker, "tool_loop")] >= 1 for worker in workers), ran
    assert sorted(len(found) for found in clones.values()) == [1, 1]  # one clone each
    assert [p.name for p in (store / "snapshots").iterdir()] == [
        f"{repo.git('rev-parse', 'HEAD^{tree}').strip()}.bundle"
    ]
    assert list((store / "cache" / "results").iterdir())  # the stages' results: in the store
    for path in store.rglob("*"):
        assert not path.is_file() or TEST_KEY.encode() not in path.read_bytes(), path
