"""Cancelling a review by signal: Ctrl-C (SIGINT) and SIGTERM alike, exit 130.

The command line calls `install()` before anything else. The first signal cancels: every
listener is told at once (a review's provider pools stop sending, so no model request goes out
after it), and KeyboardInterrupt is raised in the main thread where the code may be cut: outside
a `deferred()` region, or inside an `interruptible()` one within it. The review flow defers (an
exception must never land inside Prefect's engine) and waits for its stages in interruptible
places; a deferred cancel is raised there, or read with `requested()`. The second signal means
now: `reviewflow: cancelled` and exit 130 at once. Whatever else happens, a watchdog ends the
process `GRACE_S` after the first signal (a hang somewhere must not outlive a cancel).

Signal handlers run in the main thread only; listeners must be quick and take no lock the main
thread may hold (a pool only sets a flag). A KeyboardInterrupt raised where Python cannot
propagate it (a weakref callback or `__del__`: the lock of a module being imported, say) would be
printed as "Exception ignored" and lost; it is delivered to the main thread again instead.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import CodeType, FrameType
from typing import NoReturn

EXIT_CODE = 130
CANCELLED_LINE = "reviewflow: cancelled"
SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 4.0  # the watchdog: the first signal ends the process within this, whatever happens


class Canceller:
    """One process's cancellation state (see the module); `CANCEL` is the process's own."""

    def __init__(self, grace: float | None = GRACE_S) -> None:
        self.grace = grace  # None: no watchdog
        self.received: list[int] = []
        self.interruptible = True
        self.installed = False
        self.before_exit: Callable[[], None] | None = None  # a forced exit does this first
        self._listeners: dict[int, Callable[[], None]] = {}
        self._last: dict[int, Callable[[], None]] = {}  # a forced exit does these first
        self._ids = itertools.count()
        self._announced = False
        self._redelivering = False
        self._unraisable = sys.unraisablehook

    def install(self, before_exit: Callable[[], None] | None = None) -> None:
        """Handle SIGINT and SIGTERM in this process (from the main thread)."""
        self.before_exit = before_exit
        for sig in SIGNALS:
            signal.signal(sig, self.handle)
        self._unraisable = sys.unraisablehook
        sys.unraisablehook = self.lost
        self.installed = True

    def reclaim_sigterm(self) -> None:
        """SIGTERM back to this handler, if installed: Prefect's flow engine puts its own in
        place for a flow run, which would end the run as crashed instead of cancelled."""
        if self.installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.handle)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler: the first signal cancels, the second exits now."""
        if self._redelivering:  # the cancel again, after it was lost (see `lost`)
            self._redelivering = False
            if self.interruptible:
                raise KeyboardInterrupt
            return
        self.received.append(signum)
        if len(self.received) > 1:
            self.exit_now()
        for listener in list(self._listeners.values()):
            listener()
        if self.grace is not None:
            timer = threading.Timer(self.grace, self.exit_now)
            timer.daemon = True
            timer.start()
        if self.interruptible:
            raise KeyboardInterrupt

    def lost(self, unraisable: sys.UnraisableHookArgs) -> None:
        """`sys.unraisablehook`: a cancel's KeyboardInterrupt that Python could not propagate is
        raised again once the main thread is past this hook; anything else is reported."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and self.received:
            self._redelivering = True
            main = threading.main_thread().ident
            threading.Thread(target=_signal_past, args=(main,), daemon=True).start()
            return
        self._unraisable(unraisable)

    def requested(self) -> bool:
        return bool(self.received)

    def check(self) -> None:
        """Raise KeyboardInterrupt if a cancel was requested (and deferred)."""
        if self.received:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A signal here only records the cancel (and tells the listeners)."""
        previous, self.interruptible = self.interruptible, False
        try:
            yield
        finally:
            self.interruptible = previous

    @contextlib.contextmanager
    def interruptible_region(self) -> Iterator[None]:
        """A signal here (or one deferred before) raises KeyboardInterrupt."""
        previous, self.interruptible = self.interruptible, True
        try:
            self.check()
            yield
        finally:
            self.interruptible = previous

    def finish(self) -> None:
        """The review is reported (or the command over): a signal from now on cuts nothing
        (the watchdog still ends a process that does not end by itself)."""
        self.interruptible = False

    def listen(self, listener: Callable[[], None]) -> int:
        """Call `listener()` on the first signal; returns the key that `unlisten` takes."""
        key = next(self._ids)
        self._listeners[key] = listener
        return key

    def unlisten(self, key: int) -> None:
        self._listeners.pop(key, None)
        self._last.pop(key, None)

    def note(self, signals: list[int], *, announced: bool) -> None:
        """Signals another handler took (a hand-over's): this process was cancelled, and a
        further signal exits now; `announced`: the cancelled line was written (by the child)."""
        self.received.extend(signals)
        self._announced = self._announced or announced

    def announce(self, detail: str = "") -> None:
        """`reviewflow: cancelled` (and `detail`) on stderr: the command's last line, once."""
        if self._announced:
            return
        self._announced = True
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{CANCELLED_LINE}{detail}\n")
            sys.stderr.flush()

    def exit_now(self) -> NoReturn:
        """End the process at once, as cancelled: no clean-up, no waiting for threads. The line
        goes to the descriptor itself (a signal handler or the watchdog must not touch
        sys.stderr's buffer), unless the command said it already."""
        if not self._announced:
            self._announced = True
            with contextlib.suppress(OSError):
                os.write(2, f"{CANCELLED_LINE}\n".encode())
        for action in list(self._last.values()):
            with contextlib.suppress(OSError):  # a signal to a process gone, or not ours
                action()
        if self.before_exit is not None:
            with contextlib.suppress(OSError):
                self.before_exit()
        os._exit(EXIT_CODE)

    def at_forced_exit(self, action: Callable[[], None]) -> int:
        """Do `action()` (quick: a signal sent, never a wait) if the process is ended at once
        (a second signal, the watchdog); returns the key that `unlisten` takes."""
        key = next(self._ids)
        self._last[key] = action
        return key


