"""Write a review's report files (JSON, Markdown, SARIF, GitLab Code Quality), 0600 each."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reviewflow.config import OutputSettings
from reviewflow.errors import OutputError
from reviewflow.fsutil import write_output
from reviewflow.report.gitlab import build_code_quality
from reviewflow.report.location import output_path, review_dir
from reviewflow.report.markdown import render_markdown
from reviewflow.report.outcome import ReviewOutcome, report_json
from reviewflow.report.sarif import build_sarif


def _dumps(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


RENDERERS: dict[str, Callable[[ReviewOutcome], str]] = {
    "json": report_json,
    "markdown": render_markdown,
    "sarif": lambda outcome: _dumps(build_sarif(outcome)),
    "gitlab": lambda outcome: _dumps(build_code_quality(outcome)),
}


def report_targets(output: OutputSettings, directory: Path) -> dict[str, str]:
    """Report kind -> where it goes, for every report that is turned on."""
    targets = {kind: output_path(value, directory) for kind, value in output.reports.items()}
    return {kind: target for kind, target in targets.items() if target is not None}


def needs_directory(output: OutputSettings) -> bool:
    """True when a report that is on goes in the review's own directory (a relative path)."""
    targets = report_targets(output, Path()).values()
    return any(target != "-" and not Path(target).is_absolute() for target in targets)


def write_reports(
    outcome: ReviewOutcome, output: OutputSettings, directory: Path
) -> tuple[dict[str, str], str | None]:
    """Write every report that is turned on (through `write_output`): kind -> path written,
    and why one could not be written (None when all were).

    One that cannot be written does not stop the others (the review is paid for): the reason
    names the first failure and the reports that were written.
    """
    targets = report_targets(output, directory)
    failed: dict[str, str] = {}
    for kind, target in targets.items():
        try:
            write_output(target, RENDERERS[kind](outcome))
        except OutputError as exc:
            failed[kind] = str(exc)
    written = {kind: target for kind, target in targets.items() if kind not in failed}
    if not failed:
        return written, None
    first, *others = failed.values()
    more = f" (and {len(others)} more)" if others else ""
    kept = f"; written: {', '.join(written.values())}" if written else ""
    return written, f"{first}{more}{kept}"


def write_review_files(
    outcome: ReviewOutcome, output: OutputSettings, home: Path, directory: Path | None = None
) -> tuple[ReviewOutcome, dict[str, str], str | None, Path]:
    """Name the review and write its report files (`write_reports`) in its directory (`review_dir`;
    `directory`, when given, is one named before): the outcome with its final review ID, what
    was written, why one could not be, and the directory."""
    if directory is None:
        directory, review_id = review_dir(
            home,
            outcome.metadata.repository,
            outcome.review_id,
            output.report_dir,
            create=needs_directory(output),  # no empty directory when every report is elsewhere
        )
        outcome = outcome.model_copy(update={"review_id": review_id})
    written, failure = write_reports(outcome, output, directory)
    return outcome, written, failure, directory
