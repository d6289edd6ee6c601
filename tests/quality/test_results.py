"""The run's JSON and Markdown from case results (plain functions)."""

from __future__ import annotations

from bench.quality.cases import Case, Golden
from bench.quality.harness import CaseResult
from bench.quality.judge import Verdict, judge_request
from bench.quality.results import Prices, markdown, run_json
from bench.quality.review import ReviewRun
from bench.quality.score import count

META = {
    "label": "t",
    "mode": "live",
    "cases_file": "cases.json",
    "source": {"benchmark": "b"},
    "review_model": "openai:m",
    "judge_model": "openai:j",
    "judge_prompts": "abc",
}


def _result() -> CaseResult:
    case = Case("c1", "file:///r", (Golden("g0"), Golden("g1")), base="a" * 40, head="b" * 40)
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000}
    review = ReviewRun(1, 12.5, {"findings": [{}], "usage": usage}, "")
    verdicts = [
        Verdict(0, 0, True, 0.9, "same", "judge", prompt_tokens=200_000, completion_tokens=0),
        Verdict(1, 0, False, 0.0, "", "judge", error="unreadable answer"),
    ]
    return CaseResult(case, review=review, verdicts=verdicts, counts=count(2, 1, verdicts))


def test_costs_tokens_and_judge_errors_are_reported() -> None:
    prices = Prices(review_in=2.0, review_out=8.0, judge_in=1.0, judge_out=1.0)
    data = run_json([_result()], prices, META)
    case = data["cases"][0]
    assert case["cost_usd"] == 2.0 + 4.0 + 0.2
    assert case["judge_errors"] == 1 and data["total"]["judge_errors"] == 1
    assert (data["total"]["caught"], data["total"]["recall"]) == (1, 0.5)
    table = markdown(data)
    assert "| c1 | 2 | 1 | 1 | 1 | 100.0% | 50.0% | 66.7% | 1700000 | $6.2000 | 12.5 |" in table
    assert "1 judge error(s), counted as no match." in table


def test_without_prices_there_is_no_cost() -> None:
    data = run_json([_result()], Prices(), META)
    assert data["cases"][0]["cost_usd"] is None and data["total"]["cost_usd"] is None


def test_a_model_that_takes_only_its_default_temperature_gets_none() -> None:
    assert judge_request("g", "f", None).temperature is None
