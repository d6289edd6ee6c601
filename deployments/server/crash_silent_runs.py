"""deployments/server/crash_silent_runs.py: the team server's automation that marks a flow run
Crashed when its heartbeats stop (a worker's machine died, its process was SIGKILLed), created
or brought up to date on the server at PREFECT_API_URL, idempotently (`start.sh setup` runs it).

Prefect's own mechanism (its "zombie flows" recipe): every running flow run of a deployment emits
`prefect.flow-run.heartbeat` every PREFECT_FLOWS_HEARTBEAT_FREQUENCY seconds (prefect.yaml pins
30 for reviewflow's deployments); after a heartbeat, a proactive trigger expects another flow-run
event of that run within REVIEWFLOW_HEARTBEAT_WITHIN seconds (server.env: 90, three missed
heartbeats) and otherwise sets the run Crashed. The Crashed transition releases the run's
deployment concurrency slot at once (Prefect's ReleaseFlowConcurrencySlots rule), before the
lease would expire (a running flow renews it for 300 s at a time).

Exit 0 when the automation is in place, 2 on a bad REVIEWFLOW_HEARTBEAT_WITHIN, 1 when the API
did not answer within REVIEWFLOW_SETUP_WAIT seconds (default 120)."""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

from prefect.automations import AutomationCore
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import EventTrigger, Posture
from prefect.events.schemas.events import ResourceSpecification

NAME = "reviewflow: crash flow runs whose heartbeats stopped"
MINIMUM_WITHIN = 60  # twice Prefect's shortest heartbeat (30 s): one late heartbeat is no crash


def automation(within_seconds: int) -> AutomationCore:
    """The automation as Prefect's docs give it, with the team's window."""
    return AutomationCore(
        name=NAME,
        description=(
            "A flow run whose heartbeats stopped for "
            f"{within_seconds} s is marked Crashed, which frees its concurrency slot "
            "(deployments/server/crash_silent_runs.py)."
        ),
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.*"},
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=within_seconds),
        ),
        actions=[
            ChangeFlowRunState(
                state=StateType.CRASHED,
                message=f"no heartbeat for {within_seconds} s: its worker or machine died",
            )
        ],
    )


def within_seconds(raw: str) -> int:
    """REVIEWFLOW_HEARTBEAT_WITHIN as seconds, or ValueError with the reason in one line."""
    if not raw.strip().isdigit() or int(raw) < MINIMUM_WITHIN:
        raise ValueError(
            f"REVIEWFLOW_HEARTBEAT_WITHIN must be whole seconds, at least {MINIMUM_WITHIN} "
            f"(two heartbeats at Prefect's shortest, 30 s), not '{raw}'"
        )
    return int(raw)


def _wait_for_api(deadline: float) -> bool:
    end = time.monotonic() + deadline
    while True:
        with get_client(sync_client=True) as client:
            try:
                if client.api_healthcheck() is None:
                    return True
            except Exception:  # noqa: BLE001 -- not up yet: any failure means "ask again"
                pass
        if time.monotonic() >= end:
            return False
        time.sleep(1)


def ensure(wanted: AutomationCore) -> str:
    """Create the automation, or update the one of that name (and drop any duplicate)."""
    with get_client(sync_client=True) as client:
        found = client.read_automations_by_name(NAME)
        if not found:
            client.create_automation(wanted)
            return "created"
        first, *extra = found
        client.update_automation(first.id, wanted)
        for duplicate in extra:
            client.delete_automation(duplicate.id)
        return "updated"


def main() -> int:
    try:
        within = within_seconds(os.environ.get("REVIEWFLOW_HEARTBEAT_WITHIN", "90"))
    except ValueError as bad:
        print(f"crash_silent_runs: error: {bad}", file=sys.stderr)
        return 2
    wait = float(os.environ.get("REVIEWFLOW_SETUP_WAIT", "120"))
    if not _wait_for_api(wait):
        api = os.environ.get("PREFECT_API_URL", "")
        print(f"crash_silent_runs: error: the API at {api} did not answer in {wait:.0f} s",
              file=sys.stderr)  # fmt: skip
        return 1
    done = ensure(automation(within))
    print(f"crash_silent_runs: {done} '{NAME}' (within {within} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
