"""A review's budget (`review.max_tokens`, `review.max_cost`), shared by every request it sends.

Before a request is sent, `reserve` checks what the review has spent, plus what the requests in
flight hold, plus what this request will send (its prompt, measured with the chunker's token
counter, and `completion_reserve` tokens for its answer): a request that would cross a limit is
refused with `BudgetExceeded` and never sent. Requests already in flight finish; `settle` then
replaces their reservation with the usage their answer reported (the reservation itself when
the provider reported none). Thread-safe: one object per review, held by its provider pool (and
the sibling pools of its pass and verify models), so the file reviews that run concurrently draw
on the same budget.

Money is counted per request at the price of the model that sends it (`Prices.rates`, by model
name: the review's prices, looked up by `reviewflow.cost.prices`), and summed across models.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from reviewflow.config import ModelPrice
from reviewflow.providers.messages import ModelRequest, Usage

COMPLETION_RESERVE = 256
"""Tokens held for a request's answer while it is in flight (a tool call or a short JSON)."""


def short_count(tokens: int) -> str:
    """`200k`, `1.5M`, `950` — a token count as people say it."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if tokens >= size:
            text = f"{tokens / size:.1f}".removesuffix(".0")
            return f"{text}{unit}"
    return str(tokens)


def money(amount: float) -> str:
    """An amount with two decimals, four below 0.10 (`0.0042`)."""
    return f"{amount:.4f}" if amount < 0.1 else f"{amount:.2f}"


def priced(amount: float, currency: str | None = "USD") -> str:
    """An amount in its currency: `$0.001`, `$2.50`, `0.001 EUR`, bare when the currency is
    unknown (below 0.10, the digits it has up to six: a limit of 0.001 is not 0.0010)."""
    text = money(amount) if amount >= 0.1 else f"{amount:.6f}".rstrip("0").removesuffix(".")
    if currency is None:
        return text
    return f"${text}" if currency == "USD" else f"{text} {currency}"


class BudgetState(BaseModel):
    """Where a review's budget stands: its limits, what was spent, whether it stopped requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int | None = None
    max_cost: float | None = None
    spent_tokens: int = 0
    spent_cost: float | None = None
    refused_requests: int = 0

    @property
    def reached(self) -> bool:
        return self.refused_requests > 0

    def describe(self, currency: str | None = None) -> str:
        """`200k tokens`, `$2.50 in cost` (in the price's `currency`), or both joined by
        `and`."""
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{short_count(self.max_tokens)} tokens")
        if self.max_cost is not None:
            parts.append(f"{priced(self.max_cost, currency)} in cost")
        return " and ".join(parts)


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one request in flight holds of the budget, and the rates of the model sending it."""

    tokens: int
    cost: float
    rates: ModelPrice | None = None


class Prices(Protocol):
    """The rates of each model a review asks, by name (`reviewflow.cost.prices.ReviewPrices`)."""

    def rates(self, model: str) -> ModelPrice | None:
        """What `model`'s requests are charged per million tokens (None: unknown)."""

    @property
    def complete(self) -> bool:
        """Every model the review asks has a price, in one currency."""


@dataclass(frozen=True, slots=True)
class OnePrice:
    """Every model at one price (or none): a review of one model."""

    price: ModelPrice | None

    def rates(self, model: str) -> ModelPrice | None:
        return self.price

    @property
    def complete(self) -> bool:
        return self.price is not None


class Budget:
    """The budget of one review (see the module docstring)."""

    def __init__(
        self,
        max_tokens: int | None,
        max_cost: float | None,
        price: Prices | ModelPrice | None,
        measure: Callable[[ModelRequest], int],
        completion_reserve: int = COMPLETION_RESERVE,
    ) -> None:
        prices = OnePrice(price) if price is None or isinstance(price, ModelPrice) else price
        if max_cost is not None and not prices.complete:
            raise ValueError("a cost budget needs every model's price, in one currency")
        self._limits = (max_tokens, max_cost)
        self._prices = prices
        self._measure = measure
        self._reserve = completion_reserve
        self._lock = threading.Lock()
        self._spent = (0, 0.0)  # tokens, cost
        self._held = (0, 0.0)  # reserved by the requests in flight
        self._refused = 0

    def reserve(self, request: ModelRequest, model: str = "") -> Reservation:
        """Hold what `request` will cost at `model`'s price, or raise `BudgetExceeded` (nothing
        is held then)."""
        return self._take(request, model, hold=True)

    def check(self, request: ModelRequest, model: str = "") -> None:
        """Raise `BudgetExceeded` if `request` to `model` would not fit now (nothing is held:
        `reserve`, where the request is sent, decides for good). Lets a caller skip the work of
        sending a request the budget would refuse anyway."""
        self._take(request, model, hold=False)

    def _take(self, request: ModelRequest, model: str, hold: bool) -> Reservation:
        from reviewflow.providers.failures import BudgetExceeded  # (the preview: no HTTP clients)

        prompt, rates = self._measure(request), self._prices.rates(model)
        wanted = Reservation(prompt + self._reserve, _cost(rates, prompt, self._reserve), rates)
        with self._lock:
            problem = self._crossing(wanted)
            if problem:
                self._refused += 1
                raise BudgetExceeded(problem)
            if hold:
                self._held = (self._held[0] + wanted.tokens, self._held[1] + wanted.cost)
        return wanted

    def settle(self, reservation: Reservation, usage: Usage | None, sent: bool = True) -> None:
        """The request is done: its reservation becomes what its answer reported it used
        (nothing when it was never `sent`: it could not be built)."""
        if not sent:
            tokens, cost = 0, 0.0
        elif usage is not None and usage.total_tokens > 0:
            tokens = usage.total_tokens
            cached = usage.cache_read_tokens
            cost = _cost(reservation.rates, usage.prompt_tokens, usage.completion_tokens, cached)
        else:  # no usage reported (a timeout, a provider that reports none): count what we held
            tokens, cost = reservation.tokens, reservation.cost
        with self._lock:
            self._held = (self._held[0] - reservation.tokens, self._held[1] - reservation.cost)
            self._spent = (self._spent[0] + tokens, self._spent[1] + cost)

    def state(self) -> BudgetState:
        """A snapshot of the limits, what was spent and how many requests were refused."""
        with self._lock:
            spent, refused = self._spent, self._refused
        return BudgetState(
            max_tokens=self._limits[0],
            max_cost=self._limits[1],
            spent_tokens=spent[0],
            spent_cost=round(spent[1], 6) if self._prices.complete else None,
            refused_requests=refused,
        )

    def _crossing(self, wanted: Reservation) -> str:
        """Why `wanted` would cross a limit ("" when it fits); called under the lock."""
        max_tokens, max_cost = self._limits
        used = self._spent[0] + self._held[0]
        if max_tokens is not None and used + wanted.tokens > max_tokens:
            return (
                f"budget of {short_count(max_tokens)} tokens reached: {used:,} spent or in "
                f"flight, the next request needs about {wanted.tokens:,} more (not sent)"
            )
        cost = self._spent[1] + self._held[1]
        if max_cost is not None and cost + wanted.cost > max_cost:
            return (
                f"budget of {money(max_cost)} in cost reached: {money(cost)} spent or in "
                f"flight, the next request costs about {money(wanted.cost)} more (not sent)"
            )
        return ""


def _cost(rates: ModelPrice | None, prompt: int, completion: int, cached: int = 0) -> float:
    """What a request costs at `rates` (0 at an unknown price: no cost budget is kept then)."""
    return rates.cost(prompt, completion, cached) if rates is not None else 0.0
