"""The SAST pre-scan's cost (`--sast`): one semgrep run over a change's reviewed files.

Two changes: the 40-file change of bench/review_concurrency.py (one line changed in each of 40
Python files) and a 500-file synthetic range (bench/synth.py: 8 extensions, four edits per
file; the reviewed ones are scanned). Each is timed cold (empty SAST cache: the version check,
reading the new side, one semgrep run, the cache written) and warm (every file answered from
the cache: the version check and reading the new side only), as plain function calls after
imports, median of `--runs`. The pre-scan runs before any model request, so it adds to the
review's wall time one to one; the target compares it with the review's own overhead of the
40-file change (bench/RESULTS.md). Needs the pinned semgrep (`make dev`: .venv-sast).
"""

from __future__ import annotations

import argparse
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
    main(parser.parse_args().runs)
