"""The SAST pre-scan's cost (`--sast`): one semgrep run over a change's reviewed files.

Two changes: the 40-file change of bench/review_concurrency.py (one line changed in each of 40
Python files) and a 500-file synthetic range (bench/synth.py: 8 extensions, four edits per
file; the reviewed ones are scanned). Each is timed cold (empty SAST cache: the version check,
reading the new side, one semgrep run, the cache written) and warm (every file answered from
the cache: the version check and reading the new side only), as plain function calls after
imports, median of `--runs`. Needs the pinned semgrep (`make dev`: .venv-sast).

`--whole`: what `--sast` adds to a whole review of the 40-file change, which is what the target
(issue 20: <= 10% of the review's own overhead) is about. The CLI starts the pre-scan in a
thread while the review starts (`reviewflow.sast.early`), so only the part the flow's stage
still waits for delays the first model request. Reviews are handed to the warm review process
as `reviewflow review` hands them (bench/review_concurrency.py's runner and scripted model,
answering at once), `--no-cache` each (a cold pre-scan every time), with and without `--sast`
interleaved; per review: the time from the CLI's start to the first model request, and the
whole review. Medians of `--runs` pairs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from reviewflow.config import ReviewSettings  # noqa: E402
from reviewflow.request import ReviewRequest  # noqa: E402
from reviewflow.sast.scan import prescan  # noqa: E402
from reviewflow.select.scope import Scope, collect, select  # noqa: E402
from tests.sast.conftest import find_semgrep  # noqa: E402


def scope_of(repo: Path, home: Path, **flags: str) -> Scope:
    request = ReviewRequest.from_flags(str(repo), home=str(home), **flags)
    return select(collect(request, 3), request, 1 << 20)


def timed(scope: Scope, settings: ReviewSettings, home: Path, refresh: bool) -> float:
    start = time.perf_counter()
    scan = prescan(scope, settings, str(home), refresh=refresh)
    elapsed = time.perf_counter() - start
    assert scan.reused == (0 if refresh else scan.files), scan
    return elapsed


def measure(name: str, scope: Scope, settings: ReviewSettings, home: Path, runs: int) -> None:
    cold = [timed(scope, settings, home, refresh=True) for _ in range(runs)]
    warm = [timed(scope, settings, home, refresh=False) for _ in range(runs)]
    files = len(scope.selection.kept)
    for label, values in (("cold", cold), ("warm", warm)):
        print(
            f"{name}: {files} files reviewed, {label}: median {statistics.median(values):.2f} s "
            f"(min {min(values):.2f}, max {max(values):.2f})"
        )


def whole(runs: int) -> None:
    import review_concurrency as bench

    from flows.cli.main import main as cli
    from flows.local.control import stop_server
    from tests.wire_server import TEST_KEY

    semgrep = find_semgrep()
    if semgrep is None:
        raise SystemExit("semgrep is not installed: `make dev` installs the pinned one")
    work = Path(tempfile.mkdtemp(prefix="rf-bench-sast-whole-"))
    home = work / "home"
    os.environ["REVIEWFLOW_HOME"] = str(home)
    assert cli(["config", "set", "review.sast_semgrep", semgrep]) == 0
    runner, model = bench.Warm(home), bench.Model(0.0)
    args = ["review", "--repo", str(bench.make_change(work / "repo")), "--commit", "HEAD"]
    args += ["--console", "off", "--concurrency", str(bench.CONCURRENCY), "--no-progress"]
    args += ["--no-cache"]
    env = {
        "REVIEWFLOW_MODEL_NAME": "bench-model",
        "REVIEWFLOW_MODEL_ENDPOINT": model.url,
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
    }
    figures: dict[str, list[tuple[float, float]]] = {"without": [], "with --sast": []}
    try:
        runner.review([*args, "--sast"], env)  # warm-up: the server, the warm process
        runner.wait_ready()
        for _ in range(runs):
            for label, extra in (("without", []), ("with --sast", ["--sast"])):
                seen = len(model.stats()["arrivals"])  # type: ignore[arg-type]
                start = time.time()
                runner.review([*args, *extra], env)
                wall = time.time() - start
                first = min(model.stats()["arrivals"][seen:])  # type: ignore[index]
                figures[label].append((first - start, wall))
    finally:
        model.close()
        stop_server(home)
    for label, values in figures.items():
        firsts, walls = [v[0] for v in values], [v[1] for v in values]
        print(
            f"{label}: first model request after {statistics.median(firsts):.3f} s "
            f"(min {min(firsts):.3f}, max {max(firsts):.3f}); whole review "
            f"{statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f})"
        )
    added = [w[0] - wo[0] for wo, w in zip(figures["without"], figures["with --sast"], strict=True)]
    print(
        f"added before the first request, per pair: median {statistics.median(added):.3f} s "
        f"(min {min(added):.3f}, max {max(added):.3f}); load average {os.getloadavg()[0]:.1f}"
    )


def main(runs: int) -> None:
    import review_concurrency
    import synth

    semgrep = find_semgrep()
    if semgrep is None:
        raise SystemExit("semgrep is not installed: `make dev` installs the pinned one")
    settings = ReviewSettings(sast=True, sast_semgrep=semgrep)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-sast-"))
    home = work / "home"
    forty = review_concurrency.make_change(work / "forty")
    measure("40-file change", scope_of(forty, home, commit="HEAD"), settings, home, runs)
    base, head = synth.make_repo(work / "big", 500)
    big = scope_of(work / "big", home, from_ref=base, to_ref=head)
    measure("500-file change", big, settings, home, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--whole", action="store_true", help="what --sast adds to a whole review")
    options = parser.parse_args()
    (whole if options.whole else main)(options.runs)
