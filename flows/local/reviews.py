"""The reviews running on a managed Prefect server: one small record per review process.

A review that uses the managed server records itself, for as long as it runs, in
`<Prefect home>/reviews/<pid>.json` (pid, the process's start time, repository, start time;
0600 in a 0700 folder), so `reviewflow server stop` can tell that stopping the server would
break it, and cancel it first with `--force`. The warm process's child records itself the same
way (it runs the CLI's code). A record whose pid is gone, or now another process (its start
time differs: a reused pid), is stale: ignored and removed.

No Prefect import here: the review records itself before the CLI imports Prefect.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from flows.local.process import ServerError, read_record, signal_process
from flows.local.settings import prefect_home
from reviewflow.errors import ReviewError
from reviewflow.fsutil import private_dirs, write_output

REVIEWS_DIR = "reviews"


@dataclass(frozen=True)
class RunningReview:
    """What a review's record says."""

    pid: int
    process_start: str  # the process's start time as the system tells it (`process_start`)
    repository: str
    started_at: float  # wall-clock time

    def describe(self, now: float | None = None) -> str:
        """`pid 4242 (/path/to/repo, since 14:03:07)`."""
        start = time.localtime(self.started_at)
        today = time.localtime(time.time() if now is None else now)[:3] == start[:3]
        since = time.strftime("%H:%M:%S" if today else "%Y-%m-%d %H:%M:%S", start)
        return f"pid {self.pid} ({self.repository}, since {since})"

    def alive(self) -> bool:
        """The process recorded is still running (not a later process with its pid)."""
        return process_start(self.pid) == self.process_start


def process_start(pid: int) -> str | None:
    """When process `pid` started, as the system counts it (clock ticks since boot, from
    /proc; `ps`'s start time where there is no /proc); None when no such process runs (a
    zombie, whose exit status waits for its parent, has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return _ps_start(pid) if not Path("/proc/self").exists() else None
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _ps_start(pid: int) -> str | None:
    done = subprocess.run(
        ["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, check=False
    )
    return " ".join(done.stdout.split()) or None


def managed_home(home: Path, env: Mapping[str, str]) -> Path | None:
    """The managed Prefect home a review of the reviewflow home `home` uses (None when it uses
    the user's own `PREFECT_API_URL`)."""
    return None if env.get("PREFECT_API_URL") else prefect_home(home)


def reviews_dir(phome: Path) -> Path:
    return phome / REVIEWS_DIR


class ReviewRecord:
    """This process's record as a review running on the managed server of `phome`; `close`
    (or the context's end) removes it. Records of reviews that ended without removing theirs
    (killed outright) are removed first. A record that cannot be written does not stop the
    review: it says so on stderr, since `server stop` will not see it."""

    def __init__(self, phome: Path | None, repository: str) -> None:
        self.path: Path | None = None
        start = process_start(os.getpid())
        if phome is None or start is None:
            return
        review = RunningReview(os.getpid(), start, repository, time.time())
        path = reviews_dir(phome) / f"{review.pid}.json"
        try:
            private_dirs(path.parent)
            running_reviews(phome)  # forgets the stale records
            write_output(path, json.dumps(asdict(review)) + "\n")
        except (OSError, ReviewError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            sys.stderr.write(
                f"reviewflow: warning: cannot record this review in {path.parent} ({reason}): "
                "`reviewflow server stop` will not know it is running\n"
            )
            return
        self.path = path

    def close(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)
            self.path = None

    def __enter__(self) -> ReviewRecord:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def running_reviews(phome: Path) -> list[RunningReview]:
    """The reviews running on the managed server of `phome` (never this process), oldest
    first; stale records are removed. OSError when the folder exists but cannot be read."""
    try:
        names = sorted(os.listdir(reviews_dir(phome)))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        path = reviews_dir(phome) / name
        review = read_record(path, RunningReview)
        if review is not None and review.pid != os.getpid() and review.alive():
            found.append(review)
        elif review is None or not review.alive():  # stale (or not a record): forgotten
            with contextlib.suppress(OSError):
                path.unlink()
    return sorted(found, key=lambda review: review.started_at)


def cancel_reviews(reviews: list[RunningReview]) -> list[str]:
    """SIGTERM to each review (it then reports itself incomplete and exits 130); a line for
    each that could not be signalled."""
    failed = []
    for review in reviews:
        if not review.alive():
            continue
        try:
            signal_process(review.pid, signal.SIGTERM)
        except ServerError as exc:
            failed.append(f"cannot cancel the review {review.describe()}: {exc}")
    return failed


def wait_ended(reviews: list[RunningReview], within: float) -> list[RunningReview]:
    """Wait up to `within` seconds for `reviews` to end; those still running then."""
    deadline = time.monotonic() + within
    left = [review for review in reviews if review.alive()]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [review for review in left if review.alive()]
    return left
