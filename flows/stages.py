"""The model stages of a review, wired per file: plan -> tool loop per chunk -> relocate ->
review filter. Each file's chain moves on its own: one file's tool loop starts as soon as its own
plan is done and its relocation as soon as its own chunks are, whatever the other files do. With
`review.passes` above 1, every pass is a chain of its own per file (its jobs: `pass_jobs`; its
model: the pass's `review.pass_models` entry, else the review's), all submitted together.

Also the one place the flow takes a cancel after its model stages (`cancelled`, `awaited`):
a stage after them asks for nothing once the review is cancelled, and one in flight is
abandoned with what was done kept."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from prefect.futures import PrefectFuture

from flows.runners import submitted
from reviewflow import cancel
from reviewflow.config import Config
from reviewflow.findings.models import FileFindings
from reviewflow.findings.normalize import normalize_path
from reviewflow.findings.stages import ModelStages, summarize
from reviewflow.providers.budget import Budget
from reviewflow.providers.pool import ProviderHandle, pool_for
from reviewflow.review.jobs import FileJob
from reviewflow.review.passes import pass_jobs
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import (
    ChunkResult,
    PlanResult,
    RequestRecord,
    mark_reused,
    total_usage,
)
from reviewflow.review.symbols import SymbolSource, symbol_source
from reviewflow.select.reviewed import ReviewedFiles
from reviewflow.select.scope import Scope
from tasks.loop import tool_loop
from tasks.plan import plan
from tasks.relocate import relocate
from tasks.review_filter import review_filter

T = TypeVar("T")


def run_model_stages(
    jobs: Sequence[FileJob],
    read: tuple[Snapshot, str],
    scope: Scope,
    config: Config,
    handle: ProviderHandle,
    options: dict[str, Any],
    symbols: SymbolSource | None,
) -> ModelStages:
    """Run every file's chain on the snapshot `read` (and its identity), each stage's task with
    `options` (result storage, refresh); the tool loops' symbol tools read the code index of
    the change through `symbols` (None with `review.context` off: none offered).

    A stage is submitted once its own inputs are done, so no worker of the task runner ever
    sits waiting for an upstream future (with `max_workers` = `review.concurrency`, waiting
    tasks would otherwise starve the ones that could run)."""
    wrap, observer = submitted(config), pool_for(handle).observer
    handles = pass_handles(handle, config)
    snapshot, snapshot_id = read
    reviewed = ReviewedFiles.of([item.file for item in scope.selection.kept])
    # Built once per review, not per submission: a task's options rebuild it (~5 ms each).
    planning, looping = plan.with_options(**options), tool_loop.with_options(**options)
    relocating, filtering = relocate.with_options(**options), review_filter.with_options(**options)
    chains = _Chains(
        lambda job: planning.submit(wrap(job), wrap(handles[job.review_pass - 1])),
        lambda job, index, planned: looping.submit(
            wrap(job),
            index,
            wrap(planned),
            wrap(snapshot),
            snapshot_id,
            wrap(config.review),
            wrap(handles[job.review_pass - 1]),
            wrap(symbols),
        ),
        lambda job, chunks: relocating.submit(
            wrap(chunks),
            wrap(reviewed.only(named_in(chunks, reviewed))),
            wrap(handles[job.review_pass - 1]),
        ),
        lambda job, found: filtering.submit(
            wrap(found),
            wrap(reviewed.only(f.path for f in found if f.path)),
            wrap(handles[job.review_pass - 1]),
        ),
        observer.file_done if observer is not None else (lambda path: None),
        passes=config.review.passes,
    )
    try:
        cancel.check()  # cancelled before the first stage: nothing is started
        for passed in pass_jobs(jobs, config.review.passes):
            for job in passed:
                chains.start(job)
        chains.run()
    except KeyboardInterrupt:  # keep what is done; requests still in flight are abandoned
        chains.take_finished()
        stages = chains.summary()
        return stages.cancel(abandon(handle, stages.records))
    return chains.summary()


def pass_handles(handle: ProviderHandle, config: Config) -> list[ProviderHandle]:
    """Each pass's model: its `review.pass_models` entry (a pool of its own beside the review's,
    sharing its slots, meter and budget), else the review's."""
    models = config.review.pass_models
    pool = pool_for(handle)
    return [
        pool.for_settings(models[n]) if n < len(models) else handle
        for n in range(config.review.passes)
    ]


