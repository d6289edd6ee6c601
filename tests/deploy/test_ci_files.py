"""The pull request CI files (GitHub Action, example workflows, GitLab CI, the Gitea and Forgejo
workflow), checked offline.

No network, no Docker, no Prefect: the YAML is parsed and what matters for safety is asserted
(least permissions, no `${{ }}` inside shell scripts, the API key only in a step's environment,
the fork workflow's privileged half never touching the pull request's code), and each example
names its model (`assert_names_its_model`, which the Bitbucket and Azure tests use too).
zizmor, GitHub Actions' static security linter, audits the GitHub files; the shell steps that
carry logic run under bash with stand-ins for `reviewflow` and `gh`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from flows.cli.parser import build_parser
from reviewflow.config import PLACEHOLDER_MODEL, ModelSettings
from reviewflow.config.protocols import BUILTIN

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "deployments/github"
ACTION = GITHUB / "action/action.yml"
PULL_REQUEST = GITHUB / "pull-request.yml"
FORK = GITHUB / "fork-pull-request.yml"
FORK_REVIEW = GITHUB / "fork-pull-request-review.yml"
GITLAB = ROOT / "deployments/gitlab/.gitlab-ci.yml"
GITEA = ROOT / "deployments/gitea/review.yml"
WORKFLOWS = (PULL_REQUEST, FORK, FORK_REVIEW)
ZIZMOR = shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")
BASH = shutil.which("bash") or "/bin/bash"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# The examples pin GitHub's own actions and the reviewflow action (OWNER is a placeholder)
# by tag, as the other examples do; zizmor's default wants every action pinned by hash.
ZIZMOR_CONFIG = """\
rules:
  unpinned-uses:
    config:
      policies:
        "actions/*": ref-pin
        "OWNER/*": ref-pin
"""


def assert_names_its_model(
    variables: Mapping[str, Any], key_variable: str = "REVIEWFLOW_MODEL_API_KEY"
) -> None:
    """A CI example's model, as the review step's environment has it: a protocol reviewflow
    knows, a model name (without one the review exits 2, "no model configured"), and the key in
    `key_variable`, a variable that protocol reads."""
    protocol = variables.get("REVIEWFLOW_MODEL_PROTOCOL")
    assert protocol in BUILTIN, variables
    assert variables.get("REVIEWFLOW_MODEL_NAME") not in (None, "", PLACEHOLDER_MODEL), variables
    assert key_variable in ("REVIEWFLOW_MODEL_API_KEY", *BUILTIN[str(protocol)].key_env)


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def _triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    on = workflow["on"] if "on" in workflow else workflow[True]  # YAML 1.1 reads `on` as true
    return {on: None} if isinstance(on, str) else dict(on)


def _steps(path: Path) -> list[dict[str, Any]]:
    data = _load(path)
    if "runs" in data:
        return list(data["runs"]["steps"])
    return [step for job in data["jobs"].values() for step in job["steps"]]


def _step(path: Path, step_id: str) -> dict[str, Any]:
    [step] = [step for step in _steps(path) if step.get("id") == step_id]
    return step


def _evaluate(value: str, context: dict[str, str]) -> str:
    """GitHub's expression substitution, for the few expressions these steps use."""
    return EXPRESSION.sub(lambda match: context[match.group(1)], value)


