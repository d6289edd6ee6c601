"""`reviewflow` commands run in this process; every failure is one line and an exit code."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

from flows.cli.commands import cmd_config, cmd_rules_check, cmd_schema, cmd_server, cmd_version
from flows.cli.deployment_run import cmd_deployment_run
from flows.cli.failures import describe_failure, prune_logs, record_traceback, run_log_path
from flows.cli.parser import build_parser, missing_action
from flows.cli.review import cmd_review
from flows.local.api import EarlyStart
from flows.local.warm.child import ForkedReview
from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE
from reviewflow.config import home_dir
from reviewflow.errors import ReviewError, SetupError
from reviewflow.home import secure_home


def main(
    argv: Sequence[str] | None = None,
    forked: ForkedReview | None = None,
    early: EarlyStart | None = None,
) -> int:
    """Run one command; errors become one line on stderr and an exit code (never 1).

    `forked` is set when a warm process's child runs the command (`flows.local.warm.child`),
    `early` when the entry point started the managed server for this review (`begin_server`).
    """
    args = build_parser().parse_args(argv)
    if missing_action(args):  # `reviewflow`, `reviewflow config`: the help, and exit 2
        args.help_parser.print_help()
        return 2
    env = dict(os.environ)
    home = home_dir(env)
    log = run_log_path(home)
    prune_logs(log.parent)
    try:
        for note in secure_home(home):  # a home left readable by others, from before
            sys.stderr.write(f"reviewflow: note: {note}\n")
        return _dispatch(args, env, log, forked, early)
    except ReviewError as exc:
        sys.stderr.write(f"reviewflow: error: {one_line(str(exc))}\n")
        return exc.exit_code
    except KeyboardInterrupt:  # before a review had started (its reports say when it had)
        cancel.announce()
        return EXIT_CODE
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the last resort: exit 2 and one line, never 1
        return unexpected(exc, log, verbose=getattr(args, "verbose", False))


def _dispatch(
    args: argparse.Namespace,
    env: Mapping[str, str],
    log: Path,
    forked: ForkedReview | None,
    early: EarlyStart | None,
) -> int:
    if args.command in ("review", "rules", "context"):
        check_working_directory()
    if args.command == "review":
        return cmd_review(args, env, log, forked, early)
    if args.command == "context":
        from flows.cli.context import cmd_context

        return cmd_context(args, env)
    if args.command == "rules":
        return cmd_rules_check(args, env)
    if args.command == "config":
        return cmd_config(args, env)
    if args.command == "schema":
        return cmd_schema()
    if args.command == "server":
        return cmd_server(args, env)
    if args.command in ("dismiss", "dismissed"):
        from flows.cli.dismiss import cmd_dismiss, cmd_dismissed

        check_working_directory()
        return cmd_dismiss(args, env) if args.command == "dismiss" else cmd_dismissed(args, env)
    if args.command == "mcp":  # the SDK is imported only by this command
        from flows.cli.mcp.server import serve

        check_working_directory()
        return serve(args, env)
    if args.command == "deployment-run":
        return cmd_deployment_run(args)
    return cmd_version()


def check_working_directory() -> None:
    """A review reads paths relative to the working directory: it must still exist."""
    try:
        os.getcwd()
    except OSError as exc:  # deleted (or no longer searchable) under the shell
        raise SetupError(
            f"the current directory cannot be used ({exc.strerror}; deleted?): cd to an "
            "existing directory and run the command again"
        ) from None


def unexpected(exc: Exception, log: Path, *, verbose: bool) -> int:
    """An environment failure or a bug: the traceback to the log (and stderr if verbose);
    a cancel a library wrapped in its own error (see `cancel.caused`) is a cancel."""
    if cancel.caused(exc):
        cancel.announce()
        return EXIT_CODE
    details = record_traceback(exc, log)
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.write(f"reviewflow: error: {describe_failure(exc, os.environ, details)}\n")
    return 2


def one_line(text: str) -> str:
    return " ".join(text.split()) or "unknown error"


if __name__ == "__main__":
    raise SystemExit(main())