def review_symbols(scope: Scope, config: Config, home: str) -> SymbolSource | None:
    """Where the tool loops' and verification's symbol tools find the code index of the change
    (None with `review.context` off)."""
    return symbol_source(scope.change, config.review, home)


def review_budget(handle: ProviderHandle) -> Budget | None:
    """The review's budget (its pool's), taken before the stages: a cancel closes the pool."""
    return pool_for(handle).budget


def cancelled(stages: ModelStages) -> bool:
    """Whether the review was cancelled, in its model stages or since: a stage after them then
    asks for nothing (no new request after Ctrl-C)."""
    return stages.cancelled or cancel.requested()


def awaited(
    submit: Callable[[], PrefectFuture[T]],
    handle: ProviderHandle,
    records: Sequence[RequestRecord],
    kept: Callable[[], T],
) -> tuple[T, int]:
    """The result of the stage `submit` starts, waited for where a cancel is raised, and 0; on
    a cancel, what `kept` keeps instead and the requests sent that no record (of `records`)
    holds: the stage's request in flight is abandoned (`abandon`)."""
    try:
        future = submit()
        with cancel.interruptible():
            future.wait()
        return finished_result(future), 0
    except KeyboardInterrupt:
        return kept(), abandon(handle, records)


def named_in(chunks: Sequence[ChunkResult], reviewed: ReviewedFiles) -> set[str]:
    """The reviewed files a relocation of `chunks` needs: those their candidates name, read as
    the relocation reads them."""
    files = reviewed.files
    return {normalize_path(c.file or c.path, files) for chunk in chunks for c in chunk.candidates}


def abandon(handle: ProviderHandle, records: Sequence[RequestRecord]) -> int:
    """A cancel: close the review's provider pool, so its requests in flight are abandoned at
    once; returns the requests it sent that no record holds (their stage never finished, or
    they were abandoned in flight). They count in the review's usage."""
    pool = pool_for(handle)
    pool.close()
    return max(0, pool.meter.totals().requests - total_usage(records)[1])


