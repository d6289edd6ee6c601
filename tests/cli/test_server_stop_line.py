"""`server stop` of a server whose Prefect version is not known yet (it was still booting)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.local.process import ServerState, write_state
from flows.local.settings import prefect_home


def test_stop_line_leaves_out_an_unknown_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    instance = "reviewflow-booting-server"  # a process standing in for a server still booting
    booting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", instance])
    try:
        phome = prefect_home(home)
        phome.mkdir(parents=True)
        write_state(phome, ServerState(booting.pid, 9, instance, "", 5.0, time.time()))
        monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
        assert main(["server", "stop"]) == 0
        assert capsys.readouterr().out == f"stopped (pid {booting.pid})\n"
        assert booting.wait(timeout=30) != 0
    finally:
        booting.kill()
        booting.wait()
