"""Live progress on stderr while the model works: files done/total, requests, tokens.

The flow calls the methods from any thread; the display redraws with rich Live on a terminal
and does nothing otherwise (disabled, or stderr not a TTY). Names are escaped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import IO

from rich.live import Live
from rich.text import Text

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


class ProgressDisplay:
    """Thread-safe live progress. Use as a context manager, or call `close()`."""

    def __init__(
        self, stream: IO[str], env: Mapping[str, str], files_total: int, enabled: bool = True
    ) -> None:
        self._lock = threading.Lock()
        self._state = ProgressState(files_total=files_total)
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

    def request_done(self, usage: Usage, attempts: int = 1) -> None:
        """Count one answered (or finally failed) request and the tokens it used."""
        self._change(
            lambda s: replace(
                s, requests=s.requests + attempts, tokens=s.tokens + usage.total_tokens
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
            if self._live is not None:
                self._live.update(self._render(), refresh=True)

    def _render(self) -> Text:
        s = self._state
        text = Text()
        text.append(f"Reviewing: {s.files_done}/{counted(s.files_total, 'file')}", style="bold")
        text.append(f"  {counted(s.requests, 'request')}  {s.tokens:,} tokens")
        if s.current:
            more = f" (+{len(s.current) - 1})" if len(s.current) > 1 else ""
            text.append(f"  {for_terminal(s.current[-1])}{more}", style="dim")
        return text
