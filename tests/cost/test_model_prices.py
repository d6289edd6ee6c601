"""Each model at its own price, as plain functions: the prices of the models a review asks
(`review_prices`), the budget summing money across models and refusing the request of the model
that would cross it, the config checks of a cost budget over several models, the report's usage
per model, and the estimate charging each pass at its model's price and verification at the
verify model's."""

from __future__ import annotations

from typing import Any

import pytest

from reviewflow.config import Config, ModelPrice, ReviewSettings
from reviewflow.cost import estimate as est
from reviewflow.cost.budget import budget_for, check_budget
from reviewflow.cost.charges import StagePrices, mean_rates
from reviewflow.cost.prices import PriceInfo, bundled_price, review_prices
from reviewflow.cost.text import estimate_line, estimate_record, estimate_table
from reviewflow.cost.usage import spent_by_model
from reviewflow.errors import ConfigError
from reviewflow.providers.budget import Budget
from reviewflow.providers.failures import BudgetExceeded
from reviewflow.providers.messages import ModelRequest, Usage, UserMessage
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import FileJob, file_jobs
from reviewflow.review.records import ChunkResult, RequestRecord, attributed
from reviewflow.select.scope import collect, select
from tests.gitutil import GitRepo

CHEAP = {"input": 1.0, "output": 2.0}
DEAR = {"input": 10.0, "output": 40.0}
REQUEST = ModelRequest(messages=(UserMessage(content="x" * 4000),))  # 1,000 tokens


def _config(**review: Any) -> Config:
    """model.* `house-llm` (no price) and two pass models at their own prices."""
    return Config.model_validate(
        {
            "model": {"name": "house-llm"},
            "review": {
                "passes": 2,
                "pass_models": [
                    {"name": "cheap-model", "price": CHEAP},
                    {"name": "dear-model", "price": DEAR},
                ],
                **review,
            },
        }
    )


def test_the_prices_are_those_of_the_models_the_review_asks() -> None:
    prices = review_prices(_config())
    # model.* asks nothing here (every pass has its model, English, no verification).
    assert list(prices.models) == ["cheap-model", "dear-model"] and prices.complete
    assert prices.rates("dear-model") == ModelPrice(**DEAR)
    # A third pass without a pass model is model.*'s, whose price is unknown.
    third = review_prices(_config(passes=3))
    assert third.unpriced == ("house-llm",) and not third.complete
    # The verify model is priced by its own name, never at model.price.
    verified = review_prices(
        Config.model_validate(
            {
                "model": {"name": "house-llm", "price": DEAR},
                "review": {"verify": True, "verify_model": "gpt-4o-mini"},
            }
        )
    )
    assert verified.of("gpt-4o-mini") == bundled_price("gpt-4o-mini")
    assert verified.rates("house-llm") == ModelPrice(**DEAR)
    # ... or at review.verify_price; without either, a cost budget names what to set.
    review = {"verify": True, "verify_model": "house-verifier", "max_cost": 1}
    unpriced = Config.model_validate(
        {"model": {"name": "house-llm", "price": DEAR}, "review": review}
    )
    with pytest.raises(ConfigError, match=r"model 'house-verifier'.*: set review\.verify_price \("):
        check_budget(unpriced)
    unpriced.review.verify_price = ModelPrice(**CHEAP)
    assert check_budget(unpriced).rates("house-verifier") == ModelPrice(**CHEAP)


def test_a_pass_model_named_as_model_name_takes_model_price_and_one_name_has_one_price() -> None:
    same = Config.model_validate(
        {
            "model": {"name": "house-llm", "price": DEAR},
            "review": {"passes": 2, "pass_models": [{"name": "house-llm"}]},
        }
    )
    assert review_prices(same).models == {
        "house-llm": PriceInfo(price=ModelPrice(**DEAR), source="config")
    }
    models = [{"name": "m", "price": CHEAP}, {"name": "m", "price": DEAR}]
    twice = {"review": {"passes": 2, "pass_models": models}}
    with pytest.raises(ConfigError, match=r"names model 'm' twice at two prices"):
        review_prices(Config.model_validate(twice))


