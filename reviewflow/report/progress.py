"""Live progress on stderr while the model works: a bar of files done/total, the time left, the
cost so far (with a price), requests and tokens, then the file being reviewed.

The flow calls the methods from any thread; the display redraws with rich Live on a terminal
and does nothing otherwise (disabled, or stderr not a TTY). Names are escaped. A `listener`,
when given, is called with every new state, display or not (`--events`:
`reviewflow.report.events`). The time left is the time per finished file so far times the files
left (shown once a file is done).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import IO

from rich.live import Live
from rich.text import Text

from reviewflow.cost.prices import PriceInfo, ReviewPrices
from reviewflow.providers.budget import money
from reviewflow.providers.messages import Usage
from reviewflow.report.console import make_console
from reviewflow.report.textsafe import for_terminal
from reviewflow.report.wording import counted


@dataclass(frozen=True, slots=True)
class ProgressState:
    """A snapshot of the counters."""

    files_total: int
    files_done: int = 0
    requests: int = 0
    tokens: int = 0
    current: tuple[str, ...] = ()
    cost: float | None = None  # None without a price


class ProgressDisplay:
    """Thread-safe live progress. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        stream: IO[str],
        env: Mapping[str, str],
        files_total: int,
        enabled: bool = True,
        price: PriceInfo | ReviewPrices | None = None,
        clock: Callable[[], float] = time.monotonic,
        listener: Callable[[ProgressState], None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._listener = listener
        self._clock = clock
        self._price_of: Callable[[str | None], PriceInfo | None] | None = None
        self._currency: str | None = None
        if isinstance(price, ReviewPrices) and price.complete and price.currencies:
            self._price_of, self._currency = price.of, price.currencies[0]  # each its model's
        elif isinstance(price, PriceInfo):
            self._price_of, self._currency = (lambda model: price), price.currency
        self._started = clock()
        cost = None if self._price_of is None else 0.0
        self._state = ProgressState(files_total=files_total, cost=cost)
        self._active: list[str] = []
        self._live: Live | None = None
        if enabled and stream.isatty():
            console = make_console(stream, env)
            # No stdout/stderr redirection: stdout carries the report, logs keep their streams.
            self._live = Live(
                self._render(),
                console=console,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    @property
    def enabled(self) -> bool:
        return self._live is not None

    def state(self) -> ProgressState:
        with self._lock:
            return self._state

    def file_started(self, path: str) -> None:
        """`path` is in progress (again and again as its requests go out: shown once)."""
        with self._lock:
            if path in self._active:
                return
        self._change(lambda s: s, started=path)

    def file_done(self, path: str) -> None:
        self._change(lambda s: replace(s, files_done=s.files_done + 1), finished=path)

    def request_done(self, usage: Usage, model: str | None = None, attempts: int = 1) -> None:
        """Count one answered (or finally failed) request and the tokens it used, at the
        price of `model`, the model that served it."""
        spent = None
        info = None if self._price_of is None else self._price_of(model)
        if info is not None:
            rates, cached = info.price, usage.cache_read_tokens
            spent = rates.cost(usage.prompt_tokens, usage.completion_tokens, cached)
        self._change(
            lambda s: replace(
                s,
                requests=s.requests + attempts,
                tokens=s.tokens + usage.total_tokens,
                cost=None if s.cost is None or spent is None else s.cost + spent,
            )
        )

    def close(self) -> None:
        """Stop redrawing; the last state stays on screen."""
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            live.stop()

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _change(
        self,
        update: Callable[[ProgressState], ProgressState],
        started: str | None = None,
        finished: str | None = None,
    ) -> None:
        with self._lock:
            if started is not None and started not in self._active:
                self._active.append(started)
            if finished is not None and finished in self._active:
                self._active.remove(finished)
            self._state = replace(update(self._state), current=tuple(self._active))
            if self._listener is not None:  # under the lock: the states in their order
                self._listener(self._state)
            if self._live is not None:
                self._live.update(self._render(), refresh=True)

    def _render(self) -> Text:
        """One line, what matters most first: a narrow terminal crops the end (`…`)."""
        s = self._state
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("Reviewing ", style="bold")
        text.append_text(bar(s.files_done, s.files_total))
        text.append(f" {s.files_done}/{counted(s.files_total, 'file')}", style="bold")
        left = time_left(self._clock() - self._started, s.files_done, s.files_total)
        if left is not None:
            text.append(f"  ETA {left}")
        if s.cost is not None and self._currency is not None:
            currency = self._currency
            amount = money(s.cost)
            text.append(f"  ${amount}" if currency == "USD" else f"  {amount} {currency}")
        text.append(f"  {counted(s.requests, 'request')}  {s.tokens:,} tokens")
        if s.current:
            more = f" (+{len(s.current) - 1})" if len(s.current) > 1 else ""
            text.append(f"  {for_terminal(s.current[-1])}{more}", style="dim")
        return text


BAR_WIDTH = 16


def bar(done: int, total: int, width: int = BAR_WIDTH) -> Text:
    """`━━━━━━━━╺━━━━`: the share of files done, filled in green."""
    filled = width if total <= 0 else min(width, round(width * done / total))
    text = Text("━" * filled, style="green")
    if filled < width:
        text.append("╺" + "━" * (width - filled - 1), style="bright_black")
    return text


def time_left(elapsed: float, done: int, total: int) -> str | None:
    """`0:42` or `1:02:05`: the files left at the time per file so far (None before the first
    file is done, or once all are)."""
    if done <= 0 or done >= total:
        return None
    seconds = round(elapsed / done * (total - done))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{seconds:02}" if hours else f"{minutes}:{seconds:02}"
