"""The review flow. `python -m flows.review ARGS` is the same as `reviewflow review ARGS`."""

from __future__ import annotations

import sys

if __name__ == "__main__":  # hand over to the CLI before paying for the Prefect import
    from flows.cli import main

    raise SystemExit(main(["review", *sys.argv[1:]]))

from typing import Any

from prefect import flow
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from reviewflow.config import Config
from reviewflow.errors import ReviewError
from reviewflow.report.preview import preview_document
from reviewflow.request import ReviewRequest
from tasks.diff import collect_diff
from tasks.select import select_files


def public_config(config: Config) -> Config:
    """The config without its API key: what may become a flow parameter."""
    model = config.model.model_copy(update={"api_key": None})
    return config.model_copy(update={"model": model})


@flow(name="review", validate_parameters=True)
def review(request: ReviewRequest, config: Config) -> dict[str, Any]:
    """Review one change: diff, file selection and rules (model stages follow)."""
    change = collect_diff(request, config.review.context_lines)
    scope = select_files(change, request, config.review.max_file_bytes)
    return preview_document(scope, request)


def run_review(request: ReviewRequest, config: Config) -> int:
    """Run the review flow locally and turn its outcome into an exit code."""
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        review(request, public_config(config))
    raise ReviewError(
        "the model review stages are not part of this build yet: "
        "use --preview to see the files and rules a review covers"
    )
