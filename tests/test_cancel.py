"""`reviewflow.cancel`: the first signal cancels (raised where the code may be cut, recorded
where it may not), the second exits now, a watchdog ends whatever hangs; a cancelled review's
provider pool sends nothing more."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewflow import cancel
from reviewflow.cancel import Canceller
from reviewflow.providers.messages import ModelRequest, UserMessage
from reviewflow.providers.pool import ProviderPool, ReviewCancelled
from tests.wire_server import Text, WireServer

ROOT = Path(__file__).resolve().parents[1]


def test_the_first_signal_raises_where_the_code_may_be_cut(canceller: Canceller) -> None:
    told: list[str] = []
    canceller.listen(lambda: told.append("pool"))
    with pytest.raises(KeyboardInterrupt):
        canceller.handle(signal.SIGTERM, None)
    assert told == ["pool"] and cancel.requested()


def test_a_deferred_signal_is_raised_where_the_flow_waits(canceller: Canceller) -> None:
    reached = []
    with cancel.deferred():
        canceller.handle(signal.SIGINT, None)  # inside Prefect's engine, say: only recorded
        reached.append("after the signal")
        with pytest.raises(KeyboardInterrupt), cancel.interruptible():
            reached.append("never")
    assert reached == ["after the signal"]
    assert canceller.interruptible  # outside the deferred region again


def test_interruptible_regions_are_free_until_a_cancel(canceller: Canceller) -> None:
    with cancel.deferred(), cancel.interruptible():
        pass
    cancel.check()
    canceller.finish()  # the review is reported: a signal is only recorded now
    canceller.handle(signal.SIGINT, None)
    assert cancel.requested()


def test_a_pool_sends_nothing_once_cancelled(canceller: Canceller, wire: WireServer) -> None:
    wire.script("openai", [Text("first")])
    request = ModelRequest(messages=(UserMessage(content="hi"),))
    with ProviderPool(wire.settings("openai"), 1) as pool:
        assert pool.complete(request).text == "first"
        with cancel.deferred():
            canceller.handle(signal.SIGINT, None)
        with pytest.raises(ReviewCancelled, match="the review was cancelled"):
            pool.complete(request)  # not a failed request: the stage that meets it is cancelled
    assert len(wire.requests()) == 1


_SECOND_SIGNAL = """
import os, signal, sys, time
from reviewflow import cancel
cancel.install()
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    print("cancelling", flush=True)
    with cancel.deferred():
        os.kill(os.getpid(), signal.SIGTERM)  # the second: now, even where the first waits
        time.sleep(5)
print("never")
"""

_WATCHDOG = """
import os, signal, time
from reviewflow import cancel
cancel.CANCEL.grace = 0.5
cancel.install()
with cancel.deferred():
    os.kill(os.getpid(), signal.SIGTERM)
    print("cancelled", flush=True)
    time.sleep(30)  # a hang the cancel cannot cut
print("never")
"""


@pytest.mark.parametrize(
    ("program", "out"), [(_SECOND_SIGNAL, "cancelling\n"), (_WATCHDOG, "cancelled\n")]
)
def test_the_second_signal_and_the_watchdog_exit_130_at_once(program: str, out: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (130, out, "reviewflow: cancelled\n")
    assert time.monotonic() - started < 30  # neither sleep ran out


_IN_SERIALIZER = """
import os, signal, sys
from pathlib import Path
from pydantic import BaseModel, model_serializer
from flows.cli.main import unexpected
from reviewflow import cancel

class Outcome(BaseModel):
    verdict: str = "pass"

    @model_serializer(mode="wrap")
    def _ser_model(self, handler):
        os.kill(os.getpid(), signal.SIGINT)  # the signal lands inside pydantic's serializer
        return handler(self)

cancel.CANCEL.grace = None
cancel.install()
try:
    Outcome().model_dump_json()
except Exception as exc:  # pydantic wraps the KeyboardInterrupt, chain dropped
    print(type(exc).__name__, flush=True)
    sys.exit(unexpected(exc, Path(sys.argv[1]), verbose=False))
"""


def test_a_signal_inside_a_serializer_is_a_cancel_not_an_internal_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IN_SERIALIZER, str(tmp_path / "run.log")], cwd=ROOT,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout == "PydanticSerializationError\n"
    assert done.stderr == "reviewflow: cancelled\n"
    assert done.returncode == 130
    assert not (tmp_path / "run.log").exists()  # no traceback recorded: nothing went wrong


def test_a_keyboard_interrupt_anywhere_in_the_chain_is_a_cancel(canceller: Canceller) -> None:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        assert cancel.caused(exc)
    assert not cancel.caused(RuntimeError("a bug"))


_IN_CALLBACK = """
import gc, signal, time, weakref
from reviewflow import cancel

class Lock:
    pass

cancel.CANCEL.grace = None
cancel.install()
lock = Lock()
ref = weakref.ref(lock, lambda _: cancel.CANCEL.handle(signal.SIGINT, None))  # importlib's way
try:
    del lock  # the signal lands in the callback, where Python cannot raise it
    for _ in range(50):
        time.sleep(0.1)
    print("lost", flush=True)
except KeyboardInterrupt:
    print("cancelled", flush=True)
"""


def test_a_signal_inside_a_weakref_callback_is_not_lost() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IN_CALLBACK], cwd=ROOT, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert (done.stdout, done.stderr) == ("cancelled\n", "")
