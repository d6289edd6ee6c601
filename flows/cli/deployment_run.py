"""`reviewflow deployment-run`: trigger a deployment, wait for its run, say how it ended.

`prefect deployment run --watch` prints state changes only (the server does not stream a run's
logs to it), so a CI log said `Flow run finished in state 'Failed'` and never why. This command
prints the run's state message (the gate line) and its summary artifact, and exits as
`reviewflow review` does: 0 passed, 1 the gate failed on findings, 2 anything else.

Prefect's client does the work (no hand-written HTTP); Prefect is imported only when the command
runs, so building the parser stays free of it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flows.local.settings import PrefectEnvironment
from reviewflow.config import parse_duration
from reviewflow.errors import ConfigError, ReviewError

if TYPE_CHECKING:
    import httpx
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.objects import Artifact, FlowRun

    from reviewflow.report.gate import RunSummary

POLL_SECONDS = 1.0
DEFAULT_TIMEOUT = "1h"
EPILOG = """\
examples:
  reviewflow deployment-run ci-review/ci-review --run-name "PR 42" \\
      --param repository=https://git.example.com/app.git \\
      --param from_ref="$BASE_SHA" --param to_ref="$HEAD_SHA"
  reviewflow deployment-run ci-review/ci-review --params '{"repository": "/srv/app", \\
      "commit": "HEAD", "overrides": {"review": {"fail_on": ["critical"]}}}' --timeout 30m

The run's state message (the gate line) and summary go to stdout, its progress to stderr.
exit codes: 0 the run completed, 1 the gate failed on findings, 2 anything else (incomplete
            review, configuration, Git, provider, a crashed or cancelled run, the timeout (the run
            is then cancelled), no such deployment, the API unreachable); PREFECT_API_URL names
            the server
"""


class DeploymentRunError(ReviewError):
    """The deployment or its API cannot be used, or its run did not end in time (exit 2)."""


@dataclass(frozen=True)
class RunRequest:
    """What to run: a deployment (`FLOW/DEPLOYMENT`), its parameters, how long to wait."""

    deployment: str
    parameters: dict[str, Any]
    timeout: float
    run_name: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        if args.deployment.count("/") != 1 or "" in args.deployment.split("/"):
            raise ConfigError(
                f"invalid deployment name: {args.deployment!r} (accepted: FLOW/DEPLOYMENT, "
                "e.g. ci-review/ci-review; `prefect deployment ls` lists them)"
            )
        try:
            timeout = parse_duration(args.timeout)
        except ValueError as exc:
            raise ConfigError(f"invalid value for --timeout: {args.timeout!r} ({exc})") from None
        return cls(args.deployment, parameters(args.param, args.params), timeout, args.run_name)


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """The `deployment-run` command's arguments."""
    parser = sub.add_parser(
        "deployment-run",
        help="run a Prefect deployment, wait, print its gate line and summary",
        description=textwrap.fill(
            "Trigger a deployment (e.g. ci-review/ci-review) with parameters, wait for its flow "
            "run, print its state message and summary, exit as `reviewflow review` does.",
            88,
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("deployment", metavar="FLOW/DEPLOYMENT", help="e.g. ci-review/ci-review")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one parameter, its value taken as text (SHAs and refs stay text); repeatable",
    )
    parser.add_argument(
        "--params", metavar="JSON", help="parameters as a JSON object (--param wins over it)"
    )
    parser.add_argument(
        "--timeout",
        default=DEFAULT_TIMEOUT,
        metavar="DURATION",
        help=f"how long to wait for the run to end, e.g. 30m (default {DEFAULT_TIMEOUT}); "
        "then cancel the run and exit 2",
    )
    parser.add_argument("--run-name", metavar="NAME", help="the flow run's name, e.g. 'PR 42'")


def parameters(pairs: list[str], params_json: str | None) -> dict[str, Any]:
    """The run's parameters: `--params` (a JSON object), then each `--param KEY=VALUE` as text."""
    out: dict[str, Any] = {}
    if params_json is not None:
        try:
            loaded = json.loads(params_json)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid value for --params: not JSON ({exc})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(
                "invalid value for --params: a JSON object is accepted, e.g. "
                '\'{"repository": "https://git.example.com/app.git", "commit": "HEAD"}\''
            )
        out.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"invalid value for --param: {pair!r} (accepted: KEY=VALUE, e.g. from_ref=main)"
            )
        out[key.strip()] = value
    return out


