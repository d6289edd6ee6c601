"""The Docker image's first review, without Docker: `server prepare` at build, then a review.

With the package installed as the image installs it (`deployments/docker/install.sh` in a fresh
venv: `--python build/image-venv/bin/python`, which `make image-check` builds and removes; build
it by hand to keep it), REPS times, interleaved:
- prepared: a fresh home, `reviewflow server prepare` timed (the image's build step), then a
  `reviewflow review --no-server-reuse` of a 3-file change (a one-shot container: it starts the
  server and stops it), the scripted model answering at once; it must not migrate (no
  "preparing the local Prefect database" note);
- first ever: the same review in a fresh home never prepared (what the image paid before).
Wall times, spawn to exit, with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from synth import make_small_change  # noqa: E402

from flows.local.api import PREPARING_NOTE  # noqa: E402

REPS = 2


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(  # from /: the installed package, never this source tree
        command, env=env, cwd="/", capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stderr


def main(python: Path, reps: int) -> None:
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import WireServer

    work = Path(tempfile.mkdtemp(prefix="rf-bench-image-"))
    repo = work / "repo"
    make_small_change(repo)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PREFECT_API_URL")}
    base.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    cli = str(python.parent / "reviewflow")  # the image's entrypoint
    prepare = [cli, "server", "prepare"]
    review = [cli, "review", "--repo", str(repo), "--no-cache"]
    review += ["--console", "off", "--no-progress", "--no-server-reuse"]
    prepares, prepared, first = [], [], []
    try:
        with WireServer() as wire:
            wire.respond("openai", ScriptedReviewer({}))
            base.update(
                REVIEWFLOW_MODEL_NAME="bench-model",
                REVIEWFLOW_MODEL_ENDPOINT=wire.base_url("openai"),
                REVIEWFLOW_MODEL_API_KEY="bench-key",
            )
            for rep in range(reps):
                for kind in ("prepared", "first") if rep % 2 == 0 else ("first", "prepared"):
                    env = {**base, "REVIEWFLOW_HOME": str(work / f"home-{kind}-{rep}")}
                    if kind == "prepared":
                        prepares.append(_timed(prepare, env)[0])
                        seconds, stderr = _timed(review, env)
                        assert PREPARING_NOTE.strip() not in stderr, stderr
                        prepared.append(seconds)
                    else:
                        seconds, stderr = _timed(review, env)
                        assert PREPARING_NOTE.strip() in stderr, stderr
                        first.append(seconds)
                print(
                    f"rep {rep + 1}: server prepare {prepares[-1]:.2f} s, then review "
                    f"{prepared[-1]:.2f} s (no migration); first-ever review {first[-1]:.2f} s; "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    print(
        f"server prepare: median {med(prepares):.2f} s; review after it: median "
        f"{med(prepared):.2f} s (min {min(prepared):.2f}); first-ever review: median "
        f"{med(first):.2f} s (min {min(first):.2f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", type=Path, default=ROOT / "build/image-venv/bin/python")
    parser.add_argument("--reps", type=int, default=REPS)
    options = parser.parse_args()
    main(options.python, options.reps)
