"""Front half (diff + parse + filter + rules) on a 5,000-file range vs `git diff` alone.

Target: front half <= 2x the wall time of `git diff` on the same range; peak memory reported.
Each measurement runs in a fresh process; the median of several runs is reported.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import make_repo

FILES = 5000
RUNS = 5

FRONT_HALF = """
import json, resource, sys, time
start = time.perf_counter()
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import collect, select
import os
from pathlib import Path
imported = time.perf_counter()
request = ReviewRequest.from_flags(sys.argv[1], from_ref=sys.argv[2], to_ref=sys.argv[3],
    home=os.environ["REVIEWFLOW_HOME"])
change = collect(request, 3)
scope = select(change, request, 1 << 20)
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "work": time.perf_counter() - imported,
    "files": len(change.files),
    "kept": len(scope.selection.kept),
    "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def time_git_diff(repo: Path, base: str, head: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["git", "diff", "--no-ext-diff", "--no-textconv", "-M", "-C", f"{base}...{head}"],
        cwd=repo,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def time_front_half(repo: Path, base: str, head: str, env: dict[str, str]) -> dict[str, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", FRONT_HALF, str(repo), base, head],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    result["wall"] = time.perf_counter() - start
    return result


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rf-bench-front-"))
    try:
        repo = work / "repo"
        base, head = make_repo(repo, FILES)
        env = dict(os.environ, REVIEWFLOW_HOME=str(work / "home"))
        git_times = [time_git_diff(repo, base, head) for _ in range(RUNS)]
        runs = [time_front_half(repo, base, head, env) for _ in range(RUNS)]
        git_median = statistics.median(git_times)
        inner = statistics.median(r["seconds"] for r in runs)
        wall = statistics.median(r["wall"] for r in runs)
        print(f"files changed: {int(runs[0]['files'])}, kept: {int(runs[0]['kept'])}")
        print(f"git diff alone:             median {git_median:.3f} s")
        work = statistics.median(r["work"] for r in runs)
        print(f"front half, work only:      median {work:.3f} s  ({work / git_median:.2f}x)")
        print(f"front half, with imports:   median {inner:.3f} s  ({inner / git_median:.2f}x)")
        print(f"front half, whole process: median {wall:.3f} s  ({wall / git_median:.2f}x)")
        print(f"peak RSS of the front-half process: {max(r['maxrss_mb'] for r in runs):.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
