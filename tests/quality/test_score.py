"""Scoring as plain functions: the line window, the pairs the judge sees, exact metrics."""

from __future__ import annotations

import pytest

from bench.quality.cases import Golden
from bench.quality.judge import Verdict
from bench.quality.score import (
    WINDOW,
    Counts,
    Finding,
    count,
    finding_text,
    line_window_hits,
    pairs_for_judge,
)

GOLDEN = (
    Golden("divides by zero", file="calc.py", line=20),
    Golden("returns None", file="items.py", line=3),
    Golden("no test for the empty list"),
)


def test_the_window_reaches_five_lines_either_side_of_a_finding_s_range() -> None:
    inside = [Finding("calc.py", 10, 20 - WINDOW, "x")]
    outside = [Finding("calc.py", 10, 20 - WINDOW - 1, "x")]
    other_file = [Finding("other.py", 20, 20, "x")]
    assert [v.golden for v in line_window_hits(GOLDEN, inside)] == [0]
    assert line_window_hits(GOLDEN, outside) == []
    assert line_window_hits(GOLDEN, other_file) == []
    assert line_window_hits(GOLDEN, [Finding("calc.py", 25, None, "x")])[0].by == "line-window"


def test_the_judge_sees_only_golden_comments_the_window_did_not_catch() -> None:
    hits = line_window_hits(GOLDEN, [Finding("calc.py", 20, 20, "a"), Finding("x.py", 1, 1, "b")])
    assert pairs_for_judge(3, 2, hits) == [(1, 0), (1, 1), (2, 0), (2, 1)]


def _v(g: int, f: int, match: bool, error: str | None = None) -> Verdict:
    return Verdict(g, f, match, 0.9, "", "judge", error=error)


def test_counts_and_metrics_are_exact() -> None:
    verdicts = [_v(0, 0, True), _v(1, 0, True), _v(2, 1, False), _v(2, 2, True, error="timeout")]
    counts = count(3, 4, verdicts)
    assert counts == Counts(golden=3, caught=2, findings=4, matched_findings=1)
    assert counts.precision == 0.25
    assert counts.recall == pytest.approx(2 / 3)
    assert counts.f1 == pytest.approx(2 * 0.25 * (2 / 3) / (0.25 + 2 / 3))


def test_totals_add_counts_before_dividing() -> None:
    total = Counts(1, 1, 2, 1) + Counts(2, 1, 1, 1)
    assert (total.precision, total.recall, total.f1) == (
        pytest.approx(2 / 3),
        pytest.approx(2 / 3),
        pytest.approx(2 / 3),
    )


def test_a_clean_change_has_no_recall_and_its_findings_cost_precision() -> None:
    clean = Counts(golden=0, caught=0, findings=2, matched_findings=0)
    assert (clean.precision, clean.recall, clean.f1) == (0.0, None, 0.0)
    assert Counts(0, 0, 0, 0).f1 is None


def test_a_report_finding_reads_as_place_title_problem_suggestion() -> None:
    item = {
        "path": "a.py",
        "start_line": 3,
        "end_line": 4,
        "title": "T",
        "problem": "P",
        "suggestion": "S",
        "evidence": "E",
    }
    assert finding_text(item) == Finding("a.py", 3, 4, "a.py:3-4\nT\nP\nS")
