"""`reviewflow review`: a preview, or a review run here or handed to the warm process.

Prefect is imported only when a real review starts, with the environment `PrefectEnvironment`
gives it, and the review flow runs on the Prefect API `flows.local.api` finds or starts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flows.cli.failures import log_to_file
from flows.local.api import ApiTarget, EarlyStart, ensure_api, run_with_server
from flows.local.reviews import ReviewRecord, managed_home
from flows.local.settings import PrefectEnvironment
from flows.local.startup import startup_gc
from flows.local.warm.child import ForkedReview
from flows.local.warm.launch import start_warm
from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE
from reviewflow.config import (
    KEY_ENV_VARS,
    Config,
    ConsoleMode,
    OutputSettings,
    TaskRunner,
    home_dir,
    load_config,
    protocol_spec,
    report_off,
)
from reviewflow.errors import ConfigError, OutputError
from reviewflow.fsutil import check_output, private_umask, write_output
from reviewflow.git.repo import read_stdin
from reviewflow.publish.platforms import TOKEN_ENV_VARS
from reviewflow.report.wording import counted
from reviewflow.request import ReviewRequest

if TYPE_CHECKING:
    from reviewflow.report.outcome import ReviewRun
    from reviewflow.review.packs import FileContext
    from reviewflow.sast.early import EarlyScan
    from reviewflow.select.scope import Scope

WARM_PROGRAM = "flows.cli.warm"  # the warm process's program (`start_warm`)

_FLAG_KEYS: dict[str, tuple[str, str]] = {
    "concurrency": ("review", "concurrency"),
    "context_lines": ("review", "context_lines"),
    "max_tool_rounds": ("review", "max_tool_rounds"),
    "max_context_tool_calls": ("review", "max_context_tool_calls"),
    "max_chunk_tokens": ("review", "max_chunk_tokens"),
    "confidence_threshold": ("review", "confidence_threshold"),
    "max_file_bytes": ("review", "max_file_bytes"),
    "fail_on": ("review", "fail_on"),
    "max_tokens": ("review", "max_tokens"),
    "max_cost": ("review", "max_cost"),
    "task_runner": ("review", "task_runner"),
    "dask_address": ("review", "dask_address"),
    "shared_store": ("review", "shared_store"),
    "context": ("review", "context"),
    "sast": ("review", "sast"),
    "sast_rules": ("review", "sast_rules"),
    "verify": ("review", "verify"),
    "verify_model": ("review", "verify_model"),
    "protocol": ("model", "protocol"),
    "model_name": ("model", "name"),
    "endpoint": ("model", "endpoint"),
    "timeout": ("model", "timeout"),
    "json_path": ("output", "json"),
    "markdown": ("output", "markdown"),
    "sarif": ("output", "sarif"),
    "gitlab": ("output", "gitlab"),
    "console": ("output", "console"),
    "language": ("output", "language"),
    "report_dir": ("output", "report_dir"),
    "publish": ("publish", "target"),
    "pull_request": ("publish", "pull_request"),
    "platform_repo": ("publish", "repo"),
    "api_url": ("publish", "api_url"),
}


def flag_overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Config overrides from review flags, in the config file's shape."""
    out: dict[str, dict[str, Any]] = {}
    for attr, (section, key) in _FLAG_KEYS.items():
        value = getattr(args, attr, None)
        if value is not None:
            out.setdefault(section, {})[key] = value
    if getattr(args, "no_progress", False):
        out.setdefault("output", {})["progress"] = False
    if getattr(args, "instructions", None):  # as the shell sees it (the config's: the repo's)
        out.setdefault("review", {})["instructions"] = str(Path(args.instructions).absolute())
    if getattr(args, "dask_address", None) and getattr(args, "task_runner", None) is None:
        out["review"]["task_runner"] = "dask"  # naming a scheduler asks for Dask
    if getattr(args, "verify_model", None) and getattr(args, "verify", None) is None:
        out["review"]["verify"] = True  # naming the verifier asks for verification
    return out


