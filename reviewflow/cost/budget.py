"""The review's budget from its config (`review.max_tokens`, `review.max_cost`), checked: money
is counted at the price of each model the review asks (`review_prices`)."""

from __future__ import annotations

from reviewflow.config import PLACEHOLDER_MODEL, Config, TaskRunner
from reviewflow.cost.prices import ReviewPrices, review_prices
from reviewflow.errors import ConfigError
from reviewflow.providers.budget import Budget
from reviewflow.review.tokens import estimate_request


def check_budget(config: Config) -> ReviewPrices:
    """The review's prices; ConfigError (one line) for a budget that cannot hold: a cost budget
    without a known price for every model it asks (or with prices in two currencies), or a
    budget with the Dask task runner (the budget lives in the review's process)."""
    review = config.review
    prices = review_prices(config)
    if review.max_cost is not None:
        _check_cost(config, prices)
    budgeted = review.max_tokens is not None or review.max_cost is not None
    if budgeted and review.task_runner is TaskRunner.DASK:
        raise ConfigError(
            "review.max_tokens and review.max_cost need review.task_runner thread: "
            "the budget is kept in the review's process"
        )
    return prices


def _check_cost(config: Config, prices: ReviewPrices) -> None:
    limit = f"review.max_cost ({config.review.max_cost:g})"
    for name in prices.unpriced:
        if name == PLACEHOLDER_MODEL:
            raise ConfigError(
                f"{limit} needs the model's price, and no model is set: set model.name (or "
                "pass --model), e.g. gpt-4o"
            )
        raise ConfigError(
            f"{limit} needs the price of model '{name}', which is not in the bundled table: "
            f"{price_setting(config, name)} (input, cached_input, output per million tokens) "
            "or use --max-tokens"
        )
    if len(prices.currencies) > 1:
        raise ConfigError(
            f"{limit} sums the prices of every model the review asks, and they are in "
            f"{' and '.join(prices.currencies)}: give them in one currency"
        )


def price_setting(config: Config, name: str) -> str:
    """What to set for model `name`'s price: model.price, its `review.pass_models` entry's
    price, or the verify model's `review.verify_price`."""
    if name == config.model.name:
        return "set model.price"
    for number, model in enumerate(config.review.pass_models, start=1):
        if model.name == name:
            return f"set the price of review.pass_models entry {number}"
    return "set review.verify_price"


def budget_for(config: Config) -> Budget | None:
    """The budget a review's requests draw on (None without limits); ConfigError as above."""
    prices = check_budget(config)
    review = config.review
    if review.max_tokens is None and review.max_cost is None:
        return None
    return Budget(review.max_tokens, review.max_cost, prices, estimate_request)
