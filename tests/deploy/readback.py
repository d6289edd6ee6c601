"""A finished flow run read back as Prefect's engine and client read it."""

from __future__ import annotations

import json
import re
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.client.schemas.objects import State
from prefect.exceptions import FailedRun

ENGINE_TYPE_ERROR = "Unexpected result for failed state"


def read_back(flow_run_id: UUID) -> State:
    """The run's final state as the client reads it from the API."""
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run_id).state
    assert state is not None
    return state


def assert_failed_with_reason(state: State) -> None:
    """A Failed run whose result is its reason: on the state the flow returned, as the engine
    reads it at the end of a deployed run (`state.result()`), and as read back from the API."""
    assert state.is_failed() and state.message
    for read in (state, read_back(state.state_details.flow_run_id)):
        result = read.result(raise_on_failure=False)
        assert isinstance(result, FailedRun) and str(result) == state.message, repr(result)
        with pytest.raises(FailedRun, match=re.escape(state.message)):
            read.result()


def artifacts(flow_run_id: UUID) -> dict[str, Any]:
    """The run's own keyed artifacts, key -> data (a table's rows parsed)."""
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return {a.key: json.loads(str(a.data)) if a.type == "table" else a.data for a in found if a.key}


def log_lines(flow_run_id: UUID) -> list[str]:
    """Every log line of the run the API holds (the engine's own included)."""
    with get_client(sync_client=True) as client:
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
        )
    return [log.message for log in logs]
