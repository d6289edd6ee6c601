"""Whole-review scheduling: a 40-file change, a scripted model answering in `--latency` seconds
(default 2 s, a realistic tool-calling answer time; 0.3 s is the stress run), concurrency 8.

Ideal = the requests' critical path at that concurrency x latency (each file needs 2 sequential
requests: read, then done; 80 requests over 8 slots = 10 rounds: 20 s at 2 s, 3.0 s at 0.3 s).
Target (issue 17): the model span >= 95% of ideal at 2 s; the 0.3 s figure is recorded, not a
target. Also: an unchanged re-run makes zero model requests; its wall time is reported.

Two figures per review: the whole `reviewflow review` call (front half, flow run, reports and
artifacts included), and the model span — from the first model request's arrival to the last
one's answer, as the model sees it — which isolates how well the model stages keep the 8 slots
busy. The reviews run in this process through the CLI against the managed local Prefect server,
started by an untimed warm-up review (a cold start is bench/overhead.py's business). The scripted
model runs in its own process, as a real one is remote: its HTTP handling does not compete with
the review for this process's interpreter lock. Medians.

CPU per model request: the CPU (user + system, `getrusage`, git's subprocesses included) of the
process that runs the review flow, after its imports, divided by the review's model requests.
By default that is the warm review process's forked child, as for a local `reviewflow review`:
each review is a `python -m flows.review` process handed over to the warm process (started by
the warm-up review), and the child, which starts from the warm process's imports and
preparation, logs its own CPU in `warm.log` when it ends. With `--in-process` the reviews run in
this process instead (`--no-warm`), after the warm-up review made every import; its CPU is read
around each review's call (handy under py-spy).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")

FILES = 40
CONCURRENCY = 8


def paths() -> list[str]:
    return [f"pkg/mod{i:02d}.py" for i in range(FILES)]


def serve_model(latency: float) -> None:
    """The scripted model, in a child process: prints its base URL, then answers each `stats`
    line on stdin with the request count, arrival times and most requests in flight so far."""
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import Delay, RecordedRequest, Reply, WireServer

    arrivals: list[float] = []

    class Slow(ScriptedReviewer):
        def __call__(self, record: RecordedRequest) -> Reply:
            arrivals.append(time.time())
            return Delay(latency, super().__call__(record))

    with WireServer() as wire:
        wire.respond("openai", Slow({path: [] for path in paths()}))
        print(wire.base_url("openai"), flush=True)
        for _ in sys.stdin:
            stats = {"arrivals": arrivals, "max_in_flight": wire.max_in_flight}
            print(json.dumps(stats), flush=True)


class Model:
    """The scripted model's process, seen from the review's side."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--model", "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def stats(self) -> dict[str, object]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        stats: dict[str, object] = json.loads(self.process.stdout.readline())
        return stats

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    """This process's CPU (or its finished children's: git), user + system."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class InProcess:
    """Reviews run here, through the CLI's code (`--no-warm`): CPU read around each call."""

    where = "this bench process (--in-process, --no-warm)"

    def __init__(self, home: Path) -> None:
        from flows.cli.main import main as cli

        self.cli = cli
        self.git: list[float] = []  # the CPU of each review's git subprocesses
        os.environ["REVIEWFLOW_HOME"] = str(home)

    def review(self, args: list[str], env: dict[str, str]) -> float:
        os.environ.update(env)
        cpu, git = _cpu(), _cpu(resource.RUSAGE_CHILDREN)
        assert self.cli([*args, "--no-warm"]) == 0
        self.git.append(_cpu(resource.RUSAGE_CHILDREN) - git)
        return _cpu() - cpu + self.git[-1]


class Warm:
    """Reviews handed to the warm review process (`python -m flows.review`, as `reviewflow
    review`): the CPU is its forked child's, from the line it logs in `warm.log` when it ends."""

    where = "the warm review process's forked child (from warm.log)"

    def __init__(self, home: Path) -> None:
        self.home = home

    def review(self, args: list[str], env: dict[str, str]) -> float:
        seen = self._children()
        command = [sys.executable, "-m", "flows.review", *args[1:]]
        full = {**os.environ, **env, "REVIEWFLOW_HOME": str(self.home), "PYTHONPATH": str(ROOT)}
        subprocess.run(command, env=full, check=True, stdout=subprocess.DEVNULL)
        children = self._children()[len(seen) :]
        if len(children) != 1:  # the warm-up starts the warm process; each review is handed over
            return math.nan
        return float(children[0].split("CPU ")[1].split()[0])

    def _log(self) -> Path | None:
        """The running warm process's log (None when none runs)."""
        from flows.local.settings import prefect_home
        from flows.local.warm import state as warm
        from flows.local.warm.sockets import install_key

        phome = prefect_home(self.home)
        state = warm.read_warm(phome, install_key())
        if state is None or state.off or state not in warm.running_warm(phome):
            return None
        return Path(state.log)

    def _children(self) -> list[str]:
        log = self._log()
        if log is None or not log.exists():
            return []
        return [line for line in log.read_text().splitlines() if line.startswith("review pid")]

    def wait_ready(self) -> None:
        """Until the warm process accepts hand-overs (its imports take seconds after a run)."""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            log = self._log()
            if log is not None and log.exists() and "serving on" in log.read_text():
                return
            time.sleep(0.2)
        raise SystemExit("no warm process started")


