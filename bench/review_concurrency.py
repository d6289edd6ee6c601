"""Whole-review scheduling: a 40-file change, a scripted model answering in 300 ms, concurrency 8.

Target: wall time of the model stages >= 90% efficient, where ideal = the requests' critical path
at that concurrency x latency (each file needs 2 sequential requests: read, then done; 80
requests over 8 slots = 10 rounds of 300 ms = 3.0 s). Also: an unchanged re-run makes zero
model requests; its wall time is reported.

The reviews run in this process through the CLI against the managed local Prefect server,
started by an untimed warm-up review (a cold start is bench/overhead.py's business). Medians.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")

FILES = 40
LATENCY = 0.3
CONCURRENCY = 8
RUNS = 3


def main() -> None:
    from flows.cli import main as cli
    from flows.local_server import stop_server
    from tests.flows.reviewer import ScriptedReviewer
    from tests.gitutil import GitRepo
    from tests.wire_server import TEST_KEY, Delay, RecordedRequest, Reply, WireServer

    class Slow(ScriptedReviewer):
        def __call__(self, record: RecordedRequest) -> Reply:
            return Delay(LATENCY, super().__call__(record))

    work = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    os.environ["REVIEWFLOW_HOME"] = str(work / "home")
    repo = GitRepo.init(work / "repo")
    paths = [f"pkg/mod{i:02d}.py" for i in range(FILES)]
    for path in paths:
        repo.write(path, "def f(x):\n    return x\n")
    repo.commit("base")
    for path in paths:
        repo.write(path, "def f(x):\n    return x + 1\n")
    repo.commit("change")
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    args += ["--concurrency", str(CONCURRENCY), "--no-progress"]
    with WireServer() as wire:
        wire.respond("openai", Slow({path: [] for path in paths}))
        os.environ.update(
            REVIEWFLOW_MODEL_NAME="bench-model",
            REVIEWFLOW_MODEL_ENDPOINT=wire.base_url("openai"),
            REVIEWFLOW_MODEL_API_KEY=TEST_KEY,
        )
        cli([*args, "--no-cache"])  # warm-up: imports, first API calls
        fresh, requests = [], 0
        for _ in range(RUNS):
            before = len(wire.requests())
            start = time.perf_counter()
            cli([*args, "--no-cache"])
            fresh.append(time.perf_counter() - start)
            requests = len(wire.requests()) - before
        before = len(wire.requests())
        start = time.perf_counter()
        cli(args)
        cached = time.perf_counter() - start
        cached_requests = len(wire.requests()) - before
        peak = wire.max_in_flight
    stop_server(work / "home")
    ideal = (requests / CONCURRENCY) * LATENCY
    median = statistics.median(fresh)
    print(f"files {FILES}, requests per review {requests}, concurrency {CONCURRENCY}")
    print(
        f"ideal {ideal:.2f} s; measured median {median:.2f} s (min {min(fresh):.2f}, "
        f"max {max(fresh):.2f}); efficiency {ideal / median:.0%}; max in flight {peak}"
    )
    print(f"unchanged re-run: {cached:.2f} s, {cached_requests} model requests")


if __name__ == "__main__":
    main()
