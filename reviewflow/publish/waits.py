"""How long a rate-limited platform asks to be left alone, from its answer's headers: every
platform client reads it here (GitHub's secondary limits have their own rules,
`github/failures.py`). The publishing task's Prefect retries do the waiting."""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping

DEFAULT_WAIT_S = 60.0  # a rate limit that names no time to wait
MAX_WAIT_S = 900.0


def retry_wait(headers: Mapping[str, str], now: float, reset: str | None = None) -> float:
    """Seconds to wait: `Retry-After` (seconds or an HTTP date), else the epoch seconds in the
    `reset` header when the platform sends one, else a minute; between 1 s and 15 minutes."""
    wait = _seconds_after(str(headers.get("Retry-After") or ""), now)
    if wait is None and reset is not None:
        at = _number(str(headers.get(reset) or ""))
        wait = None if at is None else at - now
    return min(max(DEFAULT_WAIT_S if wait is None else wait, 1.0), MAX_WAIT_S)


def _seconds_after(value: str, now: float) -> float | None:
    seconds = _number(value)
    if seconds is not None or not value.strip():
        return seconds
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError):
        return None


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
