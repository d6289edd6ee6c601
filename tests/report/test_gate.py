"""A deployed review's end in words: the gate line, the run summary, the exit code it maps to."""

from __future__ import annotations

import re

import pytest

from reviewflow.models import ReviewWarning, Severity
from reviewflow.report.gate import (
    RunSummary,
    deployed_exit_code,
    gate_reason,
    run_reason,
    run_summary,
    summary_key,
    summary_line,
)
from reviewflow.report.outcome import ReviewOutcome, ReviewRun
from tests.report.samples import empty_outcome, finding, incomplete_outcome, make_outcome

GATE = (Severity.CRITICAL, Severity.HIGH)


def finished_run(
    outcome: ReviewOutcome, written: dict[str, str] | None = None, report_error: str | None = None
) -> ReviewRun:
    """A finished review run as the `review` flow returns it."""
    return ReviewRun(outcome=outcome, written=written or {}, report_error=report_error)


def test_the_gate_line_names_the_first_failing_findings() -> None:
    assert gate_reason(empty_outcome(), GATE) == ""
    line = gate_reason(make_outcome(), GATE)
    assert line.startswith("gate failed: 4 finding(s), critical src/app.py:10 critical problem")
    assert line.count(";") == 2 and line.endswith(" (+1 more)")
    one = make_outcome(findings=(finding(2, Severity.HIGH, path="a.py"),))
    assert gate_reason(one, GATE) == "gate failed: 1 finding(s), high a.py:12 high problem number 2"


def test_an_incomplete_review_says_why() -> None:
    assert gate_reason(incomplete_outcome(), GATE) == (
        "review incomplete: review filter answered twice without JSON"
    )
    bare = make_outcome(status="incomplete", exit_code=2)
    assert gate_reason(bare, GATE) == "review incomplete: see the report"
    looped = make_outcome(
        status="incomplete",
        exit_code=2,
        incomplete_files=("a.py",),
        warnings=(
            ReviewWarning("rule_reference_failed", "rules.md not found", None),
            ReviewWarning("tool_loop_limit_reached", "chunk 1/1: all 30 tool rounds", "a.py"),
        ),
    )
    assert gate_reason(looped, GATE) == (
        "review incomplete: chunk 1/1: all 30 tool rounds (1 file incomplete)"
    )


def test_a_cancelled_review_says_it_was_cancelled_and_how_far_it_got() -> None:
    outcome = make_outcome(status="incomplete", exit_code=130)
    files = len(outcome.files)
    cancelled = outcome.model_copy(update={"incomplete_files": outcome.files[:1]})
    assert gate_reason(cancelled, GATE) == (
        f"review cancelled: {files - 1} of {files} file{'s' if files != 1 else ''} finished"
    )


def test_a_report_not_written_joins_the_gate_line() -> None:
    passed = finished_run(empty_outcome(), report_error="cannot write /r/x.md: is a directory")
    assert run_reason(passed, GATE) == "report not written: cannot write /r/x.md: is a directory"
    failed = finished_run(make_outcome(), report_error="disk full")
    assert run_reason(failed, GATE).startswith("gate failed: 4 finding(s), ")
    assert run_reason(failed, GATE).endswith("; report not written: disk full")
    assert run_reason(finished_run(empty_outcome()), GATE) == ""


def test_the_summary_and_its_line() -> None:
    run = finished_run(
        make_outcome(findings=(finding(1, Severity.HIGH),)),
        written={"json": "/r/review-report.json", "sarif": "/r/review-report.sarif"},
    )
    summary = run_summary(run)
    assert summary.model_dump(mode="json") == {
        "review_id": "20261130T120000Z-3f2a9c1d",
        "status": "complete",
        "exit_code": 1,
        "findings": 1,
        "reports": {"json": "/r/review-report.json", "sarif": "/r/review-report.sarif"},
    }
    assert RunSummary.model_validate(summary.model_dump(mode="json")) == summary  # round trip
    assert summary_line(summary) == (
        "review 20261130T120000Z-3f2a9c1d: complete, exit code 1, 1 finding; "
        "reports on the worker: json /r/review-report.json, sarif /r/review-report.sarif"
    )
    bare = run_summary(finished_run(incomplete_outcome(), report_error="disk full"))
    assert (bare.exit_code, bare.status) == (2, "incomplete")
    assert (
        summary_line(bare)
        == "review 20261130T120000Z-3f2a9c1d: incomplete, exit code 2, 8 findings"
    )


def test_the_summary_key_is_stable_per_repository() -> None:
    url = "https://git.example.com/team/app.git"
    key = summary_key(url)
    assert key == summary_key(url) and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", key)
    assert key.startswith("reviewflow-") and "-app-git-ci-review-" in key and len(key) <= 100
    assert summary_key("https://git.example.com/other/app.git") != key


def _summary(exit_code: int) -> RunSummary:
    return RunSummary(
        review_id="r", status="complete", exit_code=exit_code, findings=exit_code, reports={}
    )


@pytest.mark.parametrize(
    ("completed", "codes", "expected"),
    [
        (True, [0], 0),
        (True, [], 0),
        (False, [1], 1),  # the gate failed on findings: the CLI's exit 1
        (False, [0, 1], 1),
        (False, [2], 2),  # incomplete or a report not written
        (False, [1, 2], 2),
        (False, [], 2),  # failed before any review (configuration, Git), crashed, cancelled
        (False, [0], 2),  # the review passed but the run failed after it
    ],
)
def test_the_exit_code_of_a_deployed_run(completed: bool, codes: list[int], expected: int) -> None:
    assert deployed_exit_code(completed, [_summary(code) for code in codes]) == expected


def test_errors_beyond_three_are_not_listed() -> None:
    errors = tuple(ReviewWarning("x", f"error {n}") for n in range(5))
    outcome = make_outcome(status="incomplete", exit_code=2, errors=errors)
    assert gate_reason(outcome, GATE) == "review incomplete: error 0; error 1; error 2"
