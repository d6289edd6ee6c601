"""Publishing set up for one review, before it starts: the request found, the token checked
by reading the request (exit 2 before any model request when either fails), the review's
range chosen, and the token held for the review's publishing task (`tokens.holding`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import SecretStr

from reviewflow.config import Config
from reviewflow.errors import ConfigError, TokenRefused
from reviewflow.git.models import DiffMode
from reviewflow.git.repo import find_repo_root
from reviewflow.publish.preflight import prepare
from reviewflow.publish.summary import render_summary
from reviewflow.publish.target import platform_of, request_ref, token_from_env, token_source
from reviewflow.publish.tokens import client_for, holding
from reviewflow.pullrequest.context import PullRequestContext
from reviewflow.pullrequest.state import PriorFinding
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.request import ReviewRequest


@contextlib.contextmanager
def publishing(
    config: Config,
    env: Mapping[str, str],
    request: ReviewRequest,
    *,
    token: SecretStr | None = None,
    run_url: str | None = None,
) -> Iterator[ReviewRequest]:
    """`request` as it publishes to its pull/merge request (unchanged when not publishing);
    the token (`token`, else the platform's environment variable) is held inside only."""
    if request.mode is DiffMode.STDIN and platform_of(config.publish, env) is not None:
        raise ConfigError("--publish reviews the request's commits: it cannot review a --diff")
    if request.mode is DiffMode.AUDIT and platform_of(config.publish, env) is not None:
        raise ConfigError("--publish reviews the request's commits: it cannot publish an audit")
    found = request_ref(config.publish, env)
    if found is None:
        yield request
        return
    ref, shas = found
    secret = token or token_from_env(ref.platform, env)
    client = client_for(ref, secret)
    root = find_repo_root(Path(request.repo))
    flags_range = request.mode is not DiffMode.WORKSPACE
    try:
        context = prepare(ref, shas, client, root, flags_range=flags_range, run_url=run_url)
    except TokenRefused as err:
        block = config.publish.token_block if token is not None else None
        source = token_source(ref.platform, env, block)
        raise TokenRefused(f"{err} (the token {source})") from None
    with holding(ref, secret):
        yield request.for_pull_request(context)


def fallback_summary(context: PullRequestContext, outcome: ReviewOutcome, reason: str) -> str:
    """The summary for `$GITHUB_STEP_SUMMARY` when it could not be posted."""
    reported = {key for f in outcome.findings for key in f.fingerprints}
    carried = [f for f in context.carried if reported.isdisjoint(f.fingerprints)]
    open_findings = [*(PriorFinding.of(f) for f in outcome.findings), *carried]
    return render_summary(context, outcome, open_findings, [f"Not posted: {reason}"], set())