def request_from_args(args: argparse.Namespace, env: Mapping[str, str]) -> ReviewRequest:
    from reviewflow.ci import ci_variables

    return ReviewRequest.from_flags(
        str(Path(args.repo).resolve()),
        commit=args.commit,
        from_ref=args.from_ref,
        to_ref=args.to_ref,
        diff_source=args.diff_source,
        custom_rule=str(Path(args.custom_rule).resolve()) if args.custom_rule else None,
        trusted_ref=args.trusted_ref,
        no_cache=args.no_cache,
        home=str(home_dir(env)),
        ci_variables=ci_variables(env),
    )


def cmd_review(
    args: argparse.Namespace,
    env: Mapping[str, str],
    log: Path,
    forked: ForkedReview | None,
    early: EarlyStart | None = None,
) -> int:
    """A review: a preview, handed to the warm process, or run here (on the server `early`
    started, if the entry point did)."""
    request = request_from_args(args, env)
    config = load_config(home_dir(env), env, flag_overrides(args))
    from reviewflow.publish.setup import publishing

    with publishing(config, env, request) as request:  # the request read before any model
        if args.preview:  # a pull request's range, as its review would see it
            return run_preview(request, config, args.json_path)
        warm_ok = uses_warm(args, config, request, env)  # `entry` handed over what it could
        if forked is not None and not warm_ok:
            forked.decline()  # the config turns it off: the CLI runs this review, it stops
        with private_umask():  # the server, its database, cached answers, logs: the user's
            return _review(
                args, env, log, request, config, forked=forked, early=early, warm_ok=warm_ok
            )


def _review(
    args: argparse.Namespace,
    env: Mapping[str, str],
    log: Path,
    request: ReviewRequest,
    config: Config,
    *,
    forked: ForkedReview | None,
    early: EarlyStart | None,
    warm_ok: bool,
) -> int:
    """The review itself: its inputs checked, then the flow on the Prefect API it finds (the
    managed server `early` started, if the entry point did)."""
    from reviewflow.config.placement import check_placement
    from reviewflow.cost.budget import check_budget
    from reviewflow.providers.factory import check_settings
    from reviewflow.select.scope import prepare

    check_settings(config.model)  # a placeholder model or a missing key fails before Prefect
    check_budget(config)  # `--max-cost` without a known price, a budget on Dask
    check_outputs(config.output, home_dir(env))
    with stdin_saved(request) as effective:
        # Bad input (repository, refs, diff, rules, trust) fails here with one line, before
        # Prefect starts its API; the flow is handed this front half and does not repeat it.
        scope = prepare(effective, config.review)
        check_placement(config.review, scope.change.repo_root)  # Dask's scheduler, the store
        sast_scan = early_scan(config, scope, effective)  # runs while the review starts
        if sast_scan is not None:
            effective = effective.model_copy(update={"sast_prescanned": True})
        estimate, packs = print_estimate(scope, config, sast_scan, effective.home)
        started = datetime.now(UTC)  # the review has started: a cancel from here on is reported
        try:
            with (
                sast_scan or nullcontext(),
                # recorded before the server's lock is taken: `server stop` sees it from then on
                ReviewRecord(managed_home(Path(request.home), env), request.repo) as record,
                local_api(args, config, request, env, early) as target,
            ):
                if forked is not None:  # Prefect was imported before this review's environment
                    forked.adopt_settings()
                log_to_file("prefect", log)
                run = run_with_server(
                    target, lambda: _run_here(effective, config, scope, env, (estimate, packs))
                )
                cancel.finish()  # reported: a signal from now on no longer cancels it
                record.close()  # done with the server: `server stop` no longer waits for it
                try:  # the console report first: what follows may wait, and a cancel's
                    return _print_outcome(run, config, env)  # watchdog would end it unprinted
                finally:  # a warm process for the next review (not after a cancel)
                    if warm_ok and forked is None and target.state and not cancel.requested():
                        start_warm(Path(request.home), os.environ, target.state, WARM_PROGRAM)
        except KeyboardInterrupt:  # before the flow took it (a server's start, Prefect's import)
            return _print_outcome(cancelled_run(effective, config, scope, started), config, env)
        except Exception as exc:  # a cancel a library wrapped in its own error (cancel.caused)
            if not cancel.caused(exc):
                raise
            return _print_outcome(cancelled_run(effective, config, scope, started), config, env)


