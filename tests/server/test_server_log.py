"""The managed server's log: a new server never overwrites the previous one's lines."""

from __future__ import annotations

import os
from pathlib import Path

from flows.local.process import LOG_FILE, LOG_KEPT_BYTES, LOGS_KEPT, rotate_log, spawn, stop_process


def test_the_last_five_logs_are_kept_each_bounded(tmp_path: Path) -> None:
    log = tmp_path / LOG_FILE
    for start in range(7):
        rotate_log(log)
        log.write_text(f"server {start}\n")
    rotate_log(log)
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f"{LOG_FILE}.{n}" for n in range(1, LOGS_KEPT + 1)]
    assert [(tmp_path / f"{LOG_FILE}.{n}").read_text() for n in (1, 5)] == [
        "server 6\n",
        "server 2\n",
    ]
    log.write_bytes(b"x" * (LOG_KEPT_BYTES + 10) + b"Traceback: the crash\n")
    rotate_log(log)
    moved = tmp_path / f"{LOG_FILE}.1"
    assert moved.stat().st_size == LOG_KEPT_BYTES and moved.read_bytes().endswith(b"the crash\n")
    assert oct(moved.stat().st_mode & 0o777) == "0o600"


def test_a_new_server_keeps_the_previous_server_s_log(tmp_path: Path) -> None:
    (tmp_path / LOG_FILE).write_text("the previous server crashed here\n")
    booting = spawn(tmp_path, dict(os.environ), 1.0, 0)
    try:
        assert (tmp_path / f"{LOG_FILE}.1").read_text() == "the previous server crashed here\n"
        assert booting.log == tmp_path / LOG_FILE and booting.log.exists()
    finally:
        stop_process(booting.state)
