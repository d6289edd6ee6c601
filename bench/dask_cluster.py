"""A bigger review on a real Dask cluster whose workers cannot see the caller's files: the
distributed run beside `tests/deploy/test_dask_cluster.py`, on a `bench/synth.py` range.

Per size (`--files 200 1000`), against the scripted model in its own process answering after
`--latency` seconds (one file in ten gets a finding, as in `bench/scale.py`), in a fresh
reviewflow home whose server and warm process an untimed 3-file review starts first:
- the range reviewed with the thread runner (`python -m flows.review ... --no-cache`), and with
  `--cached` reviewed again unchanged (no `--no-cache`: every stage's result read back from the
  cache, no model request);
- the test's cluster started (`dask scheduler` and two `dask worker --nthreads N` on loopback,
  each under `unshare --mount` with the repository and the home hidden under a tmpfs, its own
  cwd, TMPDIR and PREFECT_HOME, the API key only in its environment), and the same range
  reviewed with `--task-runner dask --dask-address ... --shared-store DIR` (and again, unchanged,
  with `--cached`: the results read back from the shared store).
With `--netns`, the cluster is on "another machine" instead, as `tests/deploy/test_dask_isolated.py`
has it (`tests/deploy/netns.py`): scheduler and workers in a network namespace of their own that
reaches only what this machine binds to its end of a veth pair, so the scripted model and the
managed server (every review with `--server-host` that address) are bound there, and the
workers' task runs and requests cross the pair as they would cross a network.
Printed: the wall of each review; the tasks each worker ran by task name (the scheduler's task
stream, started before the review); whether the dask report equals the thread report on the
keys the test compares; the model requests each review made; the shared store's size; what the
workers were sent: each task's spec as the scheduler pickles it for a worker (a scheduler
plugin), worker-to-worker transfers, and the results they held (task-stream `nbytes`).

Run: `.venv/bin/python bench/dask_cluster.py --files 200 1000 [--latency 0.5] [--nthreads 2]
[--cached] [--netns]`.
Needs `unshare --mount` (an unprivileged user namespace), and for `--netns` root, `nsenter` and
`ip`; without them the bench says so and exits.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
os.environ.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
os.environ.pop("PREFECT_API_URL", None)  # the home's managed server, as a user's review
from scale import CODE, Model  # noqa: E402
from synth import make_repo, make_small_change  # noqa: E402

from flows.local.control import stop_server  # noqa: E402
from tests.deploy.netns import IsolatedCluster, Namespace, available  # noqa: E402
from tests.deploy.test_dask_cluster import Cluster, _can_hide, _comparable  # noqa: E402
from tests.wire_server import TEST_KEY  # noqa: E402

KEY = "REVIEWFLOW_MODEL_API_KEY"


class Threaded:
    """A test's cluster (the class this is mixed into) with `nthreads` threads a worker, its
    logs shown only on failure."""

    nthreads, quiet = 1, True

    def _spawn(self, name: str, args: list[str], *env: Any) -> None:
        if name.startswith("worker"):
            args = [*args[:-1], args[-1].replace("--nthreads 1", f"--nthreads {self.nthreads}")]
        super()._spawn(name, args, *env)  # type: ignore[misc]

    def stop(self) -> None:
        with contextlib.redirect_stdout(io.StringIO() if self.quiet else sys.stdout):
            super().stop()  # type: ignore[misc]  # prints the logs


class Workers(Threaded, Cluster):
    """`tests/deploy/test_dask_cluster.py`'s cluster: on this machine, in mount namespaces."""


class NetWorkers(Threaded, IsolatedCluster):
    """`tests/deploy/test_dask_isolated.py`'s cluster: in `namespace`, another network."""


class SpecSizes(SchedulerPlugin):
    """On the scheduler: the pickled size of each task it is given, the spec a worker receives
    to run it (the task, its parameters and Prefect's serialized context)."""

    name = "bench-spec-sizes"

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}

    def update_graph(self, scheduler: Any, *, tasks: list[Any], **kwargs: Any) -> None:
        from distributed.protocol.pickle import dumps

        for key in tasks:
            state = scheduler.tasks.get(key)
            if state is not None and state.run_spec is not None:
                self.sizes[str(key)] = len(dumps(state.run_spec))


def _spec_sizes(dask_scheduler: Any) -> dict[str, int]:
    sizes: dict[str, int] = dask_scheduler.plugins[SpecSizes.name].sizes
    return sizes


def _transferred(dask_worker: Any) -> int:
    """On a worker: the bytes it fetched from the other worker (task inputs held there)."""
    return sum(int(entry["total"]) for entry in dask_worker.transfer_incoming_log)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _paths(repo: Path, head: str) -> list[str]:
    listing = ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", head]
    names = subprocess.run(listing, capture_output=True, text=True, check=True).stdout
    return sorted(line for line in names.splitlines() if line.endswith(CODE))


