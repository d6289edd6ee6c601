"""A model endpoint that refuses the connection, through the CLI: one line in plain words
(issue 37 item 20), never the HTTP library's `ConnectError: [Errno 111]`."""

from __future__ import annotations

import json
import socket

import pytest

from flows.cli.main import main
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_refused_connection_is_one_plain_line(
    protocol: str,
    repo: GitRepo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.write("base.py", "x = 1\n")
    repo.commit("base")
    repo.write("app.py", "y = 2\n")
    repo.commit("app")
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", protocol)
        monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
        monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", endpoint)
        monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
        out = repo.root.parent / "out"
        argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
        code = main([*argv, "--report-dir", str(out)])

    assert code == 2
    report = json.loads((out / "review-report.json").read_text(encoding="utf-8"))
    expected = f"{protocol} model 'test-model': could not reach the model at {endpoint}: "
    assert report["errors"][0]["message"] == expected + "connection refused"
    [line] = [ln for ln in capsys.readouterr().err.splitlines() if "review incomplete" in ln]
    assert "could not reach the model at" in line and "connection refused" in line
    assert "Errno" not in line and "ConnectError" not in line
