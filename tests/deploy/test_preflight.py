"""Scale-out's checks that need no cluster: where the model key must be (the caller's own runner:
here; a remote cluster: its workers, asked by the preflight), what a worker answers the preflight
(`flows.preflight.on_worker`, run here as a worker runs it), the address the managed server
listens on (`prefect.server_host`). The preflight on real workers: `test_dask_isolated.py`, and
the last test here (stress: it starts a cluster)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from flows.cli.entry import may_hand_over, needs_server
from flows.cli.main import main
from flows.local.process import ServerError, ServerState, bind_port
from flows.preflight import Preflight, WorkerAnswer, check_cluster, on_worker
from reviewflow.config import Config, load_config
from reviewflow.entry import check_review
from reviewflow.errors import ConfigError
from reviewflow.providers.factory import MissingKeyError, key_on_workers
from reviewflow.providers.pool import ProviderPool
from tests.gitutil import GitRepo
from tests.netguard.netguard import ALLOW_VARIABLE
from tests.wire_server import TEST_KEY

KEYS = ("REVIEWFLOW_MODEL_API_KEY", "ANTHROPIC_API_KEY")
NOT_HERE = "198.51.100.7"  # TEST-NET-2: an address of no interface here


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The anthropic protocol (a key at every endpoint), and no key in this environment."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "anthropic")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", "http://127.0.0.1:9/")


def _config(rf_home: Path, **review: Any) -> Config:
    return load_config(rf_home, dict(os.environ), {"review": review})


@pytest.mark.usefixtures("no_key")
def test_the_key_is_asked_here_unless_a_remote_clusters_workers_make_the_requests(
    rf_home: Path,
) -> None:
    for local in (_config(rf_home), _config(rf_home, task_runner="dask")):  # a LocalCluster's
        assert not key_on_workers(local)  # workers get the key from here
        with pytest.raises(MissingKeyError, match=r"^no API key for the anthropic protocol: set "):
            check_review(local, rf_home)
    remote = _config(rf_home, task_runner="dask", dask_address="tcp://127.0.0.1:8786")
    assert key_on_workers(remote)
    check_review(remote, rf_home)  # the preflight asks the workers
    assert Preflight.of(remote) == Preflight("anthropic", "direct", ask_key=True)
    with (
        ProviderPool.from_config(remote) as pool,  # the caller's: it sends nothing itself
        pytest.raises(MissingKeyError, match=r"^no API key for the anthropic protocol"),
    ):
        pool._made()


def test_with_a_key_here_nothing_is_asked_of_the_workers(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "anthropic")
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    remote = _config(rf_home, task_runner="dask", dask_address="tcp://127.0.0.1:8786")
    assert not key_on_workers(remote) and not Preflight.of(remote).ask_key


@pytest.mark.usefixtures("no_key")
def test_a_review_on_a_remote_cluster_goes_past_the_key_check(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    repo.commit("change")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"  # nothing listens there
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    flags = ["--report-dir", str(tmp_path / "out"), "--no-warm", "--dask-address", address]
    assert main([*args, *flags]) == 2
    assert capsys.readouterr().err == (  # the scheduler's check, not the key's
        f"reviewflow: error: cannot reach the Dask scheduler at {address} "
        "(review.dask_address): the connection was refused\n"
    )
    assert main([*args, "--report-dir", str(tmp_path / "out2"), "--no-warm"]) == 2
    assert "no API key for the anthropic protocol" in capsys.readouterr().err  # on threads


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        answer = self.server.status  # type: ignore[attr-defined]
        status = answer if self.path == "/api/health" else 404
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _api(status: int) -> Iterator[str]:
    """An HTTP server on loopback whose `/api/health` answers `status`: its API URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    server.status = status  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api"
    finally:
        server.shutdown()
        server.server_close()