def test_the_budget_charges_each_request_at_its_model_price_and_sums_them() -> None:
    """1,000 prompt tokens cost 0.001 to the cheap model and 0.01 to the dear one: a budget
    of 0.0125 lets the cheap requests go on after the dear one that would cross it is refused."""
    prices = review_prices(_config())
    budget = Budget(None, 0.0125, prices, lambda request: 1000, completion_reserve=0)
    used = Usage(prompt_tokens=1000, total_tokens=1000)
    budget.settle(budget.reserve(REQUEST, "dear-model"), used)  # 0.01
    budget.settle(budget.reserve(REQUEST, "cheap-model"), used)  # 0.011
    with pytest.raises(BudgetExceeded, match=r"costs about 0\.0100 more \(not sent\)"):
        budget.reserve(REQUEST, "dear-model")  # 0.021 > 0.0125
    budget.settle(budget.reserve(REQUEST, "cheap-model"), used)  # 0.012
    state = budget.state()
    assert state.spent_cost == pytest.approx(0.012) and state.refused_requests == 1
    # Settled at what the answer reported, at the price of the model that held it.
    roomy = Budget(None, 1.0, prices, lambda request: 1000)
    reported = Usage(prompt_tokens=100, completion_tokens=100, total_tokens=200)
    roomy.settle(roomy.reserve(REQUEST, "cheap-model"), reported)
    roomy.settle(roomy.reserve(REQUEST, "dear-model"), reported)
    assert roomy.state().spent_cost == pytest.approx((100 + 200 + 1000 + 4000) / 1e6)


def test_a_cost_budget_needs_every_asked_model_priced_in_one_currency() -> None:
    assert budget_for(_config(max_cost=1)) is not None  # model.* unpriced, but never asked
    with pytest.raises(ConfigError) as caught:
        check_budget(_config(passes=3, max_cost=1))
    assert str(caught.value).startswith("review.max_cost (1) needs the price of model 'house-llm'")
    unpriced = _config(max_cost=1)
    unpriced.review.pass_models[1].price = None
    unpriced.review.pass_models[1].name = "house-llm-2"
    with pytest.raises(ConfigError, match=r"set the price of review.pass_models entry 2 \("):
        check_budget(unpriced)
    euro = _config(max_cost=1)
    euro.review.pass_models[0].price = ModelPrice(**CHEAP, currency="EUR")
    with pytest.raises(ConfigError, match=r"they are in EUR and USD: give them in one currency"):
        check_budget(euro)
    # A token budget needs no price: money is then unknown where a price is.
    assert budget_for(_config(passes=3, max_tokens=5000)) is not None


def _record(model: str | None, prompt: int, completion: int, **more: Any) -> RequestRecord:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion)
    return RequestRecord(stage="main", path="a.py", usage=usage, model=model, **more)


def test_usage_per_model_each_at_its_price() -> None:
    prices = review_prices(_config())
    records = [
        _record("cheap-model", 1000, 100),
        _record("dear-model", 1000, 100, attempts=2),
        _record("dear-model", 2000, 0),
        _record("dear-model", 5000, 0, reused=True),  # an earlier run's answer: free
    ]
    spent = spent_by_model(records, prices)
    cheap, dear = spent.models
    assert (cheap.model, cheap.requests, cheap.prompt_tokens) == ("cheap-model", 1, 1000)
    assert cheap.cost == pytest.approx((1000 * 1 + 100 * 2) / 1e6)
    assert (dear.requests, dear.prompt_tokens, dear.completion_tokens) == (3, 3000, 100)
    assert dear.cost == pytest.approx((3000 * 10 + 100 * 40) / 1e6) and dear.currency == "USD"
    assert spent.cost == pytest.approx(cheap.cost + dear.cost)
    # A model without a price: its tokens counted, its money and the total unknown.
    unknown = spent_by_model([*records, _record("house-llm", 10, 10)], review_prices(_config()))
    assert unknown.models[-1].cost is None and unknown.cost is None
    assert spent_by_model([], prices).cost is None  # nothing sent, model.* unpriced


def test_a_stage_result_names_the_model_its_stage_asked() -> None:
    result = ChunkResult(path="a.py", records=(_record(None, 1, 1), _record("x", 1, 1)))
    named = attributed([result], "dear-model")[0]
    assert [r.model for r in named.records] == ["dear-model", "x"]
    # The model named is no input to a later stage's cache key.
    assert named.cache_identity() == result.cache_identity()


def test_mean_rates_charge_n_passes_as_each_pass_at_its_price() -> None:
    cheap = PriceInfo(price=ModelPrice(**CHEAP), source="config")
    dear = PriceInfo(price=ModelPrice(**DEAR), source="config")
    rates = mean_rates([cheap, dear])
    assert rates is not None
    both = rates.cost(2000, 200)  # two passes of 1,000 + 100 tokens
    assert both == pytest.approx(cheap.price.cost(1000, 100) + dear.price.cost(1000, 100))
    assert mean_rates([cheap, None]) is None


