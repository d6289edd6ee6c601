"""Whole-review scheduling: a 40-file change, a scripted model answering in 300 ms, concurrency 8.

Target: wall time >= 90% efficient, where ideal = the requests' critical path at that
concurrency x latency (each file needs 2 sequential requests: read, then done; 80 requests over
8 slots = 10 rounds of 300 ms = 3.0 s). Also: an unchanged re-run makes zero model requests; its
wall time is reported.

Two figures per review: the whole `reviewflow review` call (front half, flow run, reports and
artifacts included), and the model span — from the first model request's arrival to the last
one's answer, as the model sees it — which isolates how well the model stages keep the 8 slots
busy. The reviews run in this process through the CLI against the managed local Prefect server,
started by an untimed warm-up review (a cold start is bench/overhead.py's business). The scripted
model runs in its own process, as a real one is remote: its HTTP handling does not compete with
the review for this process's interpreter lock. CPU is this process's (user + system). Medians.
"""

from __future__ import annotations

import json
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
LATENCY = 0.3
CONCURRENCY = 8
RUNS = 5


def paths() -> list[str]:
    return [f"pkg/mod{i:02d}.py" for i in range(FILES)]


def serve_model() -> None:
    """The scripted model, in a child process: prints its base URL, then answers each `stats`
    line on stdin with the request count, arrival times and most requests in flight so far."""
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import Delay, RecordedRequest, Reply, WireServer

    arrivals: list[float] = []

    class Slow(ScriptedReviewer):
        def __call__(self, record: RecordedRequest) -> Reply:
            arrivals.append(time.time())
            return Delay(LATENCY, super().__call__(record))

    with WireServer() as wire:
        wire.respond("openai", Slow({path: [] for path in paths()}))
        print(wire.base_url("openai"), flush=True)
        for _ in sys.stdin:
            stats = {"arrivals": arrivals, "max_in_flight": wire.max_in_flight}
            print(json.dumps(stats), flush=True)


class Model:
    """The scripted model's process, seen from the review's side."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--model"],
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


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    from flows.cli.main import main as cli
    from flows.local.control import stop_server
    from tests.gitutil import GitRepo
    from tests.wire_server import TEST_KEY

    work = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    os.environ["REVIEWFLOW_HOME"] = str(work / "home")
    repo = GitRepo.init(work / "repo")
    for path in paths():
        repo.write(path, "def f(x):\n    return x\n")
    repo.commit("base")
    for path in paths():
        repo.write(path, "def f(x):\n    return x + 1\n")
    repo.commit("change")
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    args += ["--concurrency", str(CONCURRENCY), "--no-progress"]
    model = Model()
    try:
        os.environ.update(
            REVIEWFLOW_MODEL_NAME="bench-model",
            REVIEWFLOW_MODEL_ENDPOINT=model.url,
            REVIEWFLOW_MODEL_API_KEY=TEST_KEY,
        )
        cli([*args, "--no-cache"])  # warm-up: imports, first API calls
        walls, spans, cpus, requests = [], [], [], 0
        for _ in range(RUNS):
            seen = len(model.stats()["arrivals"])  # type: ignore[arg-type]
            start, cpu = time.perf_counter(), _cpu()
            cli([*args, "--no-cache"])
            walls.append(time.perf_counter() - start)
            cpus.append(_cpu() - cpu)
            arrivals = model.stats()["arrivals"][seen:]  # type: ignore[index]
            requests = len(arrivals)
            spans.append(max(arrivals) + LATENCY - min(arrivals))
        seen = len(model.stats()["arrivals"])  # type: ignore[arg-type]
        start = time.perf_counter()
        cli(args)
        cached = time.perf_counter() - start
        cached_requests = len(model.stats()["arrivals"]) - seen  # type: ignore[arg-type]
        peak = model.stats()["max_in_flight"]
    finally:
        model.close()
        stop_server(work / "home")
    ideal = (requests / CONCURRENCY) * LATENCY
    wall, span = statistics.median(walls), statistics.median(spans)
    print(f"files {FILES}, requests per review {requests}, concurrency {CONCURRENCY}")
    print(
        f"ideal {ideal:.2f} s; whole review: median {wall:.2f} s (min {min(walls):.2f}, "
        f"max {max(walls):.2f}), efficiency {ideal / wall:.0%}, CPU {statistics.median(cpus):.2f} s"
    )
    print(
        f"model span: median {span:.2f} s (min {min(spans):.2f}, max {max(spans):.2f}), "
        f"efficiency {ideal / span:.0%}; max in flight {peak}"
    )
    print(f"unchanged re-run: {cached:.2f} s, {cached_requests} model requests")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    serve_model() if sys.argv[1:] == ["--model"] else main()