def check_names(request: RunRequest, schema: Mapping[str, Any]) -> None:
    """Refuse a parameter the deployment's flow does not take (its run would only crash)."""
    accepted = list(schema.get("properties") or {})
    unknown = [name for name in request.parameters if accepted and name not in accepted]
    if unknown:
        raise ConfigError(
            f"unknown parameter {unknown[0]!r} for {request.deployment} "
            f"(accepted: {', '.join(accepted)})"
        )


def cmd_deployment_run(args: argparse.Namespace) -> int:
    """Run the deployment, wait for its run, print how it ended; the exit code it maps to."""
    request = RunRequest.from_args(args)
    # Before Prefect is imported: nothing leaves the machine, its logs stay off the terminal.
    PrefectEnvironment.for_run(verbose=False, api={}, removed=()).apply(os.environ)
    from prefect.settings import PREFECT_API_URL

    api = PREFECT_API_URL.value()
    if not api:
        raise DeploymentRunError(
            "PREFECT_API_URL is not set: set it to the Prefect server the deployment is on, "
            "e.g. http://127.0.0.1:4200/api (`prefect server start` prints it)"
        )
    return _report(request, _run_and_wait(request, str(api)))


@dataclass(frozen=True)
class Ended:
    """A run as the wait left it: its own keyed artifacts, and why it crashed (from its log)."""

    run: FlowRun
    artifacts: list[Artifact]
    crash: str = ""
    timed_out: tuple[str, bool] | None = None  # the state it was left in, and no worker took it


def _run_and_wait(request: RunRequest, api: str) -> Ended:
    """Create the flow run and wait until it ends or the timeout."""
    import httpx
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    try:
        with get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name(request.deployment)
            check_names(request, deployment.parameter_openapi_schema or {})
            run = client.create_flow_run_from_deployment(
                deployment.id, parameters=request.parameters, name=request.run_name
            )
            _progress(f"{request.deployment}: flow run '{run.name}' created: {_link(run)}")
            run = _wait(client, run, request.timeout)
            if run.state is None or not run.state.is_final():  # timed out: not left going
                left = (_state_name(run.state), _waiting(run))
                return Ended(_cancel(client, run), [], "", timed_out=left)
            return Ended(run, _own_artifacts(client, run), crash_cause(client, run))
    except ObjectNotFound:
        raise DeploymentRunError(
            f"no deployment {request.deployment!r} on the Prefect API at {api} "
            "(`prefect deployment ls` lists them; `prefect --no-prompt deploy --all` creates them)"
        ) from None
    except httpx.HTTPStatusError as exc:
        raise DeploymentRunError(f"the Prefect API at {api} refused: {_detail(exc)}") from None
    except (httpx.HTTPError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and not isinstance(exc.__cause__, httpx.HTTPError):
            raise
        raise DeploymentRunError(
            f"cannot reach the Prefect API at {api} (PREFECT_API_URL): {_one_line(exc)}"
        ) from None


def _wait(client: SyncPrefectClient, run: FlowRun, timeout: float) -> FlowRun:
    """Poll the run until its state is final or `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    seen: str | None = None
    while True:
        state = run.state
        if state is not None and state.name != seen:
            seen = state.name
            _progress(f"flow run '{run.name}': {seen}")
        left = deadline - time.monotonic()
        if (state is not None and state.is_final()) or left <= 0:
            return run
        time.sleep(min(POLL_SECONDS, left))
        run = client.read_flow_run(run.id)


CANCEL_WAIT_SECONDS = 10.0


def _cancel(client: SyncPrefectClient, run: FlowRun) -> FlowRun:
    """Ask the API to cancel `run` (its worker then stops it) and wait a little for it to end."""
    from prefect.states import Cancelling

    client.set_flow_run_state(run.id, Cancelling(message="deployment-run --timeout"), force=True)
    deadline = time.monotonic() + CANCEL_WAIT_SECONDS
    run = client.read_flow_run(run.id)
    while run.state is not None and not run.state.is_final() and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS / 4)
        run = client.read_flow_run(run.id)
    return run


def _own_artifacts(client: SyncPrefectClient, run: FlowRun) -> list[Artifact]:
    """The keyed artifacts of the run itself (its review subflows' are their own)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    if run.state is None or not run.state.is_final():
        return []
    found = client.read_artifacts(
        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id]))
    )
    return [artifact for artifact in found if artifact.key]


