"""The code index's first build, shown on a terminal: a large tree takes seconds to parse once
(git/git ~5 s, bench/RESULTS.md), and a review or `reviewflow context` would otherwise sit
silent before its estimate. Later builds parse only new blobs and say nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from reviewflow.context.build import Progress

PROGRESS_EVERY = 200  # parsed files between two progress lines


def indexing_progress(stream: TextIO, enabled: bool = True) -> Progress | None:
    """A progress callback writing `reviewflow: indexing N/M files` over itself on `stream`,
    ended by a newline once done; None when `stream` is no terminal or progress is off."""
    if not enabled or not stream.isatty():
        return None

    def show(done: int, total: int) -> None:
        if done == total or done % PROGRESS_EVERY == 0:
            end = "\n" if done == total else ""
            stream.write(f"\rreviewflow: indexing {done}/{total} files{end}")
            stream.flush()

    return show
