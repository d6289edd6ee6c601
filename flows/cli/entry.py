"""The `reviewflow` console script (and `python -m flows.cli`, `python -m flows.review`).

A review that a warm process may take is handed over before the CLI's own imports (pydantic
and the config schema, ~0.3 s); the child then decides everything else as the CLI would
(`prefect.server_reuse` included). Anything else, or a review no warm process takes, runs
`flows.cli.main.main` here; a review that will need the managed server and finds none serving
starts it first (`begin_server`), so it boots while the CLI imports and reads the change.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from flows.local.api import EarlyStart, begin_server, stopped_if_forced
from flows.local.warm.client import hand_over
from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE
from reviewflow.ci import ci_variables
from reviewflow.home import home_dir

# A review with one of these never goes to the warm process.
_NOT_HANDED_OVER = {
    "--preview", "--no-server-reuse", "--no-warm", "--server-host", "-h", "--help",
}  # fmt: skip
_NO_SERVER = {"--preview", "--server-host", "-h", "--help"}  # nor do these start one early


def entry(argv: Sequence[str] | None = None) -> int:
    """Run the `reviewflow` command `argv` (default: this process's arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if may_hand_over(args, os.environ):
        try:
            code = hand_over(home_dir(os.environ), args)
        except KeyboardInterrupt:  # before the hand-over's own handlers were in place
            cancel.announce()
            return EXIT_CODE
        if code is not None:
            return code
    early: EarlyStart | None = None
    if needs_server(args, os.environ):
        early = begin_server(home_dir(os.environ), os.environ)
    keep = not (ci_variables(os.environ, plugins=False) or "--no-server-reuse" in args)
    if early is not None and not keep:  # a CI run's server must not outlive it, even unused
        stopped_if_forced(early.booting.state)
    try:
        from flows.cli.main import main

        return main(args, early=early)
    finally:
        if early is not None:
            early.abandon(keep=keep)


def needs_server(args: Sequence[str], env: Mapping[str, str]) -> bool:
    """A review through the managed server (not the user's `PREFECT_API_URL`), as far as argv
    and env tell."""
    named = _flags(args)
    return args[:1] == ["review"] and not _NO_SERVER & named and not env.get("PREFECT_API_URL")


def may_hand_over(args: Sequence[str], env: Mapping[str, str]) -> bool:
    """A review through the managed server in reuse mode, as far as argv and env tell."""
    return (
        args[:1] == ["review"]
        and not _NOT_HANDED_OVER & _flags(args)
        and not env.get("PREFECT_API_URL")
        and not ci_variables(env, plugins=False)  # the review's own trust check reads plugins'
    )


def _flags(args: Sequence[str]) -> set[str]:
    """The options `args` names (`--flag=value` as `--flag`)."""
    return {arg.partition("=")[0] for arg in args}
