"""`--task-runner dask`: the same mapped stages on a LocalCluster of worker processes."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import warnings
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.runners import task_runner_for, worker_environment
from reviewflow.config import Config
from tests.deploy.scenario import RISKY, SPLIT, use_model
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer


def _review(repo: GitRepo, out: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    code = main([*args, "--report-dir", str(out), *flags])
    return code, json.loads((out / "review-report.json").read_text())


@pytest.mark.usefixtures("prefect_harness")
def test_dask_finds_what_threads_find(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, wire)
    repo.write("app/settings.py", "x = 1\n")
    repo.write("app/other.py", "y = 2\n")
    repo.commit("base")
    repo.write("app/settings.py", RISKY)
    repo.write("app/other.py", "def other(value):\n    return value\n")
    repo.commit("read settings")
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT], "app/other.py": []}))

    code, threads = _review(repo, tmp_path / "threads")
    sent = len(wire.requests())
    use_model(monkeypatch, wire)  # the first run took the key out of this process's environment
    dask_code, dask = _review(repo, tmp_path / "dask", "--task-runner", "dask", "--no-cache")

    assert (code, dask_code) == (1, 1)
    assert [f["fingerprint"] for f in dask["findings"]] == [
        f["fingerprint"] for f in threads["findings"]
    ]
    assert dask["usage"]["requests"] == len(wire.requests()) - sent > 0
    assert {r.credential for r in wire.requests()} == {TEST_KEY}
    assert TEST_KEY not in os.environ.values()  # the CLI dropped it: only the workers had it


def test_runner_choice_and_worker_environment() -> None:
    config = Config.model_validate(
        {"review": {"task_runner": "dask", "dask_address": "tcp://10.0.0.5:8786"}}
    )
    remote = task_runner_for(config)
    assert remote.address == "tcp://10.0.0.5:8786"  # that cluster's workers bring their own key
    local = task_runner_for(Config.model_validate({"review": {"task_runner": "dask"}}))
    assert local.cluster_kwargs["env"] == {}
    keyed = Config.model_validate({"model": {"api_key": "sk-abc"}})
    assert worker_environment(keyed) == {"REVIEWFLOW_MODEL_API_KEY": "sk-abc"}
    assert task_runner_for(keyed).__class__.__name__ == "ThreadPoolTaskRunner"


def test_a_local_cluster_says_nothing_when_dasks_port_is_taken() -> None:
    """Port 8787 (the dashboard's) in use: the LocalCluster's scheduler takes any free port on
    loopback, without "Port 8787 is already in use" on stderr."""
    holder = socket.socket()
    with contextlib.suppress(OSError):  # already taken by something else: the same case
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    config = Config.model_validate({"review": {"task_runner": "dask", "concurrency": 1}})
    try:
        with warnings.catch_warnings(record=True) as seen, task_runner_for(config) as runner:
            warnings.simplefilter("always")
            assert runner.client.run(os.getpid)  # the cluster is up, its workers answer
    finally:
        holder.close()
    assert [str(w.message) for w in seen if "already in use" in str(w.message)] == []
