"""What an estimate charges for its figures: every pass's model stages at the price of that
pass's model (`review.pass_models`, else `model.*`), verification at the verify model's price,
localization at `model.*`'s (the model each stage asks).

A chain stage's figures are every pass's together (`estimate.per_pass`: one pass's times N), and
a price is linear in the tokens, so their cost is the passes' mean rates applied to them: the sum
of each pass's figures at its own price.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from reviewflow.config import Config, ModelPrice
from reviewflow.cost.prices import PriceInfo, ReviewPrices

VERIFY_STAGE = "verify"
MAIN_STAGE = "localize"  # asked of model.* whatever the passes


class Priced(BaseModel):
    """A model a stage asks, by name, and its price (None: unknown)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    price: PriceInfo | None = None


class StagePrices(BaseModel):
    """The models an estimate's stages ask and their prices: `passes`, one per pass (the chain
    stages: plan, main, compress, relocate, filter), `verify` and `main` (`model.*`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    main: Priced
    passes: tuple[Priced, ...]
    verify: Priced

    @classmethod
    def one(cls, price: PriceInfo | None, passes: int = 1, name: str = "") -> StagePrices:
        """Every stage of every pass at one price (a review of one model)."""
        model = Priced(model=name, price=price)
        return cls(main=model, passes=(model,) * passes, verify=model)

    @classmethod
    def of(cls, config: Config, prices: ReviewPrices) -> StagePrices:
        """The prices of a review of `config`: each pass's model, the verify model, model.*."""
        review, main = config.review, config.model.name
        names = [m.name for m in review.pass_models[: review.passes]]
        names += [main] * (review.passes - len(names))
        verify = (review.verify_model or main) if review.verify else main

        def priced(name: str) -> Priced:
            return Priced(model=name, price=prices.models.get(name))

        return cls(main=priced(main), passes=tuple(priced(n) for n in names), verify=priced(verify))

    def for_stage(self, stage: str) -> ModelPrice | None:
        """The rates `stage`'s figures are charged (None: a price is unknown, or the passes'
        prices are in two currencies)."""
        if stage == VERIFY_STAGE:
            return _rates(self.verify)
        if stage == MAIN_STAGE:
            return _rates(self.main)
        return mean_rates([p.price for p in self.passes])

    def models(self) -> dict[str, tuple[Priced, tuple[int, ...]]]:
        """Each model asked, once, with the passes (numbered from 1) whose chains it runs."""
        found: dict[str, tuple[Priced, tuple[int, ...]]] = {}
        for number, model in enumerate(self.passes, start=1):
            passes = found.get(model.model, (model, ()))[1]
            found[model.model] = (model, (*passes, number))
        for model in (self.verify, self.main):
            found.setdefault(model.model, (model, ()))
        return found


def _rates(model: Priced) -> ModelPrice | None:
    return model.price.price if model.price is not None else None


def mean_rates(prices: list[PriceInfo | None]) -> ModelPrice | None:
    """Rates whose cost of N passes' figures is the sum of each pass's at its own price."""
    if not prices or any(p is None for p in prices):
        return None
    known = [p for p in prices if p is not None]
    if len({p.currency for p in known}) > 1:
        return None
    if all(p == known[0] for p in known):
        return known[0].price

    def mean(rates: list[float]) -> float:
        return sum(rates) / len(rates)

    rates = [p.price for p in known]
    return ModelPrice(
        input=mean([r.input for r in rates]),
        cached_input=mean([r.input if r.cached_input is None else r.cached_input for r in rates]),
        output=mean([r.output for r in rates]),
        currency=known[0].currency,
    )
