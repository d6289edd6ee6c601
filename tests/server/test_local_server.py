"""The managed local Prefect server: started once, reused, replaced when stale, stopped.

One reviewflow home is shared by the whole module (a first run's migrations cost seconds);
tests that need no server running stop it first.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from prefect.settings import Settings

from flows.cli.main import main
from flows.local import api as local_api
from flows.local.api import PREPARING_NOTE, ApiTarget, ensure_api, run_with_server
from flows.local.control import stop_server
from flows.local.process import (
    STATE_FILE,
    Booting,
    ServerError,
    ServerState,
    server_env,
    wait_ready,
    write_state,
)
from flows.local.server_main import (
    EVENT_QUEUE_SIZE,
    PATCHED_PREFECT,
    UnsupportedPrefect,
    deep_event_queues,
)
from flows.local.settings import PrefectEnvironment, prefect_home, prefect_version
from tests.server.conftest import server_pids

SECRET = "sk-test-secret-model-key"


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": SECRET}


def _ensure(home: Path, **kwargs: Any) -> ApiTarget:
    options: dict[str, Any] = {"ci": False, "reuse": True, "idle_minutes": 5.0, **kwargs}
    return ensure_api(home, _env(), **options)


def _pid(target: ApiTarget) -> int:
    assert target.state is not None
    return target.state.pid


def _gone(pid: int, within: float = 30.0) -> bool:
    """True once `pid` has exited (reaped here if it is this process's child)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return False


def _get(url: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return json.loads(response.read())


def _post(url: str, body: Mapping[str, Any]) -> Any:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("managed")


@pytest.fixture(scope="module")
def first(home: Path) -> tuple[ApiTarget, str, list[dict[str, str]]]:
    """The first run ever in `home`: its target, its stderr and what preload was given."""
    preloaded: list[dict[str, str]] = []
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        target = _ensure(home, preload=lambda env: preloaded.append(dict(env)))
    return target, stderr.getvalue(), preloaded


def test_first_run_starts_a_server_and_the_next_run_reuses_it(
    first: tuple[ApiTarget, str, list[dict[str, str]]], home: Path
) -> None:
    target, stderr, preloaded = first
    assert stderr == PREPARING_NOTE
    assert target.url is not None and target.url.startswith("http://127.0.0.1:")
    assert preloaded == [target.env]
    assert target.env["PREFECT_API_URL"] == target.url
    assert target.env["PREFECT_HOME"] == str(prefect_home(home))
    assert not target.stop_at_end
    again = _ensure(home)
    assert (_pid(again), again.url) == (_pid(target), target.url)
    assert not again.stop_at_end
    assert (prefect_home(home) / STATE_FILE).stat().st_mode & 0o777 == 0o600


def test_server_environment_has_no_model_key(first: tuple[ApiTarget, str, Any]) -> None:
    environ = Path(f"/proc/{_pid(first[0])}/environ").read_bytes().split(b"\0")
    assert not [entry for entry in environ if SECRET.encode() in entry]
    assert b"DO_NOT_TRACK=1" in environ
    assert b"PREFECT_SERVER_ANALYTICS_ENABLED=false" in environ


def test_the_server_runs_only_the_services_a_review_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://127.0.0.1:9/api"
    first = server_env({}, tmp_path, url)
    assert "PREFECT_SERVER_REGISTER_BLOCKS_ON_START" not in first  # its first start registers
    (tmp_path / "prefect.db").touch()
    later = server_env({}, tmp_path, url)
    for name, value in later.items():
        monkeypatch.setenv(name, value)
    server = Settings().server  # the names are Prefect's own settings
    services = server.services
    assert not (services.scheduler.enabled or services.late_runs.enabled)
    assert not (services.triggers.enabled or services.foreman.enabled)
    assert not (services.pause_expirations.enabled or services.cancellation_cleanup.enabled)
    assert services.task_run_recorder.enabled and not services.event_persister.enabled
    assert services.task_run_recorder.batch_size == 100
    assert not (server.register_blocks_on_start or server.memoize_block_auto_registration)


def test_the_server_s_event_queues_hold_a_large_review_s_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Prefect's in-memory subscriptions drop events past 10,000 queued (a 5,000-file review's
    task runs went missing from the UI): the managed server deepens them before it starts."""
    from prefect.server.utilities.messaging import memory

    monkeypatch.setattr(memory.Subscription, "__init__", memory.Subscription.__init__)
    deep_event_queues()  # undone after the test
    subscription = memory.Subscription(memory.Topic("events"))
    assert subscription._queue.maxsize == EVENT_QUEUE_SIZE > 40_000

    async def deliver(count: int) -> None:
        for _ in range(count):
            await subscription.deliver(memory.MemoryMessage(data=b"{}", attributes={}))

    asyncio.run(deliver(10_001))
    assert subscription._queue.qsize() == 10_001  # none dropped


def test_the_event_queue_patch_is_pinned_to_one_prefect_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deeper queue replaces a private attribute of Prefect's: it is applied only on the
    version it was read in, the one pyproject pins, and any other is refused in one line
    with nothing patched (the server's log's last line, which the CLI shows)."""
    import tomllib

    from prefect.server.utilities.messaging import memory

    pins = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert f"prefect=={PATCHED_PREFECT}" in pins["project"]["dependencies"]
    assert prefect_version() == PATCHED_PREFECT
    made = memory.Subscription.__init__
    monkeypatch.setattr(memory.Subscription, "__init__", made)
    with pytest.raises(UnsupportedPrefect) as refused:
        deep_event_queues(installed="3.9.2")
    assert memory.Subscription.__init__ is made  # nothing patched
    line = str(refused.value)
    assert "\n" not in line and "3.9.2" in line and f"prefect=={PATCHED_PREFECT}" in line
    # what the patch replaces is still there, as read: a 10,000 bound on `_queue`
    assert memory.Subscription(memory.Topic("events"))._queue.maxsize == 10_000


def test_flow_runs_task_runs_and_artifacts_are_on_the_server(
    first: tuple[ApiTarget, str, Any], home: Path
) -> None:
    target = _ensure(home)
    url = target.url
    assert url is not None
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("probe_flow.py"))],
        env={
            **os.environ,
            **PrefectEnvironment.for_run(verbose=False, api=target.env, removed=()).variables,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"
    assert done.stderr == ""  # Prefect's own log lines stay off the terminal
    (flow,) = _post(f"{url}/flows/filter", {"flows": {"name": {"any_": ["server-probe"]}}})
    runs = _post(f"{url}/flow_runs/filter", {"flows": {"id": {"any_": [flow["id"]]}}})
    assert [run["state_type"] for run in runs] == ["COMPLETED"]
    names: list[str] = []
    for _ in range(100):  # task runs reach the API asynchronously
        tasks = _post(f"{url}/task_runs/filter", {"flow_runs": {"id": {"any_": [runs[0]["id"]]}}})
        names = [task["name"].rsplit("-", 1)[0] for task in tasks]
        if names:
            break
        time.sleep(0.1)
    assert names == ["double"]
    artifacts = {"artifacts": {"key": {"any_": ["server-probe"]}}}
    (artifact,) = _post(f"{url}/artifacts/filter", artifacts)
    assert artifact["flow_run_id"] == runs[0]["id"]
    # The flow run's own log lines are kept; a task run's INFO lines are not sent (--verbose).
    logs = _post(f"{url}/logs/filter", {"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}})
    assert any("Beginning flow run" in log["message"] for log in logs)
    assert [log for log in logs if log["task_run_id"]] == []


def test_a_failure_with_the_server_alive_is_not_retried(home: Path) -> None:
    target = _ensure(home)
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise RuntimeError("the flow failed")

    with pytest.raises(RuntimeError, match="the flow failed"):
        run_with_server(target, call)
    assert calls == [1]


def test_server_of_another_prefect_version_is_replaced(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _pid(_ensure(home))
    monkeypatch.setattr(local_api, "prefect_version", lambda: "0.0.1")
    new = _ensure(home)
    assert _pid(new) != old
    assert _gone(old, within=1.0)  # waited for before its database was reused
    assert server_pids(home) == [_pid(new)]


def test_a_killed_server_is_replaced_and_the_run_it_broke_retried_once(home: Path) -> None:
    target = _ensure(home)
    old = _pid(target)
    os.kill(old, signal.SIGKILL)
    assert _gone(old)
    calls: list[str | None] = []

    def call() -> str:
        calls.append(target.url)
        return str(_get(f"{target.url}/admin/version"))

    assert run_with_server(target, call) == local_api.prefect_version()
    assert len(calls) == 2
    assert _pid(target) != old
    assert server_pids(home) == [_pid(target)]
    assert _pid(_ensure(home)) == _pid(target)


def test_server_status_and_stop_commands(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
    target = _ensure(home)
    assert target.url is not None
    assert main(["server", "status"]) == 0
    status = capsys.readouterr().out
    assert f"pid {_pid(target)}" in status
    assert f"open {target.url.removesuffix('/api')} in a browser" in status
    assert main(["server", "stop"]) == 0
    assert capsys.readouterr().out == f"stopped (pid {_pid(target)}, Prefect {prefect_version()})\n"
    assert _gone(_pid(target), within=1.0)
    assert main(["server", "status"]) == 0
    assert capsys.readouterr().out.startswith("not running")
    assert main(["server", "stop"]) == 0
    assert capsys.readouterr().out == "not running\n"


def test_each_prefect_version_has_its_own_server_and_stop_stops_them_all(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two installs with different Prefect versions share a reviewflow home: neither replaces
    the other's server (nor uses its database); `server status` shows both, `stop` stops both."""
    ours = _pid(_ensure(home))
    older = prefect_home(home, "0.0.1")
    assert older != prefect_home(home) and older.parent == prefect_home(home).parent
    instance = "reviewflow-older-server"  # a process standing in for that version's server
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", instance])
    try:
        older.mkdir(parents=True, exist_ok=True)
        write_state(older, ServerState(other.pid, 9, instance, "0.0.1", 5.0, time.time()))
        assert _pid(_ensure(home)) == ours and other.poll() is None  # left alone
        monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
        assert main(["server", "status"]) == 0
        status = capsys.readouterr().out
        assert status.startswith(f"running: pid {ours}, Prefect {prefect_version()}")
        assert f"also running: the server of Prefect 0.0.1, pid {other.pid} ({older})\n" in status
        assert main(["server", "stop"]) == 0
        stopped = capsys.readouterr().out.splitlines()
        assert sorted(stopped) == sorted(
            [
                f"stopped (pid {ours}, Prefect {prefect_version()})",
                f"stopped (pid {other.pid}, Prefect 0.0.1)",
            ]
        )
        assert other.wait(timeout=30) == -signal.SIGTERM and _gone(ours, within=1.0)
    finally:
        other.kill()
        other.wait()


def test_a_recorded_pid_and_port_now_owned_by_others_are_left_alone(home: Path) -> None:
    """Also: a --no-server-reuse run stops the server it started, and nothing else."""
    stop_server(home)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with socket.socket() as foreign:
            foreign.bind(("127.0.0.1", 0))
            foreign.listen()
            port = foreign.getsockname()[1]
            stale = ServerState(other.pid, port, "reviewflow-gone", "3.9.1", 5.0, time.time())
            write_state(prefect_home(home), stale)
            with _ensure(home, reuse=False) as target:
                assert target.stop_at_end
                assert target.state is not None and target.state.port != port
            assert _gone(_pid(target), within=1.0)
            assert other.poll() is None  # never signalled: its command line is not ours
            assert foreign.getsockname()[1] == port
    finally:
        other.kill()
        other.wait()
    assert server_pids(home) == []
    assert not (prefect_home(home) / STATE_FILE).exists()


def test_ci_run_leaves_no_process_but_keeps_a_server_it_did_not_start(home: Path) -> None:
    stop_server(home)
    with _ensure(home, ci=True) as target:
        assert target.stop_at_end
        pid = _pid(target)
        with _ensure(home, ci=True) as second:
            assert (_pid(second), second.stop_at_end) == (pid, False)
        assert server_pids(home) == [pid]
    assert _gone(pid, within=1.0)
    assert server_pids(home) == []
    assert not (prefect_home(home) / STATE_FILE).exists()


def test_three_concurrent_cold_starts_spawn_one_server_which_exits_when_idle(
    home: Path,
) -> None:
    stop_server(home)
    script = (
        "import os, sys; from pathlib import Path; from flows.local.api import ensure_api; "
        "t = ensure_api(Path(sys.argv[1]), os.environ, ci=False, reuse=True, idle_minutes=0.1); "
        "print(t.state.pid)"
    )
    starts = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(home)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    pids = {int(process.communicate(timeout=300)[0]) for process in starts}
    assert len(pids) == 1
    assert server_pids(home) == list(pids)
    assert _gone(pids.pop(), within=60.0)  # idle for 6 s
    assert not (prefect_home(home) / STATE_FILE).exists()


def test_user_api_url_starts_nothing(tmp_path: Path) -> None:
    preloaded: list[Mapping[str, str]] = []
    env = {**_env(), "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    target = ensure_api(tmp_path, env, ci=True, reuse=False, preload=preloaded.append)
    assert (target.url, target.state, target.stop_at_end) == (None, None, False)
    assert target.env == {}  # the user's own API: nothing to set
    assert preloaded == [target.env]
    assert not prefect_home(tmp_path).exists()
    target.close()


def test_a_server_that_dies_while_starting_fails_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    crash = "print('starting'); print('sqlite3.OperationalError: unable to open database')"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", crash + "; raise SystemExit(3)"], stdout=out
        )
    state = ServerState(process.pid, 9, "reviewflow-crash", "", 5.0, time.time())
    with pytest.raises(ServerError) as caught:
        wait_ready(Booting(process, state, log))
    assert str(caught.value) == (
        "the local Prefect server exited while starting: starting | "
        f"sqlite3.OperationalError: unable to open database (log: {log})"
    )
    assert caught.value.exit_code == 2


def test_the_server_warms_up_only_after_its_first_answer(prefect_harness: str) -> None:
    """What a fresh server does lazily for its first flow run is done after its own start (its
    first answer), not before: it never lengthens the start a review waits for."""
    from flows.local.server_main import WARM_UP, IdleTracker, warm_up

    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("not called")

    tracker = IdleTracker(app)
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(warm_up(tracker, prefect_harness)))
    thread.start()
    thread.join(timeout=0.5)
    assert done == []  # waiting for the first answer
    tracker.answered.set()
    thread.join(timeout=60)
    assert done == [len(WARM_UP)]  # each call answered by a real Prefect API
