"""The review's budget from its config (`review.max_tokens`, `review.max_cost`), checked."""

from __future__ import annotations

from reviewflow.config import PLACEHOLDER_MODEL, Config, TaskRunner
from reviewflow.cost.prices import price_of
from reviewflow.errors import ConfigError
from reviewflow.providers.budget import Budget
from reviewflow.review.tokens import estimate_request


def check_budget(config: Config) -> None:
    """ConfigError (one line) for a budget that cannot hold: a cost budget without a known
    price, or a budget with the Dask task runner (the budget lives in the review's process)."""
    review = config.review
    if review.max_cost is not None and price_of(config.model) is None:
        if config.model.name == PLACEHOLDER_MODEL:
            raise ConfigError(
                f"review.max_cost ({review.max_cost:g}) needs the model's price, and no model "
                "is set: set model.name (or pass --model), e.g. gpt-4o"
            )
        raise ConfigError(
            f"review.max_cost ({review.max_cost:g}) needs the price of model "
            f"'{config.model.name}', which is not in the bundled table: set model.price "
            "(input, cached_input, output per million tokens) or use --max-tokens"
        )
    budgeted = review.max_tokens is not None or review.max_cost is not None
    if budgeted and review.task_runner is TaskRunner.DASK:
        raise ConfigError(
            "review.max_tokens and review.max_cost need review.task_runner thread: "
            "the budget is kept in the review's process"
        )


def budget_for(config: Config) -> Budget | None:
    """The budget a review's requests draw on (None without limits); ConfigError as above."""
    check_budget(config)
    review = config.review
    if review.max_tokens is None and review.max_cost is None:
        return None
    info = price_of(config.model)
    return Budget(
        review.max_tokens,
        review.max_cost,
        info.price if info is not None else None,
        estimate_request,
    )
