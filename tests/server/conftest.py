"""Servers started by these tests live under the session's temporary directory; any still
running when the session ends is killed (found by its command line, checked to be ours)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest


def server_pids(under: Path, modules: tuple[str, ...] = ("flows.local.server_main",)) -> list[int]:
    """Managed server processes (or others run as `modules`) whose home lies under `under`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(module in args for module in modules) and any(
            a.startswith(str(under)) for a in args
        ):
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="session", autouse=True)
def _kill_leftover_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    base = tmp_path_factory.getbasetemp()
    yield
    for pid in server_pids(base, ("flows.local.server_main", "flows.cli.warm")):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