MODULE = "".join(f"def step_{i}(items):\n    return sum(items) * {i}\n\n\n" for i in range(12))


def _jobs(repo: GitRepo, settings: ReviewSettings) -> list[FileJob]:
    """One file with a 30-line change: expected to get findings (so verified)."""
    repo.write("app.py", MODULE)
    repo.commit("base")
    repo.write("app.py", MODULE + "".join(f"x{i} = {i}\n" for i in range(30)))
    sha = repo.commit("change")
    request = ReviewRequest.from_flags(str(repo.root), commit=sha, home=str(repo.root.parent))
    return file_jobs(select(collect(request, 3), request, 1 << 20), settings, "en")


def test_the_estimate_prices_each_pass_and_the_verification_at_their_models(
    repo: GitRepo,
) -> None:
    config = _config(verify=True, verify_model="gpt-4o-mini")
    settings: ReviewSettings = config.review
    prices = StagePrices.of(config, review_prices(config))
    jobs = _jobs(repo, settings)
    two = est.estimate_review(jobs, {}, settings, "en", None, prices)
    record = estimate_record(two, config.model, settings)
    rows = {row["model"]: row for row in record["by_model"]}
    assert list(rows) == ["cheap-model", "dear-model", "gpt-4o-mini"]
    assert (rows["cheap-model"]["passes"], rows["dear-model"]["passes"]) == ([1], [2])
    # Each pass is one pass's figures at its model's price; verification at the verify model's.
    one = est.estimate_review(jobs, {}, settings.model_copy(update={"passes": 1}), "en", None)
    chain = {s: f for s, f in one.by_stage.items() if s != "verify"}
    tokens = (
        sum(f.prompt_tokens for f in chain.values()),
        sum(f.completion_tokens for f in chain.values()),
    )
    for name, rates in (("cheap-model", CHEAP), ("dear-model", DEAR)):
        row = rows[name]
        assert (row["prompt_tokens"], row["completion_tokens"]) == pytest.approx(tokens, abs=1)
        expected = (tokens[0] * rates["input"] + tokens[1] * rates["output"]) / 1e6
        assert row["cost"] == pytest.approx(expected, rel=1e-3)
        assert row["price"]["input"] == rates["input"]
    mini = bundled_price("gpt-4o-mini")
    assert mini is not None
    verify = two.by_stage["verify"]
    assert rows["gpt-4o-mini"]["passes"] == [] and rows["gpt-4o-mini"]["cost"] == pytest.approx(
        mini.price.cost(verify.prompt_tokens, verify.completion_tokens), rel=1e-3
    )
    assert record["cost"] == pytest.approx(sum(row["cost"] for row in rows.values()), rel=1e-3)
    assert record["by_stage"]["verify"]["cost"] == pytest.approx(
        rows["gpt-4o-mini"]["cost"], rel=1e-3
    )
    # The line and the preview's table say where each price comes from.
    assert "(configured prices and bundled prices of " in estimate_line(record)
    note = estimate_table(record, ["a.py"])[-1]
    assert "cheap-model (pass 1) 1/2 USD (configured)" in note
    assert "gpt-4o-mini (verification) 0.15/0.6 USD (bundled, " in note


def test_an_estimate_with_an_unpriced_pass_model_names_it(repo: GitRepo) -> None:
    config = _config(passes=3)
    prices = StagePrices.of(config, review_prices(config))
    estimate = est.estimate_review(
        _jobs(repo, config.review), {}, config.review, "en", None, prices
    )
    record = estimate_record(estimate, config.model, config.review)
    assert record["cost"] is None and record["by_stage"]["main"]["cost"] is None
    by_model = {row["model"]: row["cost"] for row in record["by_model"]}
    assert by_model["house-llm"] is None and by_model["dear-model"] > by_model["cheap-model"] > 0
    line = estimate_line(record)
    assert "cost unknown (no price for model 'house-llm': set model.price)" in line


def test_the_live_cost_charges_each_request_at_its_model() -> None:
    import io

    from reviewflow.report.progress import ProgressDisplay

    display = ProgressDisplay(io.StringIO(), {}, 1, price=review_prices(_config()))
    display.request_done(Usage(prompt_tokens=1000, completion_tokens=100), "cheap-model")
    display.request_done(Usage(prompt_tokens=1000, completion_tokens=100), "dear-model")
    assert display.state().cost == pytest.approx((1000 + 200 + 10_000 + 4000) / 1e6)
    unknown = ProgressDisplay(io.StringIO(), {}, 1, price=review_prices(_config(passes=3)))
    assert unknown.state().cost is None  # a model asked has no price: the money is unknown
