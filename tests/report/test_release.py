"""The nightly release review in words: branch rows, Variable names, the Markdown table, the
state message."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from reviewflow.models import Severity
from reviewflow.report.release import (
    BranchReview,
    release_artifact_key,
    release_passed,
    release_reason,
    reviewed_branch,
    slug,
    summary_markdown,
    variable_name,
)
from tests.report.samples import empty_outcome, incomplete_outcome, make_outcome
from tests.report.test_gate import finished_run

GATE = (Severity.CRITICAL, Severity.HIGH)
HEAD, SINCE = "a" * 40, "b" * 40


def test_rows_of_reviewed_branches() -> None:
    passed = reviewed_branch("release/1", HEAD, SINCE, finished_run(empty_outcome()), GATE)
    assert (passed.status, passed.exit_code, passed.reason) == ("reviewed", 0, "")
    gated = reviewed_branch("release/2", HEAD, SINCE, finished_run(make_outcome()), GATE)
    assert (gated.status, gated.exit_code, gated.findings) == ("reviewed", 1, 8)  # it moves on
    assert gated.reason.startswith("gate failed: 4 finding(s)")
    assert gated.review_id == "20261130T120000Z-3f2a9c1d"
    incomplete = reviewed_branch("release/3", HEAD, SINCE, finished_run(incomplete_outcome()), GATE)
    assert (incomplete.status, incomplete.exit_code) == ("failed", 2)  # tried again next night
    unwritten = finished_run(empty_outcome(), report_error="disk full")
    row = reviewed_branch("release/4", HEAD, SINCE, unwritten, GATE)
    assert (row.status, row.exit_code, row.reason) == ("failed", 2, "report not written: disk full")


def test_names_are_keys_prefect_accepts() -> None:
    key = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
    url = "https://git.example.com/Team/My_App.git"
    name = variable_name(url, "release/1.2")
    assert key.fullmatch(name) and name.startswith("reviewflow-nightly-my-app-release-1-2-")
    assert name == variable_name(url, "release/1.2") != variable_name(url, "release/1-2")
    assert release_artifact_key(url) == "release-review-my-app-git"
    assert release_artifact_key("/srv/git/app/") == "release-review-app"
    assert slug("!!!") == "x" and len(slug("a" * 90)) == 40


def test_the_markdown_table_has_a_row_per_branch_and_escapes_pipes() -> None:
    rows = [
        BranchReview(branch="release/1", head=HEAD, since=SINCE, status="up-to-date"),
        BranchReview(
            branch="release/2",
            head=HEAD,
            since=None,
            status="failed",
            exit_code=2,
            reason="no common history | with main",
        ),
    ]
    text = summary_markdown("https://h/app.git", "main", rows)
    tokens = MarkdownIt().enable("table").parse(text)
    cells = [t.content for t in tokens if t.type == "inline"]
    assert cells[0] == "Nightly release review of `https://h/app.git`"
    assert "`release/1`" in cells and f"{SINCE[:10]}..{HEAD[:10]}" in cells
    assert "no common history | with main" in cells  # one cell: the pipe was escaped
    assert HEAD[:10] in cells  # no `since`: the head alone


def test_the_state_message_names_each_failing_branch() -> None:
    ok = BranchReview(branch="release/1", head=HEAD, since=SINCE, status="reviewed")
    bad = BranchReview(
        branch="release/2", head=HEAD, since=SINCE, status="reviewed", exit_code=1, reason="gate"
    )
    assert release_reason([ok]) == "" and release_passed([ok]) == "1 branch(es) passed"
    assert release_reason([ok, bad]) == "release review failed for 1 branch(es): release/2: gate"
