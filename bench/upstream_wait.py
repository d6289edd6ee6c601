"""Why `flows/stages.py` submits a stage only once its inputs are done, instead of passing
Prefect futures: a task submitted with an upstream future takes a worker of the thread pool and
blocks it until the future resolves, so ready work waits behind it.

Two workers; one slow task (1 s); then, in the second mode, two tasks that take its future;
then an independent quick task. Printed: when the quick task started.

    python bench/upstream_wait.py     (starts Prefect's temporary server: ~10-30 s)
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.testing.utilities import prefect_test_harness

SLOW_S = 1.0
_start = [0.0]


@task
def slow() -> int:
    time.sleep(SLOW_S)
    return 1


@task
def after(value: int) -> int:
    return value


@task
def quick() -> float:
    return time.perf_counter() - _start[0]


@flow(task_runner=ThreadPoolTaskRunner(max_workers=2))
def pipeline(with_futures: bool) -> float:
    _start[0] = time.perf_counter()
    upstream = slow.submit()
    waiting = [after.submit(upstream) for _ in range(2)] if with_futures else []
    started = quick.submit().result()
    upstream.result()
    for future in waiting:
        future.result()
    return started


def main() -> None:
    with prefect_test_harness(server_startup_timeout=120):
        pipeline(False)  # warm-up
        for with_futures in (False, True):
            started = pipeline(with_futures)
            what = "two tasks given its future" if with_futures else "nothing waiting"
            print(f"{what}: the independent task started after {started:.2f} s")


if __name__ == "__main__":
    main()