class _Chains:
    """Per-file stage chains driven by completions, in the flow's own thread.

    A stage with nothing to do is not a task run: no plan below 50 changed lines, no
    relocation or filter for a file whose chunks proposed nothing.
    """

    def __init__(
        self,
        submit_plan: Callable[[FileJob], PrefectFuture[PlanResult]],
        submit_loop: Callable[[FileJob, int, PlanResult], PrefectFuture[ChunkResult]],
        submit_relocate: Callable[[FileJob, list[ChunkResult]], PrefectFuture[list[FileFindings]]],
        submit_filter: Callable[[FileJob, list[FileFindings]], PrefectFuture[list[FileFindings]]],
        on_file_done: Callable[[str], None],
        passes: int = 1,
    ) -> None:
        self._plan, self._loop = submit_plan, submit_loop
        self._relocate, self._filter = submit_relocate, submit_filter
        self._on_file_done, self._passes = on_file_done, passes
        self._done: queue.SimpleQueue[tuple[str, int, FileJob, Any]] = queue.SimpleQueue()
        self._waiting: dict[tuple[int, str], dict[int, ChunkResult]] = {}
        self._passes_done: dict[str, int] = {}
        self._pending = 0
        self.plans: list[PlanResult] = []
        self.chunks: list[ChunkResult] = []
        self.files: list[FileFindings] = []
        self.file_passes: list[int] = []  # the pass of each of `files`

    def summary(self) -> ModelStages:
        """What the stages finished add up to, every pass's files with their pass."""
        stages = summarize(self.plans, self.chunks, self.files)
        return stages.of_passes(self.file_passes, self._passes) if self._passes > 1 else stages

    def start(self, job: FileJob) -> None:
        if job.needs_plan:
            self._watch("plan", 0, job, self._plan(job))
        else:
            self._planned(job, PlanResult(path=job.path))

    def run(self) -> None:
        """Until every chain is done: take each finished stage and submit what follows it.
        A stage that failed raises here (its error fails the flow)."""
        while self._pending:
            with cancel.interruptible():  # a cancel is raised here, never inside Prefect's engine
                stage, index, job, future = self._done.get()
            self._pending -= 1
            result = finished_result(future)
            if stage == "plan":
                self.plans.append(result)
                self._planned(job, result)
            elif stage == "loop":
                self._chunk_done(job, index, result)
            elif stage == "relocate":
                self._watch("filter", 0, job, self._filter(job, result))
            else:
                self._file_finished(job, result)

    def take_finished(self) -> None:
        """On a cancel: keep the stages that finished but were not taken yet (a file whose
        filter is done, or whose last chunk proposed nothing, counts as reviewed); nothing new
        is submitted."""
        while True:
            try:
                stage, index, job, future = self._done.get_nowait()
            except queue.Empty:
                return
            if not completed(future):
                continue  # failed or cancelled: nothing to keep
            result = finished_result(future)
            if stage == "plan":
                self.plans.append(result)
            elif stage == "loop":
                self._chunk_done(job, index, result, resume=False)
            elif stage == "filter":
                self._file_finished(job, result)

    def _file_finished(self, job: FileJob, files: Sequence[FileFindings]) -> None:
        """A file's pass is done: its findings kept; the file done once every pass of it is."""
        self.files.extend(files)
        self.file_passes.extend(job.review_pass for _ in files)
        done = self._passes_done[job.path] = self._passes_done.get(job.path, 0) + 1
        if done == self._passes:
            self._on_file_done(job.path)

    def _planned(self, job: FileJob, plan: PlanResult) -> None:
        self._waiting[job.review_pass, job.path] = {}
        for index in range(len(job.chunks)):
            self._watch("loop", index, job, self._loop(job, index, plan))

    def _chunk_done(
        self, job: FileJob, index: int, result: ChunkResult, *, resume: bool = True
    ) -> None:
        """A chunk's loop is done: with its file's last, the file's relocation (unless
        `resume` is off: a cancel), or the file done when no chunk proposed anything."""
        self.chunks.append(result)
        mine = self._waiting[job.review_pass, job.path]
        mine[index] = result
        if len(mine) < len(job.chunks):
            return
        ordered = [mine[i] for i in sorted(mine)]  # in chunk order: candidate IDs follow it
        if not any(chunk.candidates for chunk in ordered):
            # finished with nothing to relocate or filter: reviewed, with no findings
            complete = all(chunk.complete for chunk in ordered)
            self._file_finished(job, [FileFindings(path=job.path, complete=complete)])
        elif resume:
            self._watch("relocate", 0, job, self._relocate(job, ordered))

    def _watch(self, stage: str, index: int, job: FileJob, future: PrefectFuture[Any]) -> None:
        self._pending += 1
        future.add_done_callback(lambda done: self._done.put((stage, index, job, done)))


def completed(future: PrefectFuture[Any]) -> bool:
    """Whether a done stage completed, read from its future: its `state` alone asks the Prefect
    API for each stage not yet waited on, which after a cancel of a large review took seconds
    (as long as the watchdog gives the review to print its report)."""
    try:
        future.wait()  # done: its final state is at hand, no request
    except (concurrent.futures.CancelledError, asyncio.CancelledError):  # never started
        return False
    return future.state.is_completed()


def finished_result(future: PrefectFuture[Any]) -> Any:
    """A done stage's result (raising its error); answers from the cache are marked reused."""
    result = future.result()
    return mark_reused(result) if future.state.name == "Cached" else result
