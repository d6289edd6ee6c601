"""The `reviewflow` console script (also `python -m flows.cli` and `python -m flows.review`).

Ctrl-C and SIGTERM are handled before anything else is imported (`reviewflow.cancel`), so a
signal in the first moments is a clean cancel, never a traceback. A cancelled command ends
without the interpreter's clean-up: threads of a cancelled review (a model request abandoned,
Prefect's import beside a server's boot) must neither delay the exit nor be cut by it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the `reviewflow` command `argv` (default: this process's arguments) and exit."""
    cancel.install()
    try:
        from flows.cli.entry import entry  # after the handlers: its imports take a while

        code = entry(argv)
    except KeyboardInterrupt:  # before the command's own handling was in place
        cancel.announce()
        code = EXIT_CODE
    cancel.finish()  # the command is over: a signal now no longer cuts anything
    if cancel.requested():  # no interpreter clean-up: its end would let a signal kill it
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    raise SystemExit(code)
