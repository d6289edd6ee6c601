"""What a review's model stages add up to: every file's findings so far, records, completeness.

The flow drives the stages (plan, tool loop per chunk, relocation, review filter) per file and
hands what finished to `summarize`; a cancelled review keeps what finished before Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reviewflow.findings.models import FileFindings
from reviewflow.models import ReviewWarning
from reviewflow.review.records import ChunkResult, PlanResult, RequestRecord, StageResult

CANCELLED = ReviewWarning(
    "cancelled", "the review was cancelled: only the files finished before are reported"
)


@dataclass(frozen=True)
class ModelStages:
    """The model stages' results for every file, and what they add up to."""

    files: tuple[FileFindings, ...]
    records: tuple[RequestRecord, ...]  # of every model stage so far
    warnings: tuple[ReviewWarning, ...]  # of plans and tool loops
    complete: bool  # plans and tool loops
    chunks: int
    tool_calls: int
    cancelled: bool = False  # Ctrl-C: what finished before it is kept
    unrecorded_requests: int = 0  # Ctrl-C: requests sent by stages that never finished
    incomplete_files: tuple[str, ...] = ()  # a plan, chunk, relocation or filter of theirs
    file_passes: tuple[int, ...] = ()  # several passes: the pass of each of `files`
    passes: int = 1  # `review.passes`

    def of_passes(self, file_passes: Sequence[int], passes: int) -> ModelStages:
        """The same results of `passes` passes, each file's findings with the pass (from 1)
        they are of."""
        return replace(self, file_passes=tuple(file_passes), passes=passes)

    def finished_paths(self) -> set[str | None]:
        """The files with a complete result of every pass."""
        numbers = self.file_passes or (1,) * len(self.files)
        passes_of: dict[str | None, set[int]] = {}
        for item, number in zip(self.files, numbers, strict=True):
            if item.complete:
                passes_of.setdefault(item.path, set()).add(number)
        return {path for path, done in passes_of.items() if len(done) >= self.passes}

    def by_pass(self, passes: int) -> list[list[FileFindings]]:
        """`files` per pass, for `passes` passes (one: every file, as it is)."""
        if passes == 1 or not self.file_passes:
            return [list(self.files)]
        grouped: list[list[FileFindings]] = [[] for _ in range(passes)]
        for file, number in zip(self.files, self.file_passes, strict=True):
            grouped[number - 1].append(file)
        return grouped

    def cancel(self, unrecorded_requests: int) -> ModelStages:
        """The same results, marked cancelled (Ctrl-C), with the requests no record holds."""
        return replace(
            self,
            complete=False,
            cancelled=True,
            unrecorded_requests=unrecorded_requests,
            warnings=(*self.warnings, CANCELLED),
        )


def summarize(
    plans: Sequence[PlanResult], chunks: Sequence[ChunkResult], files: Sequence[FileFindings]
) -> ModelStages:
    """The stages' results put together (the files' own warnings go through `finalize`)."""
    engine: list[StageResult] = [*plans, *chunks]
    return ModelStages(
        files=tuple(files),
        records=tuple(record for result in [*engine, *files] for record in result.records),
        warnings=tuple(warning for result in engine for warning in result.warnings),
        complete=all(result.complete for result in engine),
        chunks=len(chunks),
        tool_calls=sum(chunk.tool_calls for chunk in chunks),
        incomplete_files=tuple(
            sorted({r.path for r in [*engine, *files] if not r.complete and r.path is not None})
        ),
    )