class Bench:
    """One size: the work directory, the scripted model and the reviews' environment."""

    def __init__(
        self, files: int, latency: float, nthreads: int, stack: contextlib.ExitStack, netns: bool
    ):
        self.work = Path(tempfile.mkdtemp(prefix=f"rf-dask-{files}-"))
        stack.callback(shutil.rmtree, self.work, ignore_errors=True)
        self.namespace = Namespace() if netns else None  # the cluster's "other machine"
        if self.namespace is not None:
            stack.callback(self.namespace.close)  # last: after the cluster and the server
        host = self.namespace.host if self.namespace else ""  # where this machine serves it
        self.server = ["--server-host", host] if host else []
        self.hidden = self.work / "hidden"  # what the workers must not see: repository, home
        self.repo, self.home = self.hidden / "repo", self.hidden / "home"
        self.store = self.work / "store"
        self.base, self.head = make_repo(self.repo, files)
        self.model = Model(latency, _paths(self.repo, self.head), self.work, host=host)
        stack.callback(self.model.close)
        stack.callback(stop_server, self.home, force=True)  # before the model: runs first
        self.nthreads, self.stack = nthreads, stack
        self.env = {**os.environ, "REVIEWFLOW_HOME": str(self.home), "PYTHONPATH": str(ROOT),
                    "REVIEWFLOW_MODEL_NAME": "bench-model", KEY: TEST_KEY,
                    "REVIEWFLOW_MODEL_ENDPOINT": self.model.url}  # fmt: skip

    def requests(self) -> int:
        return len(self.model.stats()["arrivals"])

    def review(
        self, name: str, env: dict[str, str], *flags: str, cached: bool = False
    ) -> dict[str, Any]:
        """A whole review of the range: its exit, wall, report and the requests it made
        (`cached`: with the stages' cache, else `--no-cache`)."""
        out = self.work / name
        fresh = [] if cached else ["--no-cache"]
        args = [sys.executable, "-m", "flows.review", "--repo", str(self.repo), "--from",
                self.base, "--to", self.head, "--report-dir", str(out), *fresh,
                "--console", "off", "--no-progress", *self.server, *flags]  # fmt: skip
        sent, start = self.requests(), time.perf_counter()
        code = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, check=False).returncode
        wall = time.perf_counter() - start
        report = json.loads((out / "review-report.json").read_text())
        return {"exit": code, "wall": wall, "requests": self.requests() - sent, "report": report}

    def warm_up(self) -> None:
        """An untimed 3-file review: the home's server and warm process start."""
        small = self.work / "small"
        make_small_change(small)
        args = [sys.executable, "-m", "flows.review", "--repo", str(small), "--console", "off"]
        args += ["--no-progress", *self.server]
        subprocess.run(args, env=self.env, stdout=subprocess.DEVNULL)

    def cluster(self) -> Workers | NetWorkers:
        env = {**os.environ, KEY: TEST_KEY, "PYTHONPATH": str(ROOT),
               "REVIEWFLOW_HOME": str(self.home), "PREFECT_LOGGING_LEVEL": "WARNING"}  # fmt: skip
        base = self.work / "cluster"
        base.mkdir()
        cluster: Workers | NetWorkers
        if self.namespace is None:
            cluster = Workers(base, [self.hidden], env)
        else:
            cluster = NetWorkers(self.namespace, base, [self.hidden], env)
        cluster.nthreads = self.nthreads
        self.stack.callback(cluster.stop)
        cluster.start()
        return cluster


