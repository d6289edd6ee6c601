"""`reviewflow review`: a preview, or a review run here or handed to the warm process.

A client of the review: its front half and a cancelled review's end are `reviewflow.entry`'s,
the review is the flow's (`flows.review_flow.run_review`), and this module prints. Prefect is
imported only when a real review starts, with the environment `PrefectEnvironment` gives it,
and the review flow runs on the Prefect API `flows.local.api` finds or starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flows.cli.failures import log_to_file
from flows.cli.indexing import indexing_progress
from flows.local.api import ApiTarget, EarlyStart, ensure_api, run_with_server
from flows.local.process import LOOPBACK
from flows.local.reviews import ReviewRecord, managed_home
from flows.local.settings import PrefectEnvironment
from flows.local.startup import startup_gc
from flows.local.warm.child import ForkedReview
from flows.local.warm.launch import start_warm
from reviewflow import cancel, entry
from reviewflow.cancel import EXIT_CODE
from reviewflow.ci import ci_variables
from reviewflow.config import (
    KEY_ENV_VARS,
    Config,
    TaskRunner,
    home_dir,
    load_config,
    protocol_spec,
    report_off,
)
from reviewflow.errors import OutputError
from reviewflow.fsutil import private_umask, write_output
from reviewflow.publish.platforms import TOKEN_ENV_VARS
from reviewflow.report.wording import counted
from reviewflow.request import ReviewRequest

if TYPE_CHECKING:
    from reviewflow.report.outcome import ReviewRun

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
    "passes": ("review", "passes"),
    "min_agreement": ("review", "min_agreement"),
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
    "server_host": ("prefect", "server_host"),
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
        files=_audited(args),
        audit_all=getattr(args, "audit_all", False),
    )


def _audited(args: argparse.Namespace) -> tuple[str, ...] | None:
    """`--files` as the shell names them (absolute: git's pathspecs are the shell's too)."""
    given = getattr(args, "files", None)
    if given is None:
        return None
    return tuple(os.path.abspath(f) if f.strip() else f for f in given)


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
    """The review itself: its front half prepared (`reviewflow.entry`: bad input fails here with
    one line, before Prefect starts its API), then the flow on the Prefect API it finds (the
    managed server `early` started, if the entry point did), handed that front half."""
    entry.check_review(config, home_dir(env))
    with entry.stdin_saved(request, sys.stdin) as saved:
        shown = indexing_progress(sys.stderr, config.output.progress)
        front = entry.prepare(saved, config, shown)
        if front.line is not None:
            sys.stderr.write(f"reviewflow: {front.line}\n")
        try:  # the review has started: a cancel from here on is reported
            with (
                front,
                # recorded before the server's lock is taken: `server stop` sees it from then on
                ReviewRecord(managed_home(Path(request.home), env), request.repo) as record,
                local_api(args, config, request, env, early) as target,
            ):
                if forked is not None:  # Prefect was imported before this review's environment
                    forked.adopt_settings()
                log_to_file("prefect", log)
                run = run_with_server(target, lambda: _run_here(front, config, env, args.events))
                cancel.finish()  # reported: a signal from now on no longer cancels it
                record.close()  # done with the server: `server stop` no longer waits for it
                try:  # the console report first: what follows may wait, and a cancel's
                    # watchdog would end it unprinted
                    return _print_outcome(run, config, env, args.events)
                finally:  # a warm process for the next review (not after a cancel)
                    if warm_ok and forked is None and target.state and not cancel.requested():
                        start_warm(Path(request.home), os.environ, target.state, WARM_PROGRAM)
        except KeyboardInterrupt:  # before the flow took it (a server's start, Prefect's import)
            return _print_outcome(entry.cancelled_run(front, config), config, env, args.events)
        except Exception as exc:  # a cancel a library wrapped in its own error (cancel.caused)
            if not cancel.caused(exc):
                raise
            return _print_outcome(entry.cancelled_run(front, config), config, env, args.events)


def _run_here(
    front: entry.FrontHalf, config: Config, env: Mapping[str, str], events: bool
) -> ReviewRun:
    """The review flow in this process, with live progress on stderr (and its events with
    `--events`), handed the front half (the flow's module imports Prefect: only now, once
    `local_api` set its environment)."""
    from flows.review_flow import heartbeat_off, run_review

    display = entry.live_progress(front, config, sys.stderr, env, events)
    with display as progress, heartbeat_off():
        return run_review(front.request, config, progress=progress, front=front)


def _print_outcome(
    run: ReviewRun, config: Config, env: Mapping[str, str], events: bool = False
) -> int:
    """The console report (on stderr when a report file goes to stdout), then the exit code
    (the console's module imports rich: only once a review has run); with `--events` the
    written event first."""
    from reviewflow.report.console import make_console, print_console
    from reviewflow.report.gate import incomplete_line

    if events:
        from reviewflow.report.events import write_event, written_event

        write_event(sys.stderr, written_event(run.exit_code, run.written))
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
        or config.prefect.server_host is not None  # the warm process serves the loopback one
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
        host=config.prefect.server_host or LOOPBACK,
        preload=preload,
        early=early,
    )


def run_preview(request: ReviewRequest, config: Config, json_path: str | None) -> int:
    """Diff, filter, rules and the cost estimate only: no provider, no Prefect."""
    shown = indexing_progress(sys.stderr, config.output.progress)
    doc, text = entry.preview(request, config, shown)
    if json_path and not report_off(json_path):
        write_output(json_path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    (sys.stderr if json_path == "-" else sys.stdout).write(text)  # stdout: the JSON
    return 0
