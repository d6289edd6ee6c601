"""`deployment-run --timeout`: a run that does not end in time is cancelled through the API, and
the one line says so (a timed-out run is never left going)."""

from __future__ import annotations

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterDeploymentId

from flows.cli.main import main


@flow(name="timeout-probe")
def _probe() -> None:
    """The deployment's flow (no worker runs it here)."""


@pytest.mark.usefixtures("prefect_harness")
def test_a_run_that_times_out_is_cancelled_and_the_line_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with get_client(sync_client=True) as client:
        flow_id = client.create_flow(_probe)
        deployment = client.create_deployment(flow_id, "no-worker", work_pool_name=None)

    code = main(["deployment-run", "timeout-probe/no-worker", "--timeout", "1s"])

    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    assert err.startswith("reviewflow: error: flow run '") and "of timeout-probe/no-worker" in err
    assert "was still Scheduled after 1 s" in err and err.endswith(": cancelled")
    with get_client(sync_client=True) as client:
        [run] = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                deployment_id=FlowRunFilterDeploymentId(any_=[deployment])
            )
        )
    assert run.state is not None and run.state.is_cancelled()
