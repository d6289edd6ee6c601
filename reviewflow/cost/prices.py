"""The price of a model: `model.price` from config, else the small bundled table (`prices.json`,
dated; USD per million tokens), else unknown.

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

from reviewflow.config import ModelPrice, ModelSettings

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
