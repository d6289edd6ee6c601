"""The review flow. `python -m flows.review ARGS` is the same as `reviewflow review ARGS`."""

from __future__ import annotations

import sys

if __name__ == "__main__":  # hand over to the CLI before paying for the Prefect import
    from flows.cli import main

    raise SystemExit(main(["review", *sys.argv[1:]]))

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from reviewflow.config import Config
from reviewflow.errors import ReviewError
from reviewflow.preview import preview_document
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
    scope = select_files(change, request)
    return preview_document(scope, request)


@contextlib.contextmanager
def _stdin_as_file(request: ReviewRequest) -> Iterator[ReviewRequest]:
    """A diff on stdin is saved to a private temporary file the flow can read."""
    if request.diff_source != "-":
        yield request
        return
    tmpdir = tempfile.mkdtemp(prefix="reviewflow-diff-")
    try:
        path = Path(tmpdir) / "stdin.diff"
        with open(path, "wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        yield request.model_copy(update={"diff_source": str(path)})
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def run_review(request: ReviewRequest, config: Config, home: Path) -> int:
    """Run the review flow locally and turn its outcome into an exit code."""
    del home  # reports land in the home once the report stage exists
    with (
        _stdin_as_file(request) as effective,
        temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
    ):
        review(effective, public_config(config))
    raise ReviewError(
        "the model review stages are not part of this build yet: "
        "use --preview to see the files and rules a review covers"
    )
