"""What a review spent, per model: each request's usage (its record) priced at the price of the
model that served it, and the total when the models' prices allow a sum (all known, one
currency). The report's `usage.cost` and `usage.by_model`."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from reviewflow.cost.prices import ReviewPrices
from reviewflow.providers.messages import Usage
from reviewflow.review.records import RequestRecord


class ModelUsage(Usage):
    """One model's share of a review's usage: its requests (every attempt), tokens and cost at
    its own price (None without one), in that price's currency."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    requests: int = 0
    cost: float | None = None
    currency: str | None = None


class SpentByModel(BaseModel):
    """A review's usage per model (in the order each was first asked) and its total cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: tuple[ModelUsage, ...] = ()
    cost: float | None = None


def spent_by_model(records: Iterable[RequestRecord], prices: ReviewPrices) -> SpentByModel:
    """The usage of this run's `records` (answers reused from the cache cost nothing, requests
    the budget refused were never sent) per model, each priced at its model's price; a record
    that names no model is the review's own (`model.*`). The total is the sum of the models'
    costs, or None when one of them has no price or their prices are in two currencies."""
    usage: dict[str, tuple[Usage, int]] = {}
    for record in records:
        if record.reused or record.status == "not_sent":  # not sent: no attempt, no usage
            continue
        name = record.model or prices.main
        spent, requests = usage.get(name, (Usage(), 0))
        usage[name] = (spent + record.usage, requests + record.attempts)
    models = tuple(_priced(name, *spent, prices) for name, spent in usage.items())
    currencies = {m.currency for m in models}
    unknown = any(m.cost is None for m in models) or len(currencies) > 1
    total = None if unknown else round(sum(m.cost or 0.0 for m in models), 6)
    if not models:  # nothing sent: free at a known price, unknown without one
        main = prices.of(None)
        total = 0.0 if main is not None else None
    return SpentByModel(models=models, cost=total)


def _priced(name: str, usage: Usage, requests: int, prices: ReviewPrices) -> ModelUsage:
    info = prices.of(name)
    cost = None
    if info is not None:
        rates = info.price
        cost = round(
            rates.cost(usage.prompt_tokens, usage.completion_tokens, usage.cache_read_tokens), 6
        )
    return ModelUsage(
        **usage.model_dump(),
        model=name,
        requests=requests,
        cost=cost,
        currency=info.currency if info is not None else None,
    )