def make_change(root: Path) -> Path:
    """A repository whose last commit changes one line in each of the FILES files."""
    from tests.gitutil import GitRepo

    repo = GitRepo.init(root)
    for path in paths():
        repo.write(path, "def f(x):\n    return x\n")
    repo.commit("base")
    for path in paths():
        repo.write(path, "def f(x):\n    return x + 1\n")
    repo.commit("change")
    return repo.root


def main(latency: float, runs: int, in_process: bool) -> None:
    from flows.local.control import stop_server
    from tests.wire_server import TEST_KEY

    work = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    home = work / "home"
    runner: InProcess | Warm = InProcess(home) if in_process else Warm(home)
    args = ["review", "--repo", str(make_change(work / "repo")), "--commit", "HEAD"]
    args += ["--console", "off", "--concurrency", str(CONCURRENCY), "--no-progress"]
    model = Model(latency)
    try:
        env = {
            "REVIEWFLOW_MODEL_NAME": "bench-model",
            "REVIEWFLOW_MODEL_ENDPOINT": model.url,
            "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
        }
        runner.review([*args, "--no-cache"], env)  # warm-up: imports, first API calls
        if isinstance(runner, Warm):
            runner.wait_ready()
        walls, spans, cpus, ends, requests = [], [], [], [], 0
        for _ in range(runs):
            seen = len(model.stats()["arrivals"])  # type: ignore[arg-type]
            start = time.time()
            cpus.append(runner.review([*args, "--no-cache"], env))
            walls.append(time.time() - start)
            arrivals = model.stats()["arrivals"][seen:]  # type: ignore[index]
            requests = len(arrivals)
            spans.append(max(arrivals) + latency - min(arrivals))
            ends.append((min(arrivals) - start, start + walls[-1] - max(arrivals) - latency))
        seen = len(model.stats()["arrivals"])  # type: ignore[arg-type]
        start = time.perf_counter()
        runner.review(args, env)
        cached = time.perf_counter() - start
        cached_requests = len(model.stats()["arrivals"]) - seen  # type: ignore[arg-type]
        peak = model.stats()["max_in_flight"]
    finally:
        model.close()
        stop_server(home)
    report(latency, runs, requests, walls, spans, cpus, runner.where)
    if isinstance(runner, InProcess):
        print(f"  of which git subprocesses: median {statistics.median(runner.git[1:-1]):.2f} s")
    before, after = (statistics.median(end[i] for end in ends) for i in (0, 1))
    print(f"outside the model span: {before:.2f} s before the first request, {after:.2f} s after")
    print(f"max in flight {peak}; unchanged re-run: {cached:.2f} s, {cached_requests} requests")
    print(f"load average {os.getloadavg()[0]:.1f}")


def report(
    latency: float,
    runs: int,
    requests: int,
    walls: list[float],
    spans: list[float],
    cpus: list[float],
    where: str,
) -> None:
    ideal = (requests / CONCURRENCY) * latency
    wall, span, cpu = statistics.median(walls), statistics.median(spans), statistics.median(cpus)
    print(f"files {FILES}, latency {latency:g} s, requests per review {requests}, "
          f"concurrency {CONCURRENCY}, {runs} runs")  # fmt: skip
    print(
        f"ideal {ideal:.2f} s; whole review: median {wall:.2f} s (min {min(walls):.2f}, "
        f"max {max(walls):.2f}), efficiency {ideal / wall:.0%}"
    )
    print(
        f"model span: median {span:.2f} s (min {min(spans):.2f}, max {max(spans):.2f}), "
        f"efficiency {ideal / span:.1%}"
    )
    print(
        f"CPU per review in {where}: median {cpu:.2f} s (min {min(cpus):.2f}, "
        f"max {max(cpus):.2f}); per model request {cpu / requests * 1000:.1f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=2.0, help="model answer time, seconds")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--in-process", action="store_true", help="reviews in this process")
    parser.add_argument("--model", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.model:
        serve_model(options.latency)
    else:
        main(options.latency, options.runs, options.in_process)
