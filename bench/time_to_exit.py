"""Time from a signal to the review's exit (issue 18), with two busy loops beside it.

A review of a one-file change with every model stage (the stop tests' `StopReviewer` on the
wire-level test model: the chosen stage's requests hang) is sent SIGINT, SIGTERM, or SIGINT
twice 50 ms apart, at each point of its life, reached by waiting for what can be seen: the
CLI's handlers in place, a request of each model stage at the model, a retry's delay (after a
500), the reports being written (a FIFO report); in the CLI's process (`--no-warm`) also a cold
server start and a home's first-ever migration. Once through the warm review process, once in
the CLI's process. Timed: from the first signal to the CLI's exit (`tests.server.stopping`).
Every run must exit 130. Prints one Markdown row per mode, with the max over the points.

Run with `python bench/time_to_exit.py [--no-load] [--kinds SIGINT,SIGTERM,twice]`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
os.environ.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
os.environ.pop("PREFECT_API_URL", None)

from flows.local.api import PREPARING_NOTE  # noqa: E402
from flows.local.process import DATABASE_FILE, is_ours, read_state, stop_process  # noqa: E402
from flows.local.settings import prefect_home  # noqa: E402
from flows.local.warm import state as warm  # noqa: E402
from flows.local.warm.sockets import install_key  # noqa: E402
from tests.server.stopping import Reviews, Run, fifo_drained  # noqa: E402
from tests.wire_server import WireServer  # noqa: E402

KINDS = {
    "SIGINT": (signal.SIGINT,),
    "SIGTERM": (signal.SIGTERM,),
    "twice": (signal.SIGINT, signal.SIGINT),
}
STAGES = ("plan", "main", "relocate", "filter", "verify_answer", "localize")
STAGE_FLAGS = {"localize": ("--language", "de"), "verify_answer": ("--verify",)}


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` processes that loop on the CPU for as long as the block runs."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


class Bench(Reviews):
    def __init__(self, root: Path, wire: WireServer, runtime: Path) -> None:
        super().__init__(root, wire, runtime)
        self.homes = 0
        self.times: dict[tuple[str, str, str], float] = {}

    def warm_pid(self) -> int | None:
        state = warm.read_warm(self.phome, install_key())
        if state is None or state not in warm.running_warm(self.phome):
            return None
        log = Path(state.log)
        return state.pid if log.exists() and "serving on" in log.read_text() else None

    def ensure_warm(self) -> None:
        if self.warm_pid() is None:
            self.reset()
            self.review()
            deadline = time.monotonic() + 240
            while self.warm_pid() is None:
                assert time.monotonic() < deadline, "no warm process"
                time.sleep(0.2)

    def fresh_home(self, template: Path | None) -> Path:
        self.homes += 1
        home = self.root / f"home-{self.homes}"
        (prefect_home(home)).mkdir(parents=True)
        if template is not None:
            for part in prefect_home(template).glob(DATABASE_FILE + "*"):
                shutil.copy2(part, prefect_home(home) / part.name)
        return home

    def point(
        self, mode: str, name: str, kind: str, reach: Callable[[Run], Callable[[], bool]],
        *flags: str, home: Path | None = None, drain: Path | None = None, fail_once: bool = False,
    ) -> None:  # fmt: skip
        self.reset()
        self.reviewer.fail_once = fail_once
        if mode == "warm":
            self.ensure_warm()
        extra = {"REVIEWFLOW_HOME": str(home)} if home is not None else {}
        run = self.start(*(("--no-warm",) if mode == "in-process" else ()), *flags, **extra)
        try:
            run.wait_for(reach(run), name)
            with contextlib.ExitStack() as draining:  # a FIFO report is read after the signal
                fifo = None if drain is None else fifo_drained(drain)
                then = None if fifo is None else lambda: draining.enter_context(fifo)
                ended = run.interrupt(KINDS[kind], then=then)
        finally:
            self.reset()
            if home is not None:
                state = read_state(prefect_home(home))
                if state is not None:
                    stop_process(state)
        if ended.code == 1 and drain is not None and not ended.stderr:  # see test_stop_warm
            print(f"{mode:10} {name:12} {kind:8} reported before the signal reached it")
            return
        if ended.code != 130:
            raise SystemExit(f"{mode} {name} {kind}: exit {ended.code}: {ended.stderr}")
        self.times[(mode, name, kind)] = ended.seconds
        print(f"{mode:10} {name:12} {kind:8} {ended.seconds:.2f} s", flush=True)


def points(bench: Bench, mode: str, kind: str, template: Path) -> None:
    bench.point(mode, "start-up", kind, lambda run: run.handlers_in_place)
    for stage in STAGES:
        flags = STAGE_FLAGS.get(stage, ())
        bench.point(mode, stage, kind, lambda run, s=stage: bench.stage(s), *flags)

    def retry(run: Run) -> Callable[[], bool]:
        return lambda: bench.reviewer.failed.is_set() and bench.wire.in_flight <= left

    left = bench.wire.in_flight  # hanging requests of earlier points, abandoned by their review
    bench.point(mode, "retry delay", kind, retry, fail_once=True)
    fifo = bench.root / f"report-{mode}-{kind}.md"
    os.mkfifo(fifo, 0o600)
    bench.point(
        mode, "reports", kind, lambda run: run.report_path.exists, "--markdown", str(fifo),
        drain=fifo,
    )  # fmt: skip
    if mode != "in-process":
        return
    home = bench.fresh_home(template)

    def booting(run: Run) -> Callable[[], bool]:
        def check() -> bool:
            state = read_state(prefect_home(home))
            return state is not None and not state.prefect_version and is_ours(state)

        return check

    bench.point(mode, "cold start", kind, booting, home=home)
    empty = bench.fresh_home(None)
    database = prefect_home(empty) / DATABASE_FILE

    def migrating(run: Run) -> Callable[[], bool]:
        return lambda: PREPARING_NOTE in run.stderr and database.exists()

    bench.point(mode, "migration", kind, migrating, home=empty)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-load", action="store_true", help="without the two busy loops")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--modes", default="warm,in-process")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rf-bench-exit-"))
    runtime = Path(tempfile.mkdtemp(prefix="rf-exit-", dir="/tmp"))
    bench: Bench | None = None
    try:
        with WireServer() as wire, busy_loops(0 if args.no_load else 2):
            bench = Bench(work, wire, runtime)
            template = work / "template"
            done = subprocess.run(
                [sys.executable, "-m", "flows.cli", "server", "prepare"],
                env={**bench.env(), "REVIEWFLOW_HOME": str(template)}, capture_output=True,
                text=True, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            for mode in args.modes.split(","):
                for kind in args.kinds.split(","):
                    points(bench, mode, kind, template)
            load = os.getloadavg()[0]
        report(bench, load, not args.no_load)
    finally:
        if bench is not None:
            subprocess.run(
                [sys.executable, "-m", "flows.cli", "server", "stop"], env=bench.env(),
                capture_output=True, check=False,
            )  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


def report(bench: Bench, load: float, loaded: bool) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
        check=False,
    ).stdout.strip()  # fmt: skip
    beside = "two busy loops beside it" if loaded else "no load added"
    for mode in dict.fromkeys(m for m, _, _ in bench.times):
        cells = []
        for kind in KINDS:
            times = {p: s for (m, p, k), s in bench.times.items() if m == mode and k == kind}
            if not times:
                continue
            worst = max(times, key=times.__getitem__)
            cells.append(
                f"{kind}: max **{times[worst]:.2f} s** ({worst}), median "
                f"{statistics.median(times.values()):.2f} s"
            )
        points_seen = sorted({p for (m, p, _), _ in bench.times.items() if m == mode})
        print(
            f"| {time.strftime('%Y-%m-%d')} | {commit} | **issue 18: time from signal to exit**, "
            f"{mode} (`bench/time_to_exit.py`, {beside}, load {load:.1f}; points: "
            f"{', '.join(points_seen)}; from the first signal to the CLI's exit) | ≤ 5 s | "
            f"{'; '.join(cells)} | "
            f"{'yes' if max(s for (m, _, _), s in bench.times.items() if m == mode) <= 5 else 'no'}"
            " |"
        )


if __name__ == "__main__":
    main()
