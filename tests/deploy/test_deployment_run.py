"""`reviewflow deployment-run` without a server: its parameters, and one line and exit 2 when
there is no API to run on. The runs themselves are in test_worker.py (a real server and worker)."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import LogCreate
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Completed, Crashed

from flows.cli.deployment_run import RunRequest, check_names, crash_cause, parameters
from flows.cli.main import main
from flows.cli.parser import build_parser
from flows.deployed import ci_review
from reviewflow.errors import ConfigError


def _request(*argv: str) -> RunRequest:
    return RunRequest.from_args(build_parser().parse_args(["deployment-run", *argv]))


def test_parameters_are_text_unless_given_as_json() -> None:
    request = _request(
        "ci-review/ci-review",
        "--params", '{"repository": "/srv/app", "no_cache": true, "overrides": {"a": 1}}',
        "--param", "commit=1e5",  # a short SHA that JSON would read as 100000.0
        "--param", "repository=https://h/app.git?x=1",
        "--param", "to_ref=",
    )  # fmt: skip
    assert request.parameters == {
        "repository": "https://h/app.git?x=1",  # --param wins, split at the first '='
        "no_cache": True,
        "overrides": {"a": 1},
        "commit": "1e5",
        "to_ref": "",
    }
    assert (request.deployment, request.timeout, request.run_name) == (
        "ci-review/ci-review", 3600.0, None
    )  # fmt: skip
    assert _request("a/b", "--timeout", "90s", "--run-name", "PR 7").timeout == 90.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ci-review"], r"invalid deployment name: 'ci-review' \(accepted: FLOW/DEPLOYMENT"),
        (["a/b/c"], "invalid deployment name"),
        (["a/b", "--param", "commit"], r"invalid value for --param: 'commit' \(accepted: KEY="),
        (["a/b", "--param", "=x"], "invalid value for --param"),
        (["a/b", "--params", "[1]"], "invalid value for --params: a JSON object is accepted"),
        (["a/b", "--params", "{"], "invalid value for --params: not JSON"),
        (["a/b", "--timeout", "soon"], "invalid value for --timeout: 'soon'"),
    ],
)
def test_bad_arguments_are_named(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _request(*argv)
    assert parameters([], None) == {}


def test_its_help_has_examples_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["deployment-run", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and out.startswith("usage: reviewflow deployment-run")
    assert "\nexamples:\n  reviewflow deployment-run ci-review/ci-review " in out
    assert "exit codes: 0 the run completed, 1 the gate failed on findings, 2 anything" in out


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_api_or_an_unreachable_one_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["deployment-run", "ci-review/ci-review", "--param", "repository=/srv/app"]
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "reviewflow: error: PREFECT_API_URL is not set: set it to the Prefect server the "
        "deployment is on, e.g. http://127.0.0.1:4200/api (`prefect server start` prints it)\n"
    )

    api = f"http://127.0.0.1:{_closed_port()}/api"
    with temporary_settings(updates={PREFECT_API_URL: api}):
        assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"reviewflow: error: cannot reach the Prefect API at {api} (PREFECT_API_URL): "
    )
    assert captured.err.count("\n") == 1


def test_a_parameter_the_flow_does_not_take_is_refused_before_any_run() -> None:
    schema = ci_review.parameters.model_dump(mode="json")  # what `prefect deploy` registered
    check_names(_request("ci-review/ci-review", "--param", "repository=/srv/app"), schema)
    accepted = (
        "repository, commit, from_ref, to_ref, trusted_ref, overrides, no_cache, platform, "
        "platform_repo, pull_request, files, all_files"
    )
    with pytest.raises(
        ConfigError, match=rf"unknown parameter 'colour' .*\(accepted: {accepted}\)"
    ):
        check_names(_request("ci-review/ci-review", "--param", "colour=blue"), schema)
    check_names(_request("a/b", "--param", "anything=1"), {})  # no schema: the server decides


@flow
def _probe() -> None:
    """A flow for runs this test creates by hand (never run)."""


@pytest.mark.usefixtures("prefect_harness")
def test_a_crashed_run_is_explained_by_its_first_error_log() -> None:
    trace = "Traceback (most recent call last):\n  ...\nScriptError: flows/deployed.py not found"
    with get_client(sync_client=True) as client:
        crashed = client.create_flow_run(_probe, state=Crashed(message="Process exited"))
        completed = client.create_flow_run(_probe, state=Completed())
        client.create_logs(
            [
                LogCreate(
                    name="prefect.flow_runs",
                    level=level,
                    message=message,
                    timestamp=datetime.now(UTC),
                    flow_run_id=crashed.id,
                )
                for level, message in ((20, "Running 1 deployment pull step(s)"), (40, trace))
            ]
        )
        assert crash_cause(client, client.read_flow_run(crashed.id)) == (
            "cause (the run's log): ScriptError: flows/deployed.py not found"
        )
        assert crash_cause(client, client.read_flow_run(completed.id)) == ""
