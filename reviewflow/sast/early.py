"""The pre-scan started early: the CLI runs a review's semgrep scan in a thread of its own while
the review starts (Prefect's flow run, the diff and file selection again inside the flow), so
the scan adds little to the review's wall time. (The estimate the CLI prints before the review
counts the scan's hints, as the report's does: with the console on, `result` waits for it.)
What can be refused at once is refused before the thread starts: semgrep missing or of another
version, rules that are not semgrep YAML.

The early scan holds the SAST cache's lock from the moment it is started until its results are
in the cache; the flow's `sast_prescan` stage takes the same lock, so it waits for the scan
instead of running a second one, then finds every file's results in the cache. When the early
scan fails (semgrep crashed or timed out), the stage scans again and fails with the same kind
of error, before any model request.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from types import TracebackType

from reviewflow.config import ReviewSettings
from reviewflow.errors import ReviewError
from reviewflow.sast.cache import SastCache
from reviewflow.sast.models import SastScan
from reviewflow.sast.scan import prepare, scan_locked, verify_semgrep
from reviewflow.select.scope import Scope


class EarlyScan:
    """One change's pre-scan in a background thread (see the module docstring). Use it with
    `with`: leaving the block joins the thread, and after an exception (a cancel, a failed
    review) first kills the semgrep process it is waiting for."""

    def __init__(self, scope: Scope, settings: ReviewSettings, home: str, refresh: bool) -> None:
        started = time.monotonic()
        prepared = prepare(settings, scope)  # semgrep missing, bad rules: SastError here, at once
        cache = SastCache(home, refresh)
        verify_semgrep(prepared[0], cache)  # another version, too (remembered once it passed)
        self.error: ReviewError | None = None
        self._result: SastScan | None = None
        self._guard = threading.Lock()
        self._processes: list[subprocess.Popen[bytes]] = []
        self._stopped = False
        handle = cache.acquire()  # taken here, before the flow's stage can ask for it

        def scan() -> None:
            try:
                self._result = scan_locked(
                    scope, settings, prepared, cache, started, watch=self._watch
                )
            except ReviewError as err:  # the flow's stage meets it again and fails the review
                self.error = err
            finally:
                if handle is not None:
                    handle.close()

        self._thread = threading.Thread(target=scan, name="reviewflow-sast", daemon=True)
        self._thread.start()

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        with self._guard:
            self._processes.append(process)
            stopped = self._stopped
        if stopped:
            _kill(process)

    def result(self) -> SastScan | None:
        """The scan's results once it is done (None when it failed: the flow's stage meets
        the error again). Interrupted while waiting, the scan is stopped first."""
        try:
            self._thread.join()
        except BaseException:
            self.stop()
            raise
        return self._result

    def stop(self) -> None:
        """Kill the scan's semgrep process (and any it would start): its thread then ends."""
        with self._guard:
            self._stopped = True
            processes = list(self._processes)
        for process in processes:
            _kill(process)

    def __enter__(self) -> EarlyScan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.stop()
        self._thread.join()


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.kill()
