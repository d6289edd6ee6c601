"""Median wall time of `reviewflow review --preview` on a 3-file change (target: <= 1 s)."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import make_small_change

RUNS = 11


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rf-bench-preview-"))
    try:
        repo = work / "repo"
        make_small_change(repo)
        exe = shutil.which("reviewflow", path=str(Path(sys.executable).parent)) or "reviewflow"
        env = dict(os.environ, REVIEWFLOW_HOME=str(work / "home"))
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            subprocess.run(
                [exe, "review", "--preview", "--repo", str(repo)],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - start)
        print(
            f"preview, 3-file change, {RUNS} runs: median {statistics.median(times):.3f} s"
            f", min {min(times):.3f} s, max {max(times):.3f} s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