def test_what_a_worker_answers(monkeypatch: pytest.MonkeyPatch, rf_home: Path) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    with _api(200) as api:
        assert on_worker(api, "anthropic", "direct", ask_key=False) == WorkerAnswer(None, None)
        assert on_worker(api, "anthropic", "direct", ask_key=True) == WorkerAnswer(None, False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        answer = on_worker(api, "anthropic", "direct", ask_key=True)
        assert answer == WorkerAnswer(None, True) and TEST_KEY not in repr(answer)
    with _api(503) as api:
        assert on_worker(api, "anthropic", "direct", False).api == "GET /health answered HTTP 503"
    gone = api  # its server is closed: nothing listens there now
    assert on_worker(gone, "anthropic", "direct", False).api == "the connection was refused"


def test_the_managed_servers_address(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def host(value: str) -> Any:
        return load_config(rf_home, dict(os.environ), {"prefect": {"server_host": value}})

    accepted = "(accepted: an IP address or host name of this machine, not a wildcard"
    for wrong in ("0.0.0.0", "::", "not a host"):
        with pytest.raises(ConfigError) as refused:
            host(wrong)
        assert str(refused.value).startswith(
            f"invalid value for --server-host: '{wrong}' {accepted}"
        )
    assert host("10.0.0.1").prefect.server_host == "10.0.0.1"
    assert main(["review", "--server-host", "0.0.0.0", "--commit", "HEAD"]) == 2
    err = capsys.readouterr().err
    line = f"reviewflow: error: invalid value for --server-host: '0.0.0.0' {accepted}"
    assert err == f"{line} such as 0.0.0.0)\n"

    with bind_port(0, "127.0.0.2") as sock:  # another address of this machine
        assert sock.getsockname()[0] == "127.0.0.2"
    monkeypatch.setenv(ALLOW_VARIABLE, f"{NOT_HERE}/32")  # its lookup is numeric: no network
    with pytest.raises(ServerError) as refused:
        bind_port(0, NOT_HERE)
    assert str(refused.value) == (
        f"the local Prefect server cannot listen on {NOT_HERE}: cannot assign requested address"
    )
    state = ServerState(1, 4200, "i", "3", 60.0, 0.0, "::1")
    assert state.url == "http://[::1]:4200/api"
    assert ServerState(1, 4200, "i", "3", 60.0, 0.0).url == "http://127.0.0.1:4200/api"


def test_a_named_address_neither_hands_over_nor_starts_a_server_early() -> None:
    for args in (["review", "--server-host", "10.0.0.1"], ["review", "--server-host=10.0.0.1"]):
        assert not needs_server(args, {}) and not may_hand_over(args, {})
    assert needs_server(["review"], {}) and may_hand_over(["review"], {})


@pytest.mark.stress  # a Dask cluster in this process
@pytest.mark.usefixtures("no_key")
def test_a_worker_without_the_key_is_refused_in_one_line() -> None:
    from distributed import Client, LocalCluster

    with (
        _api(200) as api,
        LocalCluster(
            n_workers=1,
            processes=False,  # the worker's environment is this one
            protocol="tcp://",
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        Client(cluster) as client,
    ):
        [worker] = client.scheduler_info()["workers"]
        preflight = Preflight("anthropic", "direct", ask_key=True)
        with pytest.raises(ConfigError) as refused:
            check_cluster(client, "tcp://scheduler:8786", api, preflight)
        os.environ["ANTHROPIC_API_KEY"] = TEST_KEY  # now the worker has it
        try:
            check_cluster(client, "tcp://scheduler:8786", api, preflight)
        finally:
            del os.environ["ANTHROPIC_API_KEY"]
    assert str(refused.value) == (
        f"no API key for the anthropic protocol on the Dask worker {worker} (nor here): set "
        "REVIEWFLOW_MODEL_API_KEY or ANTHROPIC_API_KEY in every worker's environment"
    )


def test_a_server_on_another_address_is_not_replaced_under_running_reviews(
    rf_home: Path,
) -> None:
    """A review asking for the server on another address than the recorded one's, while a
    review runs on that one: one line, and the server is left running."""
    from flows.local.api import ensure_api
    from flows.local.process import write_state
    from flows.local.reviews import RunningReview, process_start, reviews_dir
    from flows.local.settings import prefect_home

    phome = prefect_home(rf_home)
    instance = "reviewflow-test-instance"
    server = subprocess.Popen(["sh", "-c", "sleep 120", instance])  # "the server", and the
    try:  # review running on it (one process stands for both: both are only looked at)
        start = process_start(server.pid)
        assert start is not None
        write_state(phome, ServerState(server.pid, 4200, instance, "3", 60.0, time.time()))
        review = RunningReview(server.pid, start, "/work/repo", time.time())
        reviews_dir(phome).mkdir(parents=True, exist_ok=True)
        (reviews_dir(phome) / f"{server.pid}.json").write_text(json.dumps(asdict(review)))
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        with pytest.raises(ServerError) as refused:
            ensure_api(rf_home, env, ci=False, reuse=True, host="127.0.0.2")
        assert str(refused.value) == (
            "the local Prefect server listens on 127.0.0.1, where a review runs: wait for it to "
            "end before a review with the server on 127.0.0.2 (--server-host, prefect.server_host)"
        )
        assert server.poll() is None  # left running
    finally:
        server.kill()
        server.wait()
