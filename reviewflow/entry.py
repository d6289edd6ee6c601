"""A client's one entry point to a review's two ends outside its flow: the front half a CLI
prepares before Prefect starts (inputs checked, the scope, the early SAST scan, the estimate and
the context packs it counted), the outcome of a review that did not finish (cancelled before its
flow could take the cancel: its reports written, no Prefect), and `--preview`.

The stages' modules (the scope, SAST, the cost, the code index, the report) are imported by
the functions that use them, when a review starts: `reviewflow config`, `server status` and
the other commands, whose path imports this module, stay instant (~0.4 s more otherwise)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from reviewflow.config import Config, ConsoleMode, OutputSettings
from reviewflow.errors import ConfigError
from reviewflow.fsutil import check_output
from reviewflow.request import ReviewRequest

if TYPE_CHECKING:
    from reviewflow.context.build import Progress
    from reviewflow.report.outcome import ReviewRun
    from reviewflow.report.progress import ProgressDisplay
    from reviewflow.review.packs import FileContext
    from reviewflow.sast.early import EarlyScan
    from reviewflow.select.scope import Scope


@dataclass(frozen=True)
class FrontHalf:
    """A review's front half, as `prepare` made it, for the flow (`run_review`'s `front`).

    `request`: the request as the flow reads it (a diff on stdin saved to a file, the early
    scan's mark); `estimate` and `packs`: what the estimate counted, handed on (None: the flow
    makes them); `line`: the estimate as one line for the user (None with `--console off`);
    `started`: when the review started (a cancel from then on is reported). Use it with `with`:
    leaving the block waits for the early scan, and after an exception stops it first."""

    request: ReviewRequest
    scope: Scope
    early: EarlyScan | None = None
    estimate: dict[str, Any] | None = None
    packs: dict[str, FileContext] | None = None
    line: str | None = None
    started: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __enter__(self) -> FrontHalf:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.early is not None:
            self.early.__exit__(kind, error, traceback)


def check_review(config: Config, home: Path) -> None:
    """What fails a review before anything starts: a placeholder model or a missing key (here,
    unless a remote Dask cluster's workers are to hold it),
    `--max-cost` without a known price or a budget on Dask, report paths that cannot be
    written (not after the model has been paid)."""
    from reviewflow.cost.budget import check_budget
    from reviewflow.providers.factory import check_settings, key_on_workers

    check_settings(config.model, key_elsewhere=key_on_workers(config))  # the workers': asked
    # by the runner's preflight, on the cluster, before any request
    check_budget(config)
    check_outputs(config.output, home)


def check_outputs(output: OutputSettings, home: Path) -> None:
    """Report paths that cannot be written fail now, not after the model has been paid."""
    if len(output.to_stdout) > 1:
        both = " and ".join(output.to_stdout)
        raise ConfigError(f"the {both} reports go to stdout ('-'): at most one report can")
    directory = Path(output.report_dir).expanduser() if output.report_dir else home / "reports"
    check_output(directory, directory=True)
    for setting in output.reports.values():
        if setting and Path(setting).expanduser().is_absolute():  # relative: the review's own dir
            check_output(setting)


@contextlib.contextmanager
def stdin_saved(request: ReviewRequest, stdin: IO[Any] | None) -> Iterator[ReviewRequest]:
    """A diff on stdin, saved to a private temporary file that the flow's tasks can read."""
    if request.diff_source != "-":
        yield request
        return
    from reviewflow.git.repo import read_stdin

    data = read_stdin(stdin)  # one line and exit 2 when stdin is closed or unreadable
    with tempfile.TemporaryDirectory(prefix="reviewflow-diff-") as tmpdir:
        path = Path(tmpdir) / "stdin.diff"
        path.write_bytes(data)
        yield request.model_copy(update={"stdin_copy": str(path)})


def prepare(request: ReviewRequest, config: Config, progress: Progress | None = None) -> FrontHalf:
    """The front half, computed once: bad input (repository, refs, diff, rules, trust, where
    Dask runs) fails here with one line, before Prefect starts its API; `--sast` starts its
    scan in a thread; the estimate with the context packs it counted (`progress`: the code
    index's first build) unless `--console off` keeps stderr to an exit 2's one line."""
    from reviewflow.config.placement import check_placement
    from reviewflow.select.scope import prepare as prepare_scope

    scope = prepare_scope(request, config.review)
    check_placement(config.review, scope.change.repo_root)  # Dask's scheduler, the store
    early = early_scan(config, scope, request)  # runs while the review starts
    if early is not None:
        request = request.model_copy(update={"sast_prescanned": True})
    if config.output.console is ConsoleMode.OFF:
        return FrontHalf(request, scope, early)
    estimate, packs, line = _estimate(scope, config, early, request.home, progress)
    return FrontHalf(request, scope, early, estimate, packs, line)


def early_scan(config: Config, scope: Scope, request: ReviewRequest) -> EarlyScan | None:
    """`--sast`: the pre-scan started now, in a thread (semgrep missing or bad rules fail here,
    before Prefect starts; another semgrep version fails the flow's stage, before any model)."""
    if not config.review.sast:
        return None
    from reviewflow.sast.early import EarlyScan

    return EarlyScan(scope, config.review, request.home, request.no_cache)


def _estimate(
    scope: Scope, config: Config, early: EarlyScan | None, home: str, progress: Progress | None
) -> tuple[dict[str, Any] | None, dict[str, FileContext], str]:
    """The review's expected cost, its line, and the context packs it counted. With `--sast` it
    counts the scan's hints, as the report's does (one function): the early scan is waited for;
    a scan that failed hands no estimate on, and the flow's stage fails the review before any
    request."""
    from reviewflow.cost.review import scope_estimate
    from reviewflow.cost.text import estimate_line
    from reviewflow.review.jobs import snapshot_of
    from reviewflow.review.packs import context_packs

    scan = early.result() if early is not None else None
    packs = context_packs(scope, snapshot_of(scope), config.review, home, progress)
    estimate = scope_estimate(scope, config, scan, home=home, packs=packs)
    handed = None if early is not None and scan is None else estimate
    return handed, packs, estimate_line(estimate)


def cancelled_run(front: FrontHalf, config: Config) -> ReviewRun:
    """A review cancelled before its flow took the cancel (a server's start, Prefect's
    import): no file reviewed, incomplete, exit 130, its reports written here (no Prefect)."""
    from reviewflow.report.assemble import cancelled_before
    from reviewflow.report.outcome import ReviewRun
    from reviewflow.report.writers import write_review_files

    outcome = cancelled_before(front.request, config, front.scope, front.started)
    home = Path(front.request.home)
    final, written, failure, _ = write_review_files(outcome, config.output, home)
    return ReviewRun(outcome=final, written=written, report_error=failure)


def live_progress(
    front: FrontHalf,
    config: Config,
    stream: IO[str],
    env: Mapping[str, str],
    events: bool = False,
) -> ProgressDisplay:
    """The review's live progress on `stream` (sized by its files, each request priced at its
    model's price), and with `events` (`--events`) each change as a progress event line on
    `stream` too."""
    from reviewflow.cost.prices import review_prices
    from reviewflow.report.events import progress_event, write_event
    from reviewflow.report.progress import ProgressDisplay, ProgressState

    def listener(state: ProgressState) -> None:
        write_event(stream, progress_event(state))

    files, price = len(front.scope.selection.kept), review_prices(config)
    return ProgressDisplay(
        stream,
        env,
        files,
        enabled=config.output.progress,
        price=price,
        listener=listener if events else None,
    )


def preview(
    request: ReviewRequest, config: Config, progress: Progress | None = None
) -> tuple[dict[str, Any], str]:
    """`--preview`: diff, filter, rules and the cost estimate only (no provider, no Prefect),
    as its JSON document and its text."""
    from reviewflow.cost.budget import check_budget
    from reviewflow.cost.review import scope_estimate
    from reviewflow.report.preview import preview_document, render_preview
    from reviewflow.select.scope import prepare as prepare_scope

    check_budget(config)  # `--max-cost` without a known price: one line, exit 2
    scope = prepare_scope(request, config.review)  # `--diff -`: reads stdin
    sast = None
    if config.review.sast:
        from reviewflow.sast.scan import prescan

        sast = prescan(scope, config.review, request.home, request.no_cache, verify_version=True)
    estimate = scope_estimate(scope, config, sast, home=request.home, progress=progress)
    doc = preview_document(scope, request, sast, estimate)
    return doc, render_preview(doc)
