"""A process's start-up imports without the cyclic garbage collector (`startup_gc`).

Importing Prefect builds hundreds of thousands of long-lived objects (modules, classes,
pydantic schemas) and almost no garbage, yet the collector runs over them again and again
while they are made: about a quarter of the import's CPU here (bench/RESULTS.md). So the
collector is off for the imports; what they built is then frozen (`gc.freeze`: never walked by
a later collection) and the collector is on again for the process's real work.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def startup_gc() -> Iterator[None]:
    """The block's imports without garbage collection; their objects frozen after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
