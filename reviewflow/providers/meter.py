"""What a review's provider pools count and tell: the usage meter they share (every attempt,
the tokens of every answer) and the observer of the review's progress they report to.

Apart from `reviewflow.providers.pool` so the pool holds the requests' flow (slots, budget,
siblings, cancel) and this module the accounting they feed.
"""

from __future__ import annotations

import threading
import typing

from reviewflow.providers.messages import Usage


class ReviewObserver(typing.Protocol):
    """Told of a review's progress in the pool's process (the live progress display). The pool
    carries it because the flow's parameters go to the Prefect API: it cannot be one."""

    def request_done(self, usage: Usage, model: str) -> None:
        """An attempt a pool made, with the usage its answer reported and the name of the
        model that served it (each model at its own price)."""

    def file_started(self, path: str) -> None:
        """A request for the file `path` is going out (told at each: the first one counts)."""

    def file_done(self, path: str) -> None:
        """Every model stage of the file `path` finished."""


class UsageTotals(Usage):
    """Usage summed over a review, with every request attempt counted."""

    requests: int = 0


class UsageMeter:
    """Thread-safe totals of one pool in one process: every attempt it made counts in
    `requests`; tokens come from answers, rejected ones included (see `failures.usage_of`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = Usage()
        self._requests = 0

    def count_request(self, attempts: int = 1) -> None:
        """Count one request attempt, whatever its outcome (-1: one counted never left)."""
        with self._lock:
            self._requests += attempts

    def add(self, usage: Usage) -> None:
        """Add the usage one answer reported."""
        with self._lock:
            self._usage = self._usage + usage

    def totals(self) -> UsageTotals:
        """A snapshot of the totals so far."""
        with self._lock:
            return UsageTotals(**self._usage.model_dump(), requests=self._requests)
