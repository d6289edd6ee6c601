"""Failures that are not a finding: one line naming the cause and the fix, exit 2, details logged.

Prefect reports an unreachable API and a temporary server that never started as plain
RuntimeErrors; they are recognised by their text here (the only place that knows it), anything
else unexpected is an internal error. The traceback goes to a log file under the home.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import re
import tempfile
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

from flows.local.settings import STARTUP_TIMEOUT_DEFAULT, STARTUP_TIMEOUT_VAR
from reviewflow.fsutil import private_dirs

_UNREACHABLE = re.compile(r"Failed to reach API at (\S+?)\.?(?:\s|$)")
_NO_SERVER = "Timed out while attempting to connect to ephemeral Prefect API server"


KEEP_LOGS = 100  # the newest run logs kept,
KEEP_LOG_DAYS = 30  # and none older than this


def run_log_path(home: Path) -> Path:
    """Where this run's log goes: `<home>/logs/reviewflow-<UTC time>-<pid>.log`."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return home / "logs" / f"reviewflow-{stamp}-{os.getpid()}.log"


def prune_logs(folder: Path, now: float | None = None) -> None:
    """Remove run logs beyond the newest `KEEP_LOGS` and any older than `KEEP_LOG_DAYS`."""
    try:
        logs = sorted(
            ((entry.stat().st_mtime, entry.path) for entry in os.scandir(folder)
             if entry.name.startswith("reviewflow-") and entry.name.endswith(".log")),
            reverse=True,
        )  # fmt: skip
    except OSError:
        return  # no log folder yet, or one we cannot read: nothing to prune
    oldest = (time.time() if now is None else now) - KEEP_LOG_DAYS * 86400
    for rank, (mtime, path) in enumerate(logs):
        if rank >= KEEP_LOGS or mtime < oldest:
            with contextlib.suppress(OSError):
                os.unlink(path)


def log_to_file(logger_name: str, path: Path) -> None:
    """Send a library's log records to the run's log file (created on the first record)."""
    try:
        private_dirs(path.parent)
    except OSError:
        return  # an unwritable home costs the log, not the review (tracebacks fall back to /tmp)
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger(logger_name).addHandler(handler)


def record_traceback(exc: BaseException, path: Path) -> Path:
    """Append `exc`'s traceback to the log (in the temp dir if the home is not writable)."""
    text = "".join(traceback.format_exception(exc))
    for target in (path, Path(tempfile.gettempdir()) / path.name):
        try:
            private_dirs(target.parent)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError:
            continue
        return target
    return path


def describe_failure(exc: BaseException, env: Mapping[str, str], details: Path) -> str:
    """The one line a user reads for an unexpected exception (Prefect's or ours)."""
    for link in _chain(exc):
        text = str(link)
        found = _UNREACHABLE.search(text)
        if found is not None:
            return (
                f"cannot reach the Prefect API at {found.group(1)} (PREFECT_API_URL): start "
                "that server, or unset PREFECT_API_URL to let reviewflow start a temporary "
                f"local one (details: {details})"
            )
        if _NO_SERVER in text:
            seconds = env.get(STARTUP_TIMEOUT_VAR, STARTUP_TIMEOUT_DEFAULT)
            return (
                f"the local Prefect server did not start within {seconds} s: run the command "
                f"again (a first start migrates its database), raise {STARTUP_TIMEOUT_VAR}, "
                f"or set PREFECT_API_URL to a running server (details: {details})"
            )
    message = " ".join(str(exc).split())
    what = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"internal error: {what} (details: {details})"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen
