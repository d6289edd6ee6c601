"""Where a review's memory grows with its files (issue 40): a whole review of N changed files
(`bench/synth.py`, the scripted model of `bench/scale.py`), run in this process (`--no-warm`)
under `tracemalloc` (the allocating line only), which a sampler thread reads every `--every`
seconds; the snapshot taken
at the highest traced size is kept, and its largest allocation sites (by line, and by file)
are printed with the peak RSS. Run it at two sizes (`--files 500 1000`, each in its own process)
and compare: what doubles with the files is what the review holds per file.

tracemalloc slows the review several times; its figures are Python's allocations only (RSS
includes the interpreter, the libraries and what the allocator keeps)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from scale import CODE, Model  # noqa: E402
from synth import make_repo  # noqa: E402


class Sampler(threading.Thread):
    """Keeps the snapshot taken at the highest traced size seen."""

    def __init__(self, every: float) -> None:
        super().__init__(daemon=True)
        self.every, self.stop = every, threading.Event()
        self.best: tracemalloc.Snapshot | None = None
        self.best_size = 0

    def run(self) -> None:
        while not self.stop.wait(self.every):
            size = tracemalloc.get_traced_memory()[0]
            if size > self.best_size:
                self.best_size, self.best = size, tracemalloc.take_snapshot()


def review(files: int, every: float, top: int) -> dict[str, object]:
    from tests.wire_server import TEST_KEY

    work = Path(tempfile.mkdtemp(prefix=f"rf-mem-{files}-"))
    repo = work / "repo"
    base, head = make_repo(repo, files)
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", head],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    model = Model(0.0, sorted(p for p in listing if p.endswith(CODE)), work, 1)
    os.environ.update({"REVIEWFLOW_HOME": str(work / "home"), "REVIEWFLOW_MODEL_NAME": "bench",
                       "REVIEWFLOW_MODEL_ENDPOINT": model.url,
                       "REVIEWFLOW_MODEL_API_KEY": TEST_KEY})  # fmt: skip
    os.environ.pop("PREFECT_API_URL", None)
    from flows.cli.start import run

    args = ["review", "--no-warm", "--console", "off", "--no-progress", "--no-cache"]
    args += ["--repo", str(repo), "--from", base, "--to", head, "--report-dir", str(work / "out")]
    sampler = Sampler(every)
    tracemalloc.start(1)  # the allocating line only: deeper tracebacks slow it more
    sampler.start()
    try:
        run(args)
    except SystemExit:
        pass
    finally:
        sampler.stop.set()
        sampler.join()
        model.close()
        from flows.local.control import stop_server

        stop_server(work / "home")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sampler.best is not None
    lines = sampler.best.statistics("lineno")[:top]
    by_file = sampler.best.statistics("filename")[:top]
    return {
        "files": files,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "traced_peak_mb": peak / 2**20,
        "snapshot_mb": sampler.best_size / 2**20,
        "by_line": [f"{s.size / 2**20:8.2f} MB {s.count:8d}  {s.traceback[0]}" for s in lines],
        "by_file": [f"{s.size / 2**20:8.2f} MB {s.count:8d}  {s.traceback[0]}" for s in by_file],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--every", type=float, default=10.0, help="sampling period, seconds")
    parser.add_argument("--top", type=int, default=25)
    options = parser.parse_args()
    outcome = review(options.files, options.every, options.top)
    print(json.dumps({k: v for k, v in outcome.items() if not isinstance(v, list)}))
    for key in ("by_line", "by_file"):
        print(key)
        for line in outcome[key]:  # type: ignore[attr-defined]
            print(" ", line)
