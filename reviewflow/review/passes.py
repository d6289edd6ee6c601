"""The jobs of a review's independent passes (`review.passes`): the first pass is the jobs as
they are; each later one is the same files with their hunks in another order and the pass's
number (which the model stages' cache keys hash), so the same model answers afresh."""

from __future__ import annotations

from collections.abc import Sequence

from reviewflow.review.jobs import Chunk, FileJob

HUNK_HEADER = "@@ -"


def pass_jobs(jobs: Sequence[FileJob], passes: int) -> list[list[FileJob]]:
    """Every pass's jobs, the first pass's being `jobs` unchanged."""
    return [list(jobs)] + [
        [pass_job(job, number) for job in jobs] for number in range(2, passes + 1)
    ]


def pass_job(job: FileJob, number: int) -> FileJob:
    """`job` for pass `number` (2 and on): each chunk's hunks rotated by the pass and, on even
    passes, reversed (each chunk is its own session, so their order changes nothing)."""
    chunks = tuple(_reordered(chunk, number) for chunk in job.chunks)
    return job.model_copy(update={"chunks": chunks, "review_pass": number})


def _reordered(chunk: Chunk, number: int) -> Chunk:
    hunks = split_hunks(chunk.text)
    if len(hunks) < 2:
        return chunk
    shift = (number - 1) % len(hunks)
    order = hunks[shift:] + hunks[:shift]
    if number % 2 == 0:
        order.reverse()
    return chunk.model_copy(update={"text": "\n".join(order)})


def split_hunks(text: str) -> list[str]:
    """A chunk's text cut before each hunk header (text before the first stays with it)."""
    hunks: list[list[str]] = []
    for line in text.split("\n"):
        if line.startswith(HUNK_HEADER) or not hunks:
            hunks.append([line])
        else:
            hunks[-1].append(line)
    return ["\n".join(lines) for lines in hunks]
