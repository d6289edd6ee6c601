"""What one hand-over to the warm review process costs, on each side (issue 17).

A whole `reviewflow review --no-cache` of a 3-file change against the wire-level test model
answering at once is handed over RUNS times to one warm process; measured:
- the CLI process (the `reviewflow` command): wall and CPU time, from its own rusage;
- the warm process itself (not its children): CPU time per hand-over, from /proc/PID/stat
  before and after (what it does between accept and fork: checks, then the fork);
- with `--checks`, in this process, the checks alone, timed in a loop: the warm process's
  checks before a fork (peer uid, threads, its code manifest built after the imports a warm
  process makes), and the CLI's keys that replaced the old source-tree fingerprint.
Run with `python bench/handover.py [--checks]`; what it starts is stopped at the end.
"""

from __future__ import annotations

import os
import re
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

RUNS = 15
_TICK = os.sysconf("SC_CLK_TCK")


def _status(env: dict[str, str]) -> int | None:
    """The warm process's pid from `reviewflow server status`, if one runs."""
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "server", "status"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"warm review process: pid (\d+)", done.stdout)
    return int(found.group(1)) if found else None


def _own_cpu(pid: int) -> float:
    """A process's own CPU seconds (user + system), its children's excluded."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"review failed: {err.decode()[-2000:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import WireServer

    work = Path(tempfile.mkdtemp(prefix="rf-bench-handover-"))
    repo, home = work / "repo", work / "home"
    make_small_change(repo)
    env = {**os.environ, "REVIEWFLOW_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("PREFECT_API_URL", None)
    try:
        with WireServer() as wire:
            wire.respond("openai", ScriptedReviewer({}))
            env.update(
                REVIEWFLOW_MODEL_PROTOCOL="openai",
                REVIEWFLOW_MODEL_NAME="bench-model",
                REVIEWFLOW_MODEL_ENDPOINT=wire.base_url("openai"),
                REVIEWFLOW_MODEL_API_KEY="bench-key",
            )
            review = [sys.executable, "-m", "flows.cli", "review", "--repo", str(repo)]
            review += ["--no-cache", "--console", "off", "--no-progress"]
            _timed(review, env)  # in-process; starts the warm process
            deadline, pid = time.monotonic() + 300, None
            while pid is None and time.monotonic() < deadline:
                time.sleep(0.5)
                pid = _status(env)
            assert pid is not None, "no warm process"
            time.sleep(3)  # its imports and preparation are done once its socket is there
            _timed(review, env)  # the first hand-over
            walls, cpus, warm = [], [], []
            for _ in range(RUNS):
                before = _own_cpu(pid)
                wall, cpu = _timed(review, env)
                warm.append(_own_cpu(pid) - before)
                walls.append(wall)
                cpus.append(cpu)
            assert _status(env) == pid, "the reviews were not all handed to one warm process"
            print(
                f"CLI process of a review handed over: wall median {statistics.median(walls):.3f} s"
                f" (min {min(walls):.3f}), CPU median {statistics.median(cpus) * 1000:.0f} ms "
                f"(min {min(cpus) * 1000:.0f}); the warm process's own CPU per hand-over: "
                f"mean {statistics.mean(warm) * 1000:.1f} ms ({RUNS} runs, clock ticks of "
                f"{1000 / _TICK:.0f} ms), load {os.getloadavg()[0]:.1f}"
            )
    finally:
        subprocess.run(
            [sys.executable, "-m", "flows.cli", "server", "stop"], env=env, capture_output=True,
            check=False,
        )  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)


def checks() -> None:
    """The per-hand-over checks alone, in this process (median of 200 runs each)."""
    import timeit

    from flows.local.warm import prep
    from flows.local.warm.manifest import CodeManifest

    prep.prepare_run(None, tuple(prep.BUILTIN))  # what a warm process imports
    manifest = CodeManifest.of_this_process()
    runs = [t / 20 for t in timeit.repeat(manifest.changed, number=20, repeat=10)]
    print(
        f"manifest check: median {statistics.median(runs) * 1000:.2f} ms "
        f"({len(manifest.files)} files, {len(manifest.directories)} directories, "
        f"{len(sys.modules)} modules)"
    )
    import socket

    from flows.local.settings import prefect_version
    from flows.local.warm.main import refusal
    from flows.local.warm.sockets import install_key, peer_uid

    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        runs = [
            t / 20 for t in timeit.repeat(lambda: refusal(left, manifest), number=20, repeat=10)
        ]
        print(
            f"the warm process's checks before a fork (peer uid, threads, manifest): median "
            f"{statistics.median(runs) * 1000:.2f} ms"
        )
        runs = [t / 200 for t in timeit.repeat(lambda: peer_uid(left), number=200, repeat=10)]
        print(f"  of which the peer uid: median {statistics.median(runs) * 1e6:.1f} us")
    keyed = [
        t / 50
        for t in timeit.repeat(lambda: (install_key(), prefect_version()), number=50, repeat=10)
    ]
    print(
        "the CLI's keys (install, Prefect version) that replace the old source-tree fingerprint: "
        f"median {statistics.median(keyed) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    checks() if "--checks" in sys.argv else main()
