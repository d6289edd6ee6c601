"""The budget as plain functions: reserve and settle, many threads at once, the pool that
checks it before each request, the refused request's record and the report's keys."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from reviewflow.config import Config, ConsoleMode, ModelPrice, ReviewSettings
from reviewflow.cost.budget import budget_for, check_budget
from reviewflow.errors import ConfigError
from reviewflow.providers.budget import Budget, BudgetState, short_count
from reviewflow.providers.failures import BudgetExceeded
from reviewflow.providers.messages import ModelRequest, ModelResponse, ToolCall, Usage, UserMessage
from reviewflow.providers.pool import ProviderHandle, ProviderPool, pool_for
from reviewflow.report.assemble import budget_refused, budget_warning
from reviewflow.report.console import console_lines
from reviewflow.report.gate import incomplete_line
from reviewflow.report.outcome import build_report, report_schema
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import file_jobs, snapshot_of
from reviewflow.review.loop import review_chunk
from reviewflow.review.recording import Where, send_recorded
from reviewflow.review.records import RequestRecord, total_usage
from reviewflow.select.scope import collect, select
from tests.gitutil import GitRepo
from tests.report.samples import make_outcome, validate_report
from tests.wire_server import Delay, Text, WireServer, WireUsage

# handles resolve in a flow run's provider pools, active in each test's context
pytestmark = pytest.mark.usefixtures("pools")

REQUEST = ModelRequest(messages=(UserMessage(content="x" * 4000),))  # 1,000 tokens


def _tokens(budget: Budget) -> int:
    return budget.state().spent_tokens


def test_a_request_that_would_cross_the_budget_is_refused_and_holds_nothing() -> None:
    budget = Budget(3000, None, None, lambda request: 1000, completion_reserve=200)
    first = budget.reserve(REQUEST)  # 1,200
    second = budget.reserve(REQUEST)  # 2,400 held
    with pytest.raises(BudgetExceeded, match=r"budget of 3k tokens reached: 2,400 spent or"):
        budget.reserve(REQUEST)  # 3,600 > 3,000
    budget.settle(first, Usage(prompt_tokens=900, completion_tokens=50, total_tokens=950))
    budget.settle(second, None)  # no usage reported: what it held counts
    assert budget.state() == BudgetState(max_tokens=3000, spent_tokens=2150, refused_requests=1)
    with pytest.raises(BudgetExceeded):
        budget.reserve(REQUEST)  # 2,150 + 1,200 > 3,000
    assert budget.state().reached


def test_a_cost_budget_uses_the_price() -> None:
    price = ModelPrice(input=10.0, output=30.0)  # 1,000 prompt tokens: 0.01
    budget = Budget(None, 0.025, price, lambda request: 1000, completion_reserve=0)
    budget.settle(budget.reserve(REQUEST), Usage(prompt_tokens=1000, total_tokens=1000))
    budget.settle(budget.reserve(REQUEST), Usage(prompt_tokens=1000, total_tokens=1000))
    with pytest.raises(BudgetExceeded, match=r"budget of 0\.0250 in cost reached"):
        budget.reserve(REQUEST)
    assert budget.state().spent_cost == pytest.approx(0.02)
    with pytest.raises(ValueError):
        Budget(None, 1.0, None, lambda request: 1)


def test_the_budget_holds_across_threads() -> None:
    """64 threads reserve and settle at once: what was spent never passes the limit, and
    exactly the requests that fit were let through."""
    budget = Budget(50_000, None, None, lambda request: 1000, completion_reserve=0)
    sent = []
    lock = threading.Lock()

    def one(_: int) -> None:
        try:
            held = budget.reserve(REQUEST)
        except BudgetExceeded:
            return
        with lock:
            sent.append(held)
        budget.settle(held, Usage(prompt_tokens=1000, total_tokens=1000))

    with ThreadPoolExecutor(64) as pool:
        list(pool.map(one, range(400)))
    assert len(sent) == 50 and _tokens(budget) == 50_000
    assert budget.state().refused_requests == 350


def test_the_pool_sends_nothing_the_budget_refuses_and_counts_no_attempt() -> None:
    with WireServer() as wire:
        wire.script("openai", [Delay(0.3, Text("a", usage=WireUsage(prompt=900)))] * 4)
        budget = Budget(2500, None, None, lambda request: 1000, completion_reserve=0)
        with ProviderPool(wire.settings("openai"), 4, budget=budget) as pool:
            results: list[object] = []

            def ask() -> None:
                try:
                    results.append(pool.complete(REQUEST))
                except BudgetExceeded as exc:
                    results.append(exc)

            threads = [threading.Thread(target=ask) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            refused = [r for r in results if isinstance(r, BudgetExceeded)]
            assert len(refused) == 2 and all(r.attempts == 0 for r in refused)
            assert len(wire.requests()) == pool.meter.totals().requests == 2
            assert budget.state().spent_tokens == 2 * (900 + 7)
            sibling = pool.for_model("other-model")  # the verifier's pool shares the budget
            with pytest.raises(BudgetExceeded):
                pool_for_handle(sibling).complete(REQUEST)


def pool_for_handle(handle: ProviderHandle) -> ProviderPool:
    return pool_for(handle)


def test_a_refused_request_is_recorded_as_not_sent() -> None:
    def send(request: ModelRequest) -> object:
        raise BudgetExceeded("budget of 3k tokens reached: ... (not sent)")

    response, record = send_recorded(send, REQUEST, Where("main", "a.py", 0, 1))  # type: ignore[arg-type]
    assert response is None
    assert (record.status, record.attempts) == ("not_sent", 0)
    assert record.error and record.error.startswith("budget of 3k tokens reached")


def test_config_checks_of_a_budget() -> None:
    with pytest.raises(ConfigError, match=r"review\.max_cost \(2\) needs the price of model"):
        check_budget(Config.model_validate({"model": {"name": "local"}, "review": {"max_cost": 2}}))
    dask = {"review": {"max_tokens": 5000, "task_runner": "dask"}}
    with pytest.raises(ConfigError, match=r"need review\.task_runner thread"):
        check_budget(Config.model_validate(dask))
    assert budget_for(Config()) is None
    priced = {"model": {"name": "local", "price": {"input": 1, "output": 2}}}
    budget = budget_for(Config.model_validate({**priced, "review": {"max_cost": 2}}))
    assert budget is not None and budget.state().max_cost == 2


def test_the_report_lists_budget_files_and_says_how_far_it_got() -> None:
    records = (
        RequestRecord(stage="main", path="src/app.py"),
        RequestRecord(stage="main", path="src/util.py", status="not_sent", attempts=0),
        RequestRecord(stage="filter", path="api/handlers.py", status="not_sent", attempts=0),
    )
    refused = budget_refused(records)
    assert refused == ("api/handlers.py", "src/util.py")
    state = BudgetState(max_tokens=200_000, spent_tokens=199_000, refused_requests=2)
    [warning] = budget_warning(state, 3, 2)
    assert warning.message.startswith("budget of 200k tokens reached after 1 of 3 files")
    figures = {"requests": 9, "prompt_tokens": 1, "completion_tokens": 1, "cost": None}
    outcome = make_outcome(
        status="incomplete",
        exit_code=2,
        incomplete_files=refused,
        budget_files=refused,
        budget=state,
        warnings=(warning,),
        process=records,
        estimate={
            "requests": 9.5,
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "cost": None,
            "model": "m",
            "price": None,
            "by_stage": {},
            "files": [],
            "findings": {"expected": 0.5, "low": 0, "high": 2},
            "range": {"low": figures, "high": figures},
        },
    )
    report = build_report(outcome)
    validate_report(report)
    assert report["incomplete_files"] == [
        {"path": "api/handlers.py", "reason": "budget"},
        {"path": "src/util.py", "reason": "budget"},
    ]
    assert report["budget"]["files_finished"] == 1 and report["budget"]["reached"] is True
    assert report["usage"]["cost"] is None and report["estimate"]["requests"] == 9.5
    assert incomplete_line(outcome) == (
        "review incomplete: budget of 200k tokens reached after 1 of 3 files (2 files incomplete)"
    )
    assert "estimate" in report_schema()["properties"]


def test_short_counts() -> None:
    assert [short_count(n) for n in (950, 1000, 1500, 200_000, 1_500_000)] == [
        "950", "1k", "1.5k", "200k", "1.5M"
    ]  # fmt: skip


def test_check_refuses_without_holding_anything() -> None:
    budget = Budget(1500, None, None, lambda request: 1000, completion_reserve=0)
    budget.check(REQUEST)
    budget.check(REQUEST)  # nothing held by a check
    held = budget.reserve(REQUEST)
    with pytest.raises(BudgetExceeded):
        budget.check(REQUEST)
    budget.settle(held, None)
    assert budget.state().refused_requests == 1 and budget.state().spent_tokens == 1000


def test_a_chunk_session_the_budget_stops_is_incomplete_with_its_candidates(
    repo: GitRepo,
) -> None:
    """The first round is sent, the second is refused: the session ends incomplete with
    `budget_reached`, keeping the finding the model had already recorded."""
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    sha = repo.commit("change")
    request = ReviewRequest.from_flags(str(repo.root), commit=sha, home=str(repo.root.parent))
    scope = select(collect(request, 3), request, 1 << 20)
    [job] = file_jobs(scope, ReviewSettings(), "en-US")
    finding = {"severity": "low", "category": "style", "file": "a.py", "existing_code": "x = 2"}
    finding |= {"title": "t", "problem": "p", "evidence": "e", "suggestion": "s"}
    comment = ToolCall(id="c1", name="code_comment", arguments={"finding": finding})
    calls = iter([ModelResponse(tool_calls=(comment,))])

    def send(req: ModelRequest) -> ModelResponse:
        response = next(calls, None)
        if response is None:
            raise BudgetExceeded("budget of 5k tokens reached: ... (not sent)")
        return response

    result = review_chunk(job, 0, None, snapshot_of(scope), ReviewSettings(), send)
    assert not result.complete and [c.title for c in result.candidates] == ["t"]
    assert [w.code for w in result.warnings] == ["budget_reached"]
    assert [r.status for r in result.records] == ["ok", "not_sent"]
    assert total_usage(result.records)[1] == 1  # the refused request is no attempt


def test_the_console_puts_cost_and_estimate_beside_the_usage() -> None:
    price = {"input": 0.15, "cached_input": 0.075, "output": 0.6, "source": "bundled"}
    estimate = {"requests": 6.2, "prompt_tokens": 11050, "completion_tokens": 1086, "cost": 0.0021}
    estimate |= {"model": "m", "by_stage": {}, "files": [], "price": price}
    price |= {"as_of": "2025-08-01", "currency": "USD"}
    outcome = make_outcome(estimate=estimate, cost=0.0019)
    text = "\n".join(line.plain for line in console_lines(outcome, ConsoleMode.SUMMARY))
    assert "; cost $0.0019; estimated ~6 requests, 11.1k prompt tokens, ~$0.0021" in text
