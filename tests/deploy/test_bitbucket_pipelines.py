"""The Bitbucket Pipelines example: a pull request pipeline only, the whole history cloned,
the model named, the token a secured repository variable (never in the file), and a command
the CLI parses."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from flows.cli.parser import build_parser
from tests.deploy.test_ci_files import assert_names_its_model

PIPELINES = Path(__file__).resolve().parents[2] / "deployments/bitbucket/bitbucket-pipelines.yml"


def test_the_pipeline_reviews_pull_requests_and_publishes_on_bitbucket() -> None:
    text = PIPELINES.read_text()
    pipeline = yaml.safe_load(text)
    assert set(pipeline["pipelines"]) == {"pull-requests"}  # never on a branch push
    assert pipeline["clone"]["depth"] == "full"
    [step] = [item["step"] for item in pipeline["pipelines"]["pull-requests"]["**"]]
    [command] = [line for line in step["script"] if line.startswith("reviewflow ")]
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.command, args.publish, args.repo) == ("review", "bitbucket", ".")
    assert args.from_ref is None and args.to_ref is None  # the pull request's own range
    assert step["artifacts"] == ["reviewflow-reports/**"]
    assert "BITBUCKET_TOKEN:" not in text.split("\nimage:", 1)[1]  # a secured variable only
    header = text.split("\nimage:", 1)[0]
    for needed in ("BITBUCKET_TOKEN", "Secured", "Pull requests: Write", "app passwords"):
        assert needed in header


def test_the_pipeline_names_its_model_before_the_review() -> None:
    """Pipelines has no `env:`: the step's script exports the model's protocol and name, and
    the key is the secured OPENAI_API_KEY the header asks for (the openai protocol's own)."""
    text = PIPELINES.read_text()
    [step] = [item["step"] for item in yaml.safe_load(text)["pipelines"]["pull-requests"]["**"]]
    exports = [line for line in step["script"] if line.startswith("export ")]
    assert step["script"][: len(exports)] == exports  # before the review runs
    variables = dict(shlex.split(line)[1].split("=", 1) for line in exports)
    assert_names_its_model(variables, key_variable="OPENAI_API_KEY")
    header = text.split("\nimage:", 1)[0]
    for needed in ("OPENAI_API_KEY", "REVIEWFLOW_MODEL_PROTOCOL", "REVIEWFLOW_MODEL_NAME"):
        assert needed in header
