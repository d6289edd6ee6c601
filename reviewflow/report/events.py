"""A review's machine-readable events on stderr (`reviewflow review --events`): one line each,
`reviewflow-event: ` and a JSON object, for a program driving the CLI (`reviewflow mcp`).

Two kinds: `progress` (the live progress display's counters, on every change) and `written`
(the review's end: its exit code and the report files written, kind -> path). Every other
stderr line is the CLI's usual text, unchanged."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import IO, Any

from reviewflow.report.progress import ProgressState

EVENT_PREFIX = "reviewflow-event: "


def event_line(kind: str, payload: dict[str, Any]) -> str:
    """One event as its stderr line (with the newline)."""
    return EVENT_PREFIX + json.dumps({"event": kind, **payload}, ensure_ascii=False) + "\n"


def progress_event(state: ProgressState) -> str:
    return event_line("progress", {**asdict(state), "current": list(state.current)})


def written_event(exit_code: int, written: dict[str, str]) -> str:
    return event_line("written", {"exit_code": exit_code, "reports": dict(written)})


def write_event(stream: IO[str], line: str) -> None:
    """Write one event line and flush it (the reader acts on each as it comes)."""
    stream.write(line)
    stream.flush()


def parse_event(line: str) -> dict[str, Any] | None:
    """The event a stderr line carries, None for any other line (or a malformed event)."""
    if not line.startswith(EVENT_PREFIX):
        return None
    try:
        data = json.loads(line[len(EVENT_PREFIX) :])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("event"), str) else None
