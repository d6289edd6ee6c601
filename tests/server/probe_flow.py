"""A trivial flow with one task and one artifact, run against whatever PREFECT_API_URL names.

Used by tests/server (is everything visible on the managed server?) and bench/overhead.py.
"""

from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings


@task
def double(value: int) -> int:
    return 2 * value


@flow(name="server-probe")
def probe() -> int:
    create_markdown_artifact("probe ran", key="server-probe")
    return double(21)


if __name__ == "__main__":
    import gc

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        print(probe())
    gc.freeze()
