"""`server stop` of a server whose record holds no Prefect version yet (it was still booting):
the line names the version of the Prefect home it ran in, and says it was still starting, in
words (never an empty version, `Prefect ?` or a Python literal)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.local.process import ServerState, write_state
from flows.local.settings import managed_root, prefect_home, prefect_version


@pytest.mark.parametrize("shared_home", [False, True], ids=["per-version home", "older shared"])
def test_stop_line_names_the_version_of_a_server_still_booting(
    shared_home: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    instance = "reviewflow-booting-server"  # a process standing in for a server still booting
    booting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", instance])
    try:
        phome = managed_root(home) if shared_home else prefect_home(home)
        phome.mkdir(parents=True)
        write_state(phome, ServerState(booting.pid, 9, instance, "", 5.0, time.time()))
        monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
        assert main(["server", "stop"]) == 0
        out = capsys.readouterr().out
        if shared_home:  # the home of no one version: none is named
            assert out == f"stopped (pid {booting.pid}, a server still starting)\n"
        else:
            expected = f"stopped (pid {booting.pid}, Prefect {prefect_version()}, still starting)"
            assert out == expected + "\n"
        assert not re.search(r"Prefect [;,)?]|\{|\}", out)
        assert booting.wait(timeout=30) != 0
    finally:
        booting.kill()
        booting.wait()