def crash_cause(client: SyncPrefectClient, run: FlowRun) -> str:
    """A crashed run's state says only that its process exited: its first error log says why."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId, LogFilterLevel

    if run.state is None or not run.state.is_crashed():
        return ""
    errors = client.read_logs(
        log_filter=LogFilter(
            flow_run_id=LogFilterFlowRunId(any_=[run.id]), level=LogFilterLevel(ge_=40)
        ),
        limit=1,
    )
    lines = errors[0].message.strip().splitlines() if errors else []
    return f"cause (the run's log): {lines[-1]}" if lines else ""


def _report(request: RunRequest, ended: Ended) -> int:
    """Print the state message and the summaries; the exit code `reviewflow review` would give."""
    from reviewflow.report.gate import deployed_exit_code, summary_line

    run = ended.run
    state = run.state
    if ended.timed_out is not None:
        where, waiting = ended.timed_out
        idle = " (no worker took it: is one running on its work pool?)" if waiting else ""
        done = state is not None and state.is_cancelled()
        raise DeploymentRunError(
            f"flow run '{run.name}' ({run.id}) of {request.deployment} was still {where} after "
            f"{request.timeout:g} s{idle}: "
            + ("cancelled" if done else f"asked to cancel it (now {_state_name(state)})")
        )
    if state is None:  # the API answered a run without a state: nothing to report
        raise DeploymentRunError(f"flow run '{run.name}' ({run.id}) has no state")
    summaries, texts = _summaries(ended.artifacts)
    lines = [f"{state.name}: {state.message or 'no message'}", *filter(None, [ended.crash])]
    lines += [summary_line(summary) for summary in summaries] + texts
    sys.stdout.write("\n".join(lines) + "\n")
    return deployed_exit_code(state.is_completed(), summaries)


def _state_name(state: Any) -> str:
    return state.name if state is not None else "not scheduled"


def _summaries(artifacts: list[Artifact]) -> tuple[list[RunSummary], list[str]]:
    """The run summaries its table artifacts hold, and its Markdown artifacts' text."""
    from pydantic import ValidationError

    from reviewflow.report.gate import RunSummary

    summaries: list[RunSummary] = []
    texts: list[str] = []
    for artifact in artifacts:
        if artifact.type == "markdown" and isinstance(artifact.data, str):
            texts.append(artifact.data.rstrip("\n"))
        elif artifact.type == "table" and isinstance(artifact.data, str):
            for row in _rows(artifact.data):
                try:
                    summaries.append(RunSummary.model_validate(row))
                except ValidationError:
                    continue  # another table: not a run summary
    return summaries, texts


def _rows(data: str) -> list[Any]:
    try:
        rows = json.loads(data)
    except json.JSONDecodeError:
        return []
    return rows if isinstance(rows, list) else []


def _waiting(run: FlowRun) -> bool:
    """Still Scheduled (or Late): no worker has taken it."""
    return run.state is not None and run.state.is_scheduled()


def _link(run: FlowRun) -> str:
    from prefect.utilities.urls import url_for

    return url_for(run) or f"flow run id {run.id}"


def _detail(exc: httpx.HTTPStatusError) -> str:
    try:
        detail = exc.response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return _one_line(detail or exc)


def _one_line(value: object) -> str:
    return " ".join(str(value).split()) or type(value).__name__


def _progress(line: str) -> None:
    sys.stderr.write(f"reviewflow: {line}\n")
    sys.stderr.flush()
