"""The Azure Pipelines example: it parses, its review command is one this CLI accepts, it names
its model, and the token and the model's key reach reviewflow through the step's environment
only."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from flows.cli.parser import build_parser
from tests.deploy.test_ci_files import assert_names_its_model

PIPELINE = Path(__file__).resolve().parents[2] / "deployments/azure/azure-pipelines.yml"


def test_the_pipeline_reviews_pull_requests_with_the_mapped_job_token() -> None:
    pipeline = yaml.safe_load(PIPELINE.read_text())
    checkout, _, install, review, publish = pipeline["steps"]
    assert checkout["fetchDepth"] == 0 and checkout["persistCredentials"] is False
    assert "constraints.txt" in install["script"]
    command = shlex.split(review["script"])
    args = build_parser().parse_args(command[1:])  # the flags this CLI really has
    assert (args.command, args.publish) == ("review", "azure")
    assert review["condition"] == "eq(variables['Build.Reason'], 'PullRequest')"
    assert review["env"]["SYSTEM_ACCESSTOKEN"] == "$(System.AccessToken)"
    assert review["env"]["REVIEWFLOW_MODEL_API_KEY"] == "$(OPENAI_API_KEY)"
    assert_names_its_model(review["env"])
    scripts = install["script"] + review["script"]
    assert "AccessToken" not in scripts and "OPENAI_API_KEY" not in scripts  # env: only
    assert publish["artifact"] == "reviewflow-reports"
