"""The team server for the tests here, once per session: a real PostgreSQL and a real Redis on
loopback, the Prefect API server and its background services on them (started by
deployments/server/start.sh with its server.env, as the docs say, and `start.sh setup`'s
automation), the `reviewflow` pool, the deployments of prefect.yaml and two process workers,
as tests/deploy/test_worker.py's stack.
Skipped, with the one reason, only where PostgreSQL's or Redis's binaries cannot be found."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.deploy.scenario import model_env, origin
from tests.deploy.test_worker import (
    PREFECT,
    ROOT,
    WORKERS,
    Stack,
    _base_env,
    one_at_a_time_then_two,
)
from tests.teamserver.services import (
    START,
    Datastores,
    find_binaries,
    free_port,
    server_commands,
)
from tests.wire_server import WireServer

NIGHTLY = "release-review/nightly-release-review"
HEARTBEAT_WITHIN = 60  # seconds without a heartbeat before the server marks a run Crashed


@dataclass
class TeamStack(Stack):
    """tests/deploy's stack, its server the team server: `postgres`, `redis`, `server` (the API,
    `--no-services`), `services` and the workers are each started and killed by name."""

    stores: Datastores | None = None

    def start(self, name: str) -> None:
        super().start(name)  # the API server: once /health answers
        assert self.stores is not None
        if name == "postgres":
            self.stores.wait_postgres()
        elif name == "redis":
            self.stores.wait_redis()

    def database_dump(self) -> bytes:
        """The Prefect database as `pg_dump` writes it (for secrets that must not be there)."""
        assert self.stores is not None
        pg_dump = self.stores.bins.psql.replace("psql", "pg_dump")
        port = str(self.stores.pg_port)
        args = [pg_dump, "-h", "127.0.0.1", "-p", port, "-U", "prefect", "prefect"]
        return subprocess.run(args, capture_output=True, check=True, timeout=120).stdout


def _deploy(stack: TeamStack) -> None:
    created = stack.run("work-pool", "create", "reviewflow", "--type", "process")
    assert created.returncode == 0, created.stdout + created.stderr
    deploy_env = {**stack.env, "REVIEWFLOW_NIGHTLY_REPOSITORY": stack.url}
    deployed = subprocess.run(
        [PREFECT, "--no-prompt", "deploy", "--all"], env=deploy_env, cwd=ROOT,
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    one_at_a_time_then_two(stack)  # leased through Redis here


def _setup(stack: TeamStack) -> None:
    """`start.sh setup`, as the docs say, with the shortest window it accepts (60 s: two of the
    deployments' 30 s heartbeats) so the kill test's dead run is Crashed sooner."""
    env = {**stack.commands["server"][1], "REVIEWFLOW_HEARTBEAT_WITHIN": str(HEARTBEAT_WITHIN)}
    done = subprocess.run(["sh", str(START), "setup"], env=env, capture_output=True, text=True,
                          timeout=180, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamStack]:
    bins = find_binaries()
    if isinstance(bins, str):
        pytest.skip(bins)
    tmp = tmp_path_factory.mktemp("team")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = _base_env(tmp, api)
    (tmp / "prefect").mkdir(mode=0o700)
    stores = Datastores.create(bins)
    repo, bare = origin(tmp)
    with WireServer() as wire:
        stack = TeamStack(api, env, tmp / "prefect", tmp / "rfhome", wire, repo, bare.as_uri(), tmp)
        stack.stores = stores
        stack.commands.update(server_commands(stores, env, port))
        # It looks for scheduled runs every second, not every 10 s: each run starts sooner.
        worker_env = {**env, **model_env(wire), "PREFECT_WORKER_QUERY_SECONDS": "1"}
        for name in WORKERS:  # one flow run at a time each: two runs at once take both
            worker = [PREFECT, "worker", "start", "--pool", "reviewflow", "--name", name]
            stack.commands[name] = ([*worker, "--limit", "1"], worker_env)
        try:
            for name in ("postgres", "redis", "server", "services"):
                stack.start(name)
            _setup(stack)
            _deploy(stack)
            for name in WORKERS:
                stack.start(name)
            yield stack
        finally:
            stack.stop_all()
            stores.remove()