def _on_cluster(bench: Bench, cluster: Workers | NetWorkers, cached: bool) -> dict[str, Any]:
    """The dask review (and with `cached` its unchanged re-run), and what the scheduler and the
    workers saw of the first."""
    from distributed import Client

    with Client(cluster.address, timeout="60s") as client:
        client.wait_for_workers(2, timeout=120)
        if any(client.run(os.path.exists, str(bench.repo)).values()):
            raise SystemExit("a worker sees the repository: the mount namespace did not hide it")
        names = {a: str(w["name"]) for a, w in client.scheduler_info()["workers"].items()}
        client.register_plugin(SpecSizes())
        client.get_task_stream()  # starts the scheduler's record of where each task ran
        flags = ["--task-runner", "dask", "--dask-address", cluster.address]
        env = {k: v for k, v in bench.env.items() if k != KEY}  # the workers have their own
        result = bench.review("dask", env, *flags, "--shared-store", str(bench.store))
        stream = client.get_task_stream()
        specs = client.run_on_scheduler(_spec_sizes)
        transfers = client.run(_transferred)
        again = bench.review("dask-again", env, *flags, "--shared-store", str(bench.store),
                             cached=True) if cached else None  # fmt: skip
    ran = Counter((names[t["worker"]], t["key"].split("-")[0]) for t in stream)
    per_worker: dict[str, dict[str, int]] = {}
    for (worker, task), count in sorted(ran.items()):
        per_worker.setdefault(worker, {})[task] = count
    by_task: dict[str, list[int]] = {}
    for key, size in specs.items():
        by_task.setdefault(key.split("-")[0], []).append(size)
    return {
        **result,
        "cached": again,
        "tasks": per_worker,
        "spec_bytes": {task: [sum(s) // len(s), max(s)] for task, s in sorted(by_task.items())},
        "spec_total": sum(specs.values()),
        "result_bytes": sum(int(t.get("nbytes", 0)) for t in stream),
        "transfer_bytes": sum(transfers.values()),
        "store_bytes": _size(bench.store),
        "bundle_bytes": _size(bench.store / "snapshots"),
    }


def run(
    files: int, latency: float, nthreads: int, cached: bool = False, netns: bool = False
) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        bench = Bench(files, latency, nthreads, stack, netns)
        bench.warm_up()
        threads = bench.review("threads", bench.env)
        if cached:
            threads["cached"] = bench.review("threads-again", bench.env, cached=True)
        cluster = bench.cluster()
        try:
            dask = _on_cluster(bench, cluster, cached)
        except BaseException:
            cluster.quiet = False  # its logs, on the way out
            raise
    left, right = _comparable(threads.pop("report")), _comparable(dask.pop("report"))
    for again in (threads.get("cached"), dask.get("cached")):
        if again is not None:
            other = _comparable(again.pop("report"))
            again["differ"] = [key for key in left if left[key] != other[key]]
    differ = [key for key in left if left[key] != right[key]]
    reviewed = left["stats"]["files_reviewed"] if left["stats"] else None
    return {"files": files, "reviewed": reviewed, "latency": latency, "nthreads": nthreads,
            "findings": len(left["findings"] or []), "threads": threads, "dask": dask,
            "equal": not differ, "differ": differ, "spread": len(dask["tasks"]) == 2,
            "netns": netns}  # fmt: skip


def _mb(count: int) -> str:
    return f"{count / 2**20:.2f} MB"


def show(r: dict[str, Any]) -> str:
    t, d = r["threads"], r["dask"]
    per = {w: sum(tasks.values()) for w, tasks in d["tasks"].items()}
    lines = [
        f"{r['files']} files ({r['reviewed']} reviewed), latency {r['latency']:g} s, "
        f"{r['findings']} findings",
        f"threads: exit {t['exit']}, wall {t['wall']:.1f} s, {t['requests']} model requests",
        f"dask (2 workers x {r['nthreads']} threads"
        f"{', in a network namespace' if r.get('netns') else ''}): exit {d['exit']}, "
        f"wall {d['wall']:.1f} s, "
        f"{d['requests']} model requests",
        *(_again(name, run) for name, run in (("threads", t), ("dask", d)) if run.get("cached")),
        f"tasks per worker: {per} (spread over both: {r['spread']})",
        *(f"  {worker}: {tasks}" for worker, tasks in d["tasks"].items()),
        f"reports equal on the compared keys: {r['equal']}"
        + (f" (differ: {', '.join(r['differ'])})" if r["differ"] else ""),
        f"shared store {_mb(d['store_bytes'])} (snapshot bundle {_mb(d['bundle_bytes'])})",
        f"task specs sent to the workers: {_mb(d['spec_total'])} in all; per task, mean and "
        f"max bytes: {d['spec_bytes']}",
        f"worker-to-worker transfers {d['transfer_bytes']} B; results held on the workers "
        f"(task stream nbytes) {_mb(d['result_bytes'])}",
    ]
    return "\n  ".join(lines)


def _again(name: str, run: dict[str, Any]) -> str:
    again = run["cached"]
    return (f"{name}, unchanged again (cached): exit {again['exit']}, wall {again['wall']:.1f} s, "
            f"{again['requests']} model requests, report differs from the first threads run "
            f"on: {', '.join(again['differ']) or 'nothing compared'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[200])
    parser.add_argument("--latency", type=float, default=0.5, help="model answer time, seconds")
    parser.add_argument("--nthreads", type=int, default=2, choices=[1, 2], help="per worker")
    parser.add_argument("--cached", action="store_true", help="and each review re-run cached")
    parser.add_argument("--netns", action="store_true", help="the cluster on another network")
    parser.add_argument("--json", type=Path, help="also append each result to this file")
    options = parser.parse_args()
    if shutil.which("unshare") is None or not _can_hide():
        raise SystemExit("skipped: hiding files from the workers needs `unshare --mount`")
    if options.netns and not available():
        raise SystemExit("skipped: --netns needs root, unshare, nsenter and ip")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up as on Ctrl-C
    for count in options.files:
        outcome = run(count, options.latency, options.nthreads, options.cached, options.netns)
        print(show(outcome), flush=True)
        if options.json:
            with options.json.open("a") as out:
                out.write(json.dumps(outcome) + "\n")


if __name__ == "__main__":
    main()
