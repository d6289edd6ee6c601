"""The Bitbucket Pipelines example: a pull request pipeline only, the whole history cloned,
the token a secured repository variable (never in the file), and a command the CLI parses."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from flows.cli.parser import build_parser

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