def _signal_past(main: int) -> None:
    """SIGINT to the main thread once it has left `Canceller.lost` (a signal handled inside
    the hook would be lost again)."""
    while _inside(sys._current_frames().get(main), Canceller.lost.__code__):
        time.sleep(0.001)
    signal.pthread_kill(main, signal.SIGINT)


def _inside(frame: FrameType | None, code: CodeType) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


CANCEL = Canceller()  # this process's (tests put another in its place)


def install(before_exit: Callable[[], None] | None = None) -> None:
    """Make the first SIGINT or SIGTERM cancel this process's review, the second end it now."""
    CANCEL.install(before_exit)


def reclaim_sigterm() -> None:
    CANCEL.reclaim_sigterm()


def requested() -> bool:
    """True once this process was told to cancel (by a signal, with `install`)."""
    return CANCEL.requested()


def check() -> None:
    CANCEL.check()


def deferred() -> contextlib.AbstractContextManager[None]:
    return CANCEL.deferred()


def interruptible() -> contextlib.AbstractContextManager[None]:
    return CANCEL.interruptible_region()


def finish() -> None:
    CANCEL.finish()


def listen(listener: Callable[[], None]) -> int:
    return CANCEL.listen(listener)


def at_forced_exit(action: Callable[[], None]) -> int:
    return CANCEL.at_forced_exit(action)


def unlisten(key: int) -> None:
    CANCEL.unlisten(key)


def announce(detail: str = "") -> None:
    CANCEL.announce(detail)


def note(signals: list[int], *, announced: bool) -> None:
    CANCEL.note(signals, announced=announced)


def caused(exc: BaseException) -> bool:
    """Whether `exc` is a cancel in disguise: a KeyboardInterrupt in its chain, or any exception
    after a signal was received (a library catching the signal's KeyboardInterrupt may wrap it
    without a chain: pydantic's serializer reports it as a PydanticSerializationError)."""
    if CANCEL.requested():
        return True
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.append(link)
        link = link.__cause__ or link.__context__
    return False
