"""One `reviewflow` command run as a child process for an MCP tool call: the CLI's own code
path, its one-line errors and its exit codes, with `--events` read as they come.

A cancelled tool call cancels the command exactly as Ctrl-C does: SIGINT to the child, which
reports what it finished (its reports written, exit 130) and stops everything it started; the
call waits for it to end (killed only if it outlives `CANCEL_WAIT_S`, past its own watchdog).
The child gets no standard input (the MCP server's is the protocol), its own stdout, and its
own session: a Ctrl-C at a terminal or a signal to the server's process group reaches the
server alone, which cancels the child once (a second signal would end it with no report)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from reviewflow.report.events import parse_event

CLI_PROGRAM = "flows.cli"  # `python -m flows.cli`: the `reviewflow` command
CANCEL_WAIT_S = 30.0  # a cancelled child ends within its watchdog's grace (4 s); then killed
ERROR_PREFIX = "reviewflow: "

OnEvent = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class Finished:
    """How a command ended: its exit code, stdout, its stderr lines (events aside) and its
    events in order."""

    code: int
    stdout: str = ""
    lines: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def last_line(self) -> str:
        """The command's one line for the user (`reviewflow: error: ...`), as the CLI printed
        it: its last stderr line from reviewflow, else its last line at all."""
        ours = [line for line in self.lines if line.startswith(ERROR_PREFIX)]
        found = ours or [line for line in self.lines if line.strip()]
        return found[-1] if found else f"reviewflow: error: the command exited {self.code}"

    def event(self, kind: str) -> dict[str, Any] | None:
        """The last event of `kind`, None when there was none."""
        found = [item for item in self.events if item["event"] == kind]
        return found[-1] if found else None


async def run_cli(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], on_event: OnEvent | None = None
) -> Finished:
    """Run `reviewflow ARGV` in `cwd` and wait for it; `on_event` is awaited for each event."""
    process = await anyio.open_process(
        [sys.executable, "-m", CLI_PROGRAM, *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(cwd),
        env=dict(env),
        start_new_session=True,  # a signal to the server's group or terminal is not its cancel
    )
    finished = Finished(code=-1)
    out: list[bytes] = []
    try:
        async with anyio.create_task_group() as group:
            assert process.stdout is not None and process.stderr is not None
            group.start_soon(_collect, process.stdout, out)
            group.start_soon(_stderr_lines, process.stderr, finished, on_event)
            await process.wait()
    except BaseException:  # a cancelled call (or any failure here): the child is cancelled
        with anyio.CancelScope(shield=True):
            await cancel_child(process)
        raise
    finished.code = process.returncode if process.returncode is not None else -1
    finished.stdout = b"".join(out).decode("utf-8", errors="replace")
    return finished


async def cancel_child(process: Process) -> None:
    """Ctrl-C for the child, then wait for it to end (killed after `CANCEL_WAIT_S`)."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    with anyio.move_on_after(CANCEL_WAIT_S):
        await _drained(process)
        return
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()


async def _drained(process: Process) -> None:
    """Wait for the child, reading what it still writes (a full pipe must not block it)."""
    async with anyio.create_task_group() as group:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                group.start_soon(_collect, stream, [])
        await process.wait()


async def _collect(stream: ByteReceiveStream, into: list[bytes]) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        async for chunk in stream:
            into.append(chunk)


async def _stderr_lines(
    stream: ByteReceiveStream, finished: Finished, on_event: OnEvent | None
) -> None:
    """Split stderr into lines: events go to `on_event`, the rest is kept as text."""
    pending = b""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        async for chunk in stream:
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                await _line(raw.decode("utf-8", errors="replace"), finished, on_event)
    if pending:
        await _line(pending.decode("utf-8", errors="replace"), finished, on_event)


async def _line(line: str, finished: Finished, on_event: OnEvent | None) -> None:
    event = parse_event(line)
    if event is None:
        finished.lines.append(line.rstrip("\r"))
        return
    finished.events.append(event)
    if on_event is not None:
        await on_event(event)