def early_scan(config: Config, scope: Scope, request: ReviewRequest) -> EarlyScan | None:
    """`--sast`: the pre-scan started now, in a thread (semgrep missing or bad rules fail here,
    before Prefect starts; another semgrep version fails the flow's stage, before any model)."""
    if not config.review.sast:
        return None
    from reviewflow.sast.early import EarlyScan

    return EarlyScan(scope, config.review, request.home, request.no_cache)


def print_estimate(
    scope: Scope, config: Config, sast_scan: EarlyScan | None, home: str
) -> tuple[dict[str, Any] | None, dict[str, FileContext] | None]:
    """The review's expected cost, one line on stderr, before its first request; not with
    `--console off`, which keeps stderr to the one line of an exit 2. The estimate and the
    context packs it counted, for the flow (None: the flow makes them). With `--sast` it counts
    the scan's hints, as the report's does (one function): the early scan is waited for; a scan
    that failed gives no estimate, and the flow's stage fails the review before any request."""
    if config.output.console is ConsoleMode.OFF:
        return None, None
    from flows.cli.indexing import indexing_progress
    from reviewflow.cost.review import scope_estimate
    from reviewflow.cost.text import estimate_line
    from reviewflow.review.jobs import snapshot_of
    from reviewflow.review.packs import context_packs

    scan = sast_scan.result() if sast_scan is not None else None
    shown = indexing_progress(sys.stderr, config.output.progress)
    packs = context_packs(scope, snapshot_of(scope), config.review, home, shown)
    estimate = scope_estimate(scope, config, scan, home=home, packs=packs)
    sys.stderr.write(f"reviewflow: {estimate_line(estimate)}\n")
    return (None if sast_scan is not None and scan is None else estimate), packs


def cancelled_run(
    request: ReviewRequest, config: Config, scope: Scope, started: datetime
) -> ReviewRun:
    """A review cancelled before its model stages ran: its reports, written here (no Prefect)."""
    from reviewflow.report.assemble import cancelled_before
    from reviewflow.report.outcome import ReviewRun
    from reviewflow.report.writers import write_review_files

    outcome = cancelled_before(request, config, scope, started)
    final, written, failure, _ = write_review_files(outcome, config.output, Path(request.home))
    return ReviewRun(outcome=final, written=written, report_error=failure)


def _run_here(
    request: ReviewRequest,
    config: Config,
    scope: Scope,
    env: Mapping[str, str],
    estimated: tuple[dict[str, Any] | None, dict[str, FileContext] | None],
) -> ReviewRun:
    """The review flow in this process, with live progress on stderr (sized by `scope`), handed
    the estimate and the context packs the CLI made for it."""
    from flows.review_flow import heartbeat_off, run_review
    from reviewflow.cost.prices import price_of
    from reviewflow.report.progress import ProgressDisplay

    files, price = len(scope.selection.kept), price_of(config.model)
    display = ProgressDisplay(sys.stderr, env, files, enabled=config.output.progress, price=price)
    with display as progress, heartbeat_off():
        estimate, packs = estimated
        return run_review(
            request, config, progress=progress, estimate=estimate, scope=scope, packs=packs
        )


def _print_outcome(run: ReviewRun, config: Config, env: Mapping[str, str]) -> int:
    """The console report (on stderr when a report file goes to stdout), then the exit code."""
    from reviewflow.report.console import make_console, print_console
    from reviewflow.report.gate import incomplete_line

    stream = sys.stderr if config.output.to_stdout else sys.stdout  # stdout: that report alone
    print_console(run.outcome, config.output.console, make_console(stream, env), run.written)
    if run.report_error:
        raise OutputError(run.report_error)
    published_line(run, env)
    where = run.written.get("json")
    report = f" (report: {where})" if where and where != "-" else ""
    if run.outcome.exit_code == 2:  # one line whatever the console setting (`--console off`)
        sys.stderr.write(f"reviewflow: {incomplete_line(run.outcome)}{report}\n")
    elif run.outcome.exit_code == EXIT_CODE:
        cancel.announce(report)
    return run.exit_code