def _run_step(
    step: dict[str, Any], context: dict[str, str], tmp_path: Path, path: str = ""
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run a `run:` step with its `env:` evaluated, as a runner runs `shell: bash`; its outputs."""
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        "PATH": f"{path}{os.pathsep}{os.environ['PATH']}" if path else os.environ["PATH"],
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        **{name: _evaluate(str(value), context) for name, value in step["env"].items()},
    }
    result = subprocess.run(
        [BASH, "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return result, outputs


def _fake(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / name).write_text(f"#!{BASH}\n{script}")
    (bin_dir / name).chmod(0o755)


def test_zizmor_passes(tmp_path: Path) -> None:
    config = tmp_path / "zizmor.yml"
    config.write_text(ZIZMOR_CONFIG)
    files = [str(path.relative_to(ROOT)) for path in (ACTION, *WORKFLOWS)]
    result = subprocess.run(
        [ZIZMOR, "--offline", "--persona", "pedantic", "--config", str(config), *files],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout
    # The one finding silenced, with its reason beside it: workflow_run is the fork pattern.
    ignores = re.findall(r"zizmor: ignore\[([a-z-]+)\]", "".join(p.read_text() for p in WORKFLOWS))
    assert ignores == ["dangerous-triggers"]


def test_action_inputs_defaults_and_outputs() -> None:
    action = _load(ACTION)
    inputs = action["inputs"]
    assert list(inputs) == [
        "model-protocol", "model-name", "model-endpoint", "api-key", "fail-on", "publish",
        "github-token", "python-version", "extra-args",
    ]  # fmt: skip
    defaults = {name: spec.get("default") for name, spec in inputs.items()}
    assert defaults == {
        "model-protocol": "openai",
        "model-name": None,
        "model-endpoint": "",
        "api-key": None,
        "fail-on": "critical,high",
        "publish": "github",
        "github-token": "${{ github.token }}",
        "python-version": "3.11",
        "extra-args": "",
    }
    required = {name for name, spec in inputs.items() if spec.get("required")}
    assert required == {"model-name", "api-key"}
    assert all(spec.get("description") for spec in inputs.values())
    assert action["runs"]["using"] == "composite"
    assert set(action["outputs"]) == {"report-dir", "exit-code"}
    assert action["outputs"]["report-dir"]["value"] == "${{ steps.prepare.outputs.report-dir }}"
    header = ACTION.read_text().split("\nname:", 1)[0]
    for needed in ("pull-requests: write", "contents: read", "fetch-depth: 0", "uses: "):
        assert needed in header  # permissions, the checkout and a usage example, documented


def test_no_expression_in_any_run_block() -> None:
    """Script injection: `${{ }}` in `run:` is pasted into the script before the shell parses it."""
    for path in (ACTION, *WORKFLOWS, GITEA):
        for step in _steps(path):
            if "run" in step:
                assert "${{" not in step["run"], (path.name, step.get("name"))
                check = subprocess.run(
                    [BASH, "-n"], input=step["run"], capture_output=True, text=True, check=False
                )
                assert check.returncode == 0, (path.name, step.get("name"), check.stderr)


def test_api_key_and_token_reach_reviewflow_only_through_env() -> None:
    text = ACTION.read_text()
    assert text.count("inputs.api-key") == 1
    assert text.count("inputs.github-token") == 2  # GITHUB_TOKEN and REVIEWFLOW_GITHUB_TOKEN
    review = _step(ACTION, "review")
    assert review["env"]["REVIEWFLOW_MODEL_API_KEY"] == "${{ inputs.api-key }}"
    assert review["env"]["REVIEWFLOW_GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    for step in _steps(ACTION):
        assert "api-key" not in str(step.get("with", "")) + step.get("run", "")
        assert "API_KEY" not in step.get("run", "")  # not even as $REVIEWFLOW_MODEL_API_KEY
    # In the workflows, the secret goes to the action's api-key input and nowhere else.
    for path in (PULL_REQUEST, FORK_REVIEW):
        uses_secret = [step for step in _steps(path) if "secrets." in str(step)]
        assert [step["with"]["api-key"] for step in uses_secret] == [
            "${{ secrets.OPENAI_API_KEY }}"
        ]
        assert path.read_text().count("${{ secrets.") == 1
    assert "${{ secrets." not in FORK.read_text()


def test_action_installs_itself_pinned_and_runs_a_quiet_review() -> None:
    [setup] = [step for step in _steps(ACTION) if "setup-python" in step.get("uses", "")]
    assert setup["with"] == {
        "python-version": "${{ inputs.python-version }}",
        "update-environment": False,  # the caller's Python and PATH stay as they were
    }
    install = _step(ACTION, "prepare")
    assert '"$GITHUB_ACTION_PATH/../../.."' in install["run"]  # the action's own checkout
    assert '--constraint "$source/deployments/docker/constraints.txt" "$source"' in install["run"]
    assert "report-dir=" in install["run"]
    for step in (install, _step(ACTION, "review")):
        assert step["env"]["DO_NOT_TRACK"] == "1"
        assert step["env"]["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"


def test_action_review_step_passes_inputs_as_words_and_keeps_the_exit_code(
    tmp_path: Path,
) -> None:
    review = _step(ACTION, "review")
    bin_dir = tmp_path / "reviewflow-venv/bin"
    _fake(bin_dir, "reviewflow", 'printf "%s\\n" "$@" > "$RUNNER_TEMP/argv"\n'
          'env > "$RUNNER_TEMP/env"\nexit 1\n')  # fmt: skip
    hostile = "--pull-request 42\n  --trusted-ref main $(touch pwned) `touch pwned` ; *"
    context = {
        "inputs.model-protocol": "anthropic",
        "inputs.model-name": "claude-x",
        "inputs.model-endpoint": "",
        "inputs.api-key": "sk-secret-123",
        "inputs.github-token": "ghs_token",
        "inputs.publish": "github",
        "inputs.fail-on": "critical",
        "inputs.extra-args": hostile,
        "steps.prepare.outputs.report-dir": str(tmp_path / "reports dir"),
    }
    result, outputs = _run_step(review, context, tmp_path)
    assert result.returncode == 1, result.stderr  # reviewflow's own code: the gate failed
    assert outputs == {"exit-code": "1"}
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv == [
        "review", "--publish", "github", "--fail-on", "critical",
        "--report-dir", str(tmp_path / "reports dir"), "--no-progress",
        "--pull-request", "42", "--trusted-ref", "main",
        "$(touch", "pwned)", "`touch", "pwned`", ";", "*",
    ]  # fmt: skip
    assert not list(tmp_path.rglob("pwned"))
    assert "sk-secret-123" not in " ".join(argv)
    env = dict(
        line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines() if "=" in line
    )
    assert env["REVIEWFLOW_MODEL_API_KEY"] == "sk-secret-123"
    assert env["REVIEWFLOW_MODEL_PROTOCOL"] == "anthropic"
    assert env["GITHUB_TOKEN"] == env["REVIEWFLOW_GITHUB_TOKEN"] == "ghs_token"
    # The command, the stand-in's argv without its hostile extras, is one this CLI accepts.
    args = build_parser().parse_args(argv[:12])
    assert (args.command, args.publish, args.pull_request) == ("review", "github", 42)


def test_pull_request_workflow_least_permissions() -> None:
    workflow = _load(PULL_REQUEST)
    assert set(_triggers(workflow)) == {"pull_request"}
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert "head.repo.full_name == github.repository" in job["if"]  # forks: the other pattern
    checkout, action, upload = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert action["uses"].split("@")[0].endswith("/reviewflow/deployments/github/action")
    assert action["with"]["publish"] == "github"
    assert set(action["with"]) <= set(_load(ACTION)["inputs"])
    assert upload["with"]["path"] == "${{ steps.reviewflow.outputs.report-dir }}"


def test_fork_unprivileged_half_records_only() -> None:
    workflow = _load(FORK)
    assert set(_triggers(workflow)) == {"pull_request"}
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert "permissions" not in job
    assert "head.repo.full_name != github.repository" in job["if"]
    record, upload = job["steps"]
    assert "uses" not in record and "checkout" not in str(job)  # no code of the fork is needed
    assert set(record["env"]) == {"PR_NUMBER", "HEAD_SHA"}
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["name"] == "reviewflow-pr"


def test_fork_privileged_half_never_touches_the_pull_requests_code() -> None:
    workflow = _load(FORK_REVIEW)
    for path in WORKFLOWS:
        assert "pull_request_target" not in _triggers(_load(path))
    triggers = _triggers(workflow)
    assert set(triggers) == {"workflow_run"}
    assert triggers["workflow_run"] == {
        "workflows": [_load(FORK)["name"]],
        "types": ["completed"],
    }
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {
        "actions": "read", "contents": "read", "pull-requests": "write"
    }  # fmt: skip
    assert "workflow_run.event == 'pull_request'" in job["if"]
    assert "workflow_run.conclusion == 'success'" in job["if"]
    steps = job["steps"]
    download, check, checkout, fetch, review, upload = steps
    # The artifact is data from the fork: outside the workspace, and only a checked number used.
    assert download["with"]["path"] == "${{ runner.temp }}/reviewflow-pr"
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert "=~ ^[1-9][0-9]{0,9}$" in check["run"]
    assert check["env"]["RUN_HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    # The base repository, checked out as it is (no ref, no other repository), no credentials
    # left behind; the pull request's head fetched into a ref, never checked out.
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert [step for step in steps if "checkout" in step.get("uses", "")] == [checkout]
    assert '"+refs/pull/$PR_NUMBER/head:refs/remotes/pull/$PR_NUMBER/head"' in fetch["run"]
    never = re.compile(
        r"\bgit\s+(checkout|switch|worktree|reset|restore|merge|pull|rebase|cherry-pick|am|apply)"
        r"|\b(pip|pipx|uv|npm|make|python3?|source|sh|bash)\s|\./|install"
    )
    for step in steps:
        assert not never.search(step.get("run", "")), step.get("name")
        assert not step.get("uses", "").startswith("./")  # no local action from any tree
    assert review["uses"].split("@")[0].endswith("/reviewflow/deployments/github/action")
    assert review["with"]["extra-args"] == (
        "--pull-request ${{ steps.pr.outputs.number }} --trusted-ref ${{ github.sha }}"
    )
    assert review["with"]["publish"] == "github"
    assert upload["uses"].startswith("actions/upload-artifact@")


@pytest.mark.parametrize("path", [PULL_REQUEST, FORK_REVIEW], ids=lambda path: path.name)
def test_workflows_name_their_model(path: Path) -> None:
    """The action's inputs, as its review step puts them in reviewflow's environment."""
    [step] = [step for step in _steps(path) if "/github/action@" in step.get("uses", "")]
    inputs = {name: spec.get("default", "") for name, spec in _load(ACTION)["inputs"].items()}
    context = {f"inputs.{name}": str(value) for name, value in {**inputs, **step["with"]}.items()}
    env = {
        name: _evaluate(str(value), context)
        for name, value in _step(ACTION, "review")["env"].items()
        if name.startswith("REVIEWFLOW_MODEL_")
    }
    assert_names_its_model(env)
    assert step["with"]["model-protocol"] == env["REVIEWFLOW_MODEL_PROTOCOL"]  # not a default


@pytest.mark.parametrize(
    ("number", "api_head", "code", "outputs"),
    [
        ("17\n", "a" * 40, 0, {"number": "17", "current": "true"}),
        ("17\n", "b" * 40, 0, {"current": "false"}),  # pushed again since: its own run reviews
        ("17; curl evil", "a" * 40, 1, {}),
        ("$(id)", "a" * 40, 1, {}),
        ("017", "a" * 40, 1, {}),
    ],
)
def test_fork_privileged_half_checks_the_artifact(
    tmp_path: Path, number: str, api_head: str, code: int, outputs: dict[str, str]
) -> None:
    (tmp_path / "reviewflow-pr").mkdir()
    (tmp_path / "reviewflow-pr/number").write_text(number)
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "gh", f'[ "$*" = "api repos/o/r/pulls/17 --jq .head.sha" ] && echo {api_head}')
    context = {
        "github.token": "ghs_token",
        "github.repository": "o/r",
        "github.event.workflow_run.head_sha": "a" * 40,
    }
    result, written = _run_step(_step(FORK_REVIEW, "pr"), context, tmp_path, str(bin_dir))
    assert (result.returncode, written) == (code, outputs), result.stdout + result.stderr


def test_gitlab_job_publishes_on_merge_requests_only() -> None:
    pipeline = _load(GITLAB)
    job = pipeline["reviewflow"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert "GITLAB_TOKEN" not in job["variables"]  # a masked CI/CD variable, never in the file
    # The model: its name here, its protocol the default (openai, whose OPENAI_API_KEY the
    # header asks for as a masked variable).
    protocol = ModelSettings.model_fields["protocol"].default
    assert_names_its_model(
        {"REVIEWFLOW_MODEL_PROTOCOL": protocol, **job["variables"]}, key_variable="OPENAI_API_KEY"
    )
    [command] = [line for line in job["script"] if line.startswith("reviewflow ")]
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.command, args.publish, args.repo) == ("review", "gitlab", ".")
    assert args.from_ref is None and args.to_ref is None  # the merge request's base...head
    assert args.report_dir == "reviewflow-reports"
    assert job["artifacts"]["reports"]["codequality"] == (
        "reviewflow-reports/gl-code-quality-report.json"
    )
    assert job["artifacts"]["when"] == "always"
    header = GITLAB.read_text().split("\nreviewflow:", 1)[0]
    for needed in ("GITLAB_TOKEN", "Masked", "`api` scope", "CI_JOB_TOKEN cannot post"):
        assert needed in header


def test_gitea_workflow_reviews_pull_requests_with_the_jobs_token() -> None:
    workflow = _load(GITEA)
    assert set(_triggers(workflow)) == {"pull_request"}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write", "issues": "write"}
    checkout, setup, install, review, upload = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}  # full history
    assert setup["uses"].startswith("actions/setup-python@")
    assert "REVIEWFLOW_SOURCE" in install["env"] and "secrets." not in str(install)
    command = shlex.split(review["run"].replace("\\\n", " "))
    assert command[0] == "$RUNNER_TEMP/reviewflow-venv/bin/reviewflow"
    args = build_parser().parse_args(command[1:])
    assert (args.command, args.publish) == ("review", "gitea")
    assert args.from_ref is None and args.to_ref is None  # the pull request's base...head
    env = review["env"]
    assert env["REVIEWFLOW_MODEL_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    assert env["GITEA_TOKEN"] == "${{ secrets.GITEA_TOKEN }}"
    assert env["DO_NOT_TRACK"] == "1" and env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert_names_its_model(env)
    assert GITEA.read_text().count("${{ secrets.") == 2  # the key and the token, in env: only
    assert upload["if"] == "${{ !cancelled() }}"
    header = GITEA.read_text().split("\non:", 1)[0]
    for needed in ("OPENAI_API_KEY", "GITEA_TOKEN", "write:repository", "write:issue"):
        assert needed in header
