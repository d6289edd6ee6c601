"""Stage 7b, silence: suppression comments, dismissals and silencing rules, after finalize
(before --verify)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import ReviewSettings
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import FileFindings
from reviewflow.findings.silence import read_suppressions, silence, silenced_by_rule
from reviewflow.request import ReviewRequest
from reviewflow.review.reader import Snapshot
from reviewflow.rules.dismissals import Dismissed, load_dismissed
from reviewflow.rules.silencing import counted_usage, read_usage, silence_rules, write_usage
from reviewflow.select.scope import Scope


@task(name="load_dismissed", cache_policy=NO_CACHE, retries=0)  # a file or two: no cache
def load_dismissals(request: ReviewRequest, scope: Scope) -> tuple[Dismissed, ReviewRequest]:
    """The dismissed fingerprints: the repository's file (at the trusted ref when there is one)
    and the home's list for this repository. Read before any model request: a bad file fails
    the review at once. With them, the request whose pull request counts them as dismissed
    (a finding carried from an earlier run and dismissed in the file is not reported again).
    The rule layers' silencing rules travel with them (read where the rules were: in CI, at
    the trusted ref)."""
    root, trusted = scope.change.repo_root, scope.trusted_ref
    dismissed = load_dismissed(root, trusted, Path(request.home), silence_rules(scope.rules))
    if request.pull_request is not None:
        context = request.pull_request.with_dismissed(dismissed.reasons())
        request = request.model_copy(update={"pull_request": context})
    return dismissed, request


@task(name="silence", cache_policy=NO_CACHE, retries=0)  # deterministic and cheap: no cache
def silence_findings(
    finalized: Finalized,
    files: list[FileFindings],
    snapshot: Snapshot,
    dismissed: Dismissed,
    settings: ReviewSettings,
    ci: bool,
    audit: bool = False,
) -> Finalized:
    """`finalized` with suppressed and dismissed findings dropped (`files` give each file's
    added lines, to tell suppressions the change adds; whether one the change adds silences is
    the settings', by default not in CI: `ci`). An `audit` adds no line: its files' comments
    are the code's own, and silence as a comment the change did not add does. The silencing
    rules' use is counted in the home (an expired rule that never silenced anything is then
    named as unused)."""
    honour_new = settings.honours_new_suppressions(ci=ci)
    added = {} if audit else {f.path: f.changed_lines for f in files if f.path is not None}
    paths = [finding.path for finding in finalized.findings]
    found, warnings = read_suppressions(snapshot, added, paths)
    if not dismissed.rules:
        return silence(finalized, found, dismissed, honour_new, warnings)
    today = datetime.now(UTC).date()
    home = Path(dismissed.home)
    usage = read_usage(home, dismissed.repository)
    out = silence(finalized, found, dismissed, honour_new, warnings, today=today, usage=usage)
    counts = silenced_by_rule(out.dropped)
    after = counted_usage(dismissed.rules, usage, counts, today)
    problem = write_usage(home, dismissed.repository, after)
    if problem is None:
        return out
    return out.model_copy(update={"warnings": (*out.warnings, problem)})
