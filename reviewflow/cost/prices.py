"""The price of a model: `model.price` from config (a `review.pass_models` entry's own `price`),
else the small bundled table (`prices.json`, dated; USD per million tokens), else unknown; and
the prices of every model one review asks (`review_prices`).

A bundled price applies to a model named exactly as the table names it, optionally after a
`vendor/` prefix (OpenRouter) and before a date or `-latest` suffix (`gpt-4o-2024-08-06`,
`claude-sonnet-4-20250514`): a newer model of a known family gets no price rather than a wrong one.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reviewflow.config import Config, ModelPrice, ModelSettings
from reviewflow.errors import ConfigError
from reviewflow.findings.localize import is_english

TABLE_FILE = "prices.json"
_SUFFIX = re.compile(r"(-\d{4}-?\d{2}-?\d{2}|-latest)?")


class PriceInfo(BaseModel):
    """A model's price and where it came from (`config`, or the bundled table of `as_of`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    price: ModelPrice
    source: Literal["config", "bundled"]
    as_of: str | None = None  # the bundled table's date
    currency: str = "USD"  # the bundled table's, or model.price.currency


@cache
def bundled_table() -> dict[str, Any]:
    """The bundled price table (read once)."""
    text = resources.files("reviewflow.cost").joinpath(TABLE_FILE).read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def bundled_price(name: str) -> PriceInfo | None:
    """The bundled price of model `name`, or None when the table does not know it."""
    table = bundled_table()
    bare = name.strip().lower().rsplit("/", 1)[-1]
    for key, entry in table["models"].items():
        if bare.startswith(key) and _SUFFIX.fullmatch(bare[len(key) :]):
            return PriceInfo(
                price=ModelPrice.model_validate({**entry, "currency": table["currency"]}),
                source="bundled",
                as_of=table["as_of"],
                currency=table["currency"],
            )
    return None


def price_of(model: ModelSettings) -> PriceInfo | None:
    """The price a review uses for `model`: its `model.price`, else the bundled one."""
    if model.price is not None:
        return PriceInfo(price=model.price, source="config", currency=model.price.currency)
    return bundled_price(model.name)


class ReviewPrices(BaseModel):
    """The price of every model a review asks (`models_asked`), by model name: each request is
    priced at the price of the model that served it. `None` where a model has no known price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, PriceInfo | None]
    main: str  # model.name: the model of a request no record names

    def of(self, model: str | None) -> PriceInfo | None:
        """The price of `model` (None: the review's own model, `model.*`)."""
        return self.models.get(model or self.main)

    def rates(self, model: str) -> ModelPrice | None:
        """The rates `model`'s requests are charged (the budget's lookup)."""
        info = self.of(model)
        return info.price if info is not None else None

    @property
    def unpriced(self) -> tuple[str, ...]:
        """The models asked that have no known price."""
        return tuple(name for name, info in self.models.items() if info is None)

    @property
    def currencies(self) -> tuple[str, ...]:
        """The currencies of the known prices, each once, in the models' order."""
        found = (info.currency for info in self.models.values() if info is not None)
        return tuple(dict.fromkeys(found))

    @property
    def complete(self) -> bool:
        """Every model asked has a price, all in one currency: money sums across them."""
        return not self.unpriced and len(self.currencies) <= 1


def models_asked(config: Config) -> dict[str, ModelSettings]:
    """Every model a review of `config` may ask, by name, with the settings its price is read
    from: each pass's (`review.pass_models`, else `model.*`), the verify model's with `--verify`
    (`review.verify_model` at `review.verify_price`, else priced by its name), and `model.*`
    itself when a stage asks it (a pass without a pass model, localization, verification).
    `model.price` is `model.name`'s: a pass model of that name without a price of its own
    takes it, as the verify model does when it is `model.name`."""
    review, main = config.review, config.model
    passes = [*review.pass_models[: review.passes]]
    asked: dict[str, ModelSettings] = {}
    uses_main = len(passes) < review.passes or not is_english(config.output.language)
    if review.verify and review.verify_model in (None, main.name):
        uses_main = True
    if uses_main:
        asked[main.name] = main
    for model in passes:
        if model.name == main.name and model.price is None:
            model = model.model_copy(update={"price": main.price})  # model.name's price
        known = asked.setdefault(model.name, model)
        if price_of(known) != price_of(model):
            raise ConfigError(
                f"review.pass_models names model '{model.name}' twice at two prices: give one "
                "model one price (its price, or model.price for model.name)"
            )
    if review.verify and review.verify_model not in (None, main.name):
        verifier = ModelSettings(name=review.verify_model, price=review.verify_price)
        known = asked.setdefault(review.verify_model, verifier)
        if review.verify_price is not None and known.price != review.verify_price:
            raise ConfigError(
                f"review.verify_price prices model '{review.verify_model}', which a "
                "review.pass_models entry prices otherwise: give one model one price"
            )
    return asked


def review_prices(config: Config) -> ReviewPrices:
    """The prices of the models a review of `config` asks (ConfigError: one name, two prices)."""
    asked = models_asked(config)
    return ReviewPrices(
        models={name: price_of(model) for name, model in asked.items()}, main=config.model.name
    )