def published_line(run: ReviewRun, env: Mapping[str, str]) -> None:
    """One stderr line on what publishing did, or the warning that it failed (the exit code
    stays the review's; the summary then goes to `$GITHUB_STEP_SUMMARY` when there is one)."""
    done = run.published
    if done is not None:
        sys.stderr.write(
            f"reviewflow: published on {done.url}: {counted(done.posted, 'new comment')}, "
            f"{done.resolved} resolved, {done.open} open on the request, summary {done.summary}\n"
        )
    if run.publish_error is None:
        return
    sys.stderr.write(f"reviewflow: warning: {run.publish_error}\n")
    step_summary = env.get("GITHUB_STEP_SUMMARY")
    if step_summary and run.publish_summary:
        write_output(step_summary, run.publish_summary, append=True)


def uses_warm(
    args: argparse.Namespace, config: Config, request: ReviewRequest, env: Mapping[str, str]
) -> bool:
    """True when this review may use a warm process: the managed server in reuse mode, and
    neither `--no-warm` nor `prefect.warm_process: false`."""
    return not (
        env.get("PREFECT_API_URL")
        or request.ci_variables
        or request.pull_request  # its token stays in this process
        or args.no_server_reuse
        or args.no_warm
        or not config.prefect.server_reuse
        or not config.prefect.warm_process
    )


def local_api(
    args: argparse.Namespace,
    config: Config,
    request: ReviewRequest,
    env: Mapping[str, str],
    early: EarlyStart | None = None,
) -> ApiTarget:
    """The Prefect API this review talks to: `PREFECT_API_URL` when set, else the managed local
    server (started if needed; importing Prefect overlaps its boot)."""

    def preload(api: Mapping[str, str]) -> None:
        verbose = args.verbose
        removed = (*KEY_ENV_VARS, *protocol_spec(config.model.protocol).key_env)
        environment = PrefectEnvironment.for_run(
            verbose=verbose, api=api, removed=(*removed, *TOKEN_ENV_VARS)
        )
        environment.apply(os.environ)  # before Prefect is imported: it reads them at import
        with startup_gc():
            from flows.local.warm.prep import prepare_run, root_heartbeat_off  # imports Prefect

            threaded = config.review.task_runner is TaskRunner.THREAD
            prepare_run(config.review.concurrency if threaded else None, [config.model.protocol])
            root_heartbeat_off()

    return ensure_api(
        Path(request.home),
        env,
        ci=bool(request.ci_variables),
        reuse=config.prefect.server_reuse and not args.no_server_reuse,
        idle_minutes=config.prefect.server_idle_minutes,
        preload=preload,
        early=early,
    )


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
def stdin_saved(request: ReviewRequest) -> Iterator[ReviewRequest]:
    """A diff on stdin, saved to a private temporary file that the flow's tasks can read."""
    if request.diff_source != "-":
        yield request
        return
    data = read_stdin(sys.stdin)  # one line and exit 2 when stdin is closed or unreadable
    with tempfile.TemporaryDirectory(prefix="reviewflow-diff-") as tmpdir:
        path = Path(tmpdir) / "stdin.diff"
        path.write_bytes(data)
        yield request.model_copy(update={"stdin_copy": str(path)})


def run_preview(
    request: ReviewRequest,
    config: Config,
    json_path: str | None,
) -> int:
    """Diff, filter, rules and the cost estimate only: no provider, no Prefect."""
    from flows.cli.indexing import indexing_progress
    from reviewflow.cost.budget import check_budget
    from reviewflow.cost.review import scope_estimate
    from reviewflow.report.preview import preview_document, render_preview
    from reviewflow.select.scope import prepare

    check_budget(config)  # `--max-cost` without a known price: one line, exit 2

    scope = prepare(request, config.review)  # `--diff -`: reads stdin
    sast = None
    if config.review.sast:
        from reviewflow.sast.scan import prescan

        sast = prescan(scope, config.review, request.home, request.no_cache, verify_version=True)
    shown = indexing_progress(sys.stderr, config.output.progress)
    estimate = scope_estimate(scope, config, sast, home=request.home, progress=shown)
    doc = preview_document(scope, request, sast, estimate)
    if json_path and not report_off(json_path):
        write_output(json_path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    (sys.stderr if json_path == "-" else sys.stdout).write(render_preview(doc))  # stdout: JSON
    return 0
