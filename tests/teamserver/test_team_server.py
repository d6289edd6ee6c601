"""Acceptance of the team server (deployments/server/, issue 40) with real PostgreSQL and Redis:
the `ci-review` gate and the nightly's two branches on two workers at once, as
tests/deploy/test_worker.py runs them on a plain `prefect server start`; then the server, its
services, Redis and the worker running the nightly SIGKILLed mid-run and restarted, the dead run
then marked Crashed by the server's own automation (its heartbeats stopped). Every test
starts or shares many processes: all are in the stress rotation."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from uuid import UUID

import pytest
from prefect.client.schemas.objects import StateType

from tests.deploy import test_worker as deployed
from tests.deploy.test_worker import CODE, WORKERS, _branch, _client_of, _Hold, _nightly_of
from tests.flows.reviewer import ScriptedReviewer
from tests.teamserver.conftest import HEARTBEAT_WITHIN, NIGHTLY, TeamStack
from tests.wire_server import TEST_KEY

# The first also starts the session's team server (initdb, migrations, deploy): minutes on a
# busy machine (500 s for the three at a load of ~20, 92 s idle).
pytestmark = [pytest.mark.stress, pytest.mark.timeout(600)]


def _active_slots(stack: TeamStack) -> int:
    """The slots of the nightly's concurrency limit taken, as the API reports them."""
    with _client_of(stack) as client:
        nightly = client.read_deployment_by_name(NIGHTLY)
        limit = nightly.global_concurrency_limit
        assert limit is not None  # conftest gave it one
        return client.read_global_concurrency_limit_by_name(limit.name).active_slots


def _run_state(stack: TeamStack, run_id: UUID) -> StateType | None:
    with _client_of(stack) as client:
        state = client.read_flow_run(run_id).state
    return state.type if state else None


def test_ci_review_gates_a_ci_job_through_the_team_server(team: TeamStack) -> None:
    deployed.test_ci_review_gates_a_ci_job(team)
    # The key was in the workers' environment only: not in PostgreSQL either.
    assert TEST_KEY.encode() not in team.database_dump()
    assert _active_slots(team) == 0


def test_two_workers_take_two_release_branches_at_once(team: TeamStack) -> None:
    deployed.test_two_workers_take_two_branches_at_once(team)
    assert _active_slots(team) == 0  # both runs' leases released when they ended


def _running_worker(stack: TeamStack, run_id: str) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for name in WORKERS:
            if run_id in deployed._ran(stack, name, [run_id]):
                return name
        time.sleep(0.5)
    raise AssertionError(f"no worker took flow run {run_id}")


def _run_id_of(stderr_so_far: str) -> str:
    return stderr_so_far.rsplit("/runs/flow-run/", 1)[1].split()[0]


def test_a_nightly_killed_with_the_team_server_resumes_and_frees_its_slot(
    team: TeamStack,
) -> None:
    branch = "release/7"
    fast = [f"app/f{n}.py" for n in range(4)]
    slow = "app/slow7.py"
    team.wire.respond("openai", ScriptedReviewer({}))
    first = _branch(team.repo, branch, ["app/first7.py"])
    done = team.deployment_run(NIGHTLY, "--params", json.dumps({"branches": [branch]}))
    assert done.returncode == 0, done.stdout + done.stderr
    assert deployed._reviewed_head(team, branch) == first

    team.repo.git("checkout", "--quiet", branch)
    for path in [*fast, slow]:
        team.repo.write(path, CODE.format(name=path.rsplit("/", 1)[1][:-3]))
    head = team.repo.commit("five more files")
    deployed.push(team.repo, branch)
    team.wire.respond("openai", _Hold(ScriptedReviewer({}), slow))
    since = datetime.now(UTC)
    interrupted = _nightly_of(team, branch)
    deadline = time.monotonic() + 180
    while deployed._completed_loops(team, since) < len(fast) or not deployed._main_requests_of(
        team.wire.requests(), [slow]
    ):
        assert time.monotonic() < deadline, "the fast files' reviews never completed"
        time.sleep(1)
    assert _active_slots(team) == 1  # the running nightly holds one
    interrupted.kill()  # the CI job's wait; its run goes on
    _, err = interrupted.communicate()
    run_id = _run_id_of(err)
    worker = _running_worker(team, run_id)

    for name in ("server", "services", "redis", worker):  # mid-run, as machines die
        team.kill(name)
    for name in ("redis", "server", "services", worker):
        team.start(name)
    assert deployed._reviewed_head(team, branch) == first  # not moved, and not backwards
    assert _run_state(team, UUID(run_id)) != StateType.COMPLETED  # its process is gone
    # No one marks it Crashed here: the server does, its heartbeats having stopped.

    team.wire.respond("openai", ScriptedReviewer({}))
    sent = len(team.wire.requests())
    resumed = team.deployment_run(NIGHTLY, "--params", json.dumps({"branches": [branch]}))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    paid = deployed._main_requests_of(team.wire.requests()[sent:], [*fast, slow])
    assert paid == {slow}  # only what was left
    assert deployed._reviewed_head(team, branch) == head

    crashed = _crashed_by_the_server(team, UUID(run_id))
    assert crashed == f"no heartbeat for {HEARTBEAT_WITHIN} s: its worker or machine died"
    deadline = time.monotonic() + 60  # the Crashed transition released the lease in Redis
    while _active_slots(team) != 0:
        assert time.monotonic() < deadline, "the killed run's concurrency slot stayed taken"
        time.sleep(1)
    assert deployed._reviewed_head(team, branch) == head


def _crashed_by_the_server(stack: TeamStack, run_id: UUID) -> str | None:
    """The dead run's Crashed state's message, once the server's automation set it (60 s
    after its last heartbeat, and the services' next pass)."""
    deadline = time.monotonic() + 300
    while True:
        with _client_of(stack) as client:
            state = client.read_flow_run(run_id).state
        if state is not None and state.type == StateType.CRASHED:
            return state.message
        assert time.monotonic() < deadline, f"the killed run stayed {state and state.name}"
        time.sleep(2)
