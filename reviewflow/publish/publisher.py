"""Publishing one review on its request: read what is there, post what is new, resolve what
this run no longer reports, and write the summary in place. A finding of several passes is
known by its cluster's fingerprints too: its thread is the one any of them was posted under,
and a dismissal of any of them silences it. Every step re-reads first, so a
retry after a partial failure (a rate limit half-way through) never posts anything twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reviewflow.findings.models import Finding
from reviewflow.publish.client import PlatformClient
from reviewflow.publish.comments import new_comment
from reviewflow.publish.summary import render_summary
from reviewflow.pullrequest.context import (
    PullRequestContext,
    ReviewScope,
    dismissal_key,
    dismissed_clusters,
    dismissed_in,
    open_in_threads,
    ours,
    prior_state,
    summary_note,
    thread_index,
)
from reviewflow.pullrequest.markers import RESOLVED
from reviewflow.pullrequest.models import PublishResult, RequestState, Thread
from reviewflow.pullrequest.state import PriorFinding
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.report.wording import counted


def publish(
    client: PlatformClient, context: PullRequestContext, outcome: ReviewOutcome
) -> PublishResult:
    """Publish `outcome` (a finished review of `context`'s request) through `client`."""
    state = client.read()
    dismissed = {**context.dismissed, **dismissed_in(state.threads)}
    aliases = {**context.dismissed_as, **dismissed_clusters(state.threads)}
    open_threads = [t for t in state.threads if ours(t) and not t.resolved]
    outcome = on_threads(outcome, thread_index(open_threads))
    current = [f for f in outcome.findings if not _dismissed(f, dismissed, aliases)]
    posted = {ours(t) for t in open_threads}
    fresh = [f for f in current if f.fingerprint not in posted]
    platform = context.ref.platform
    comments = [new_comment(f, platform, context.renames.get(f.path)) for f in fresh]
    skipped = set(client.post(state.info, comments)) if comments else set()
    reported = {f.fingerprint for f in current}
    gone = [t for t in open_threads if _resolvable(t, context, outcome, reported | set(dismissed))]
    for thread in gone:
        client.resolve(thread, _resolution(context))
    resolved = {ours(t) for t in gone}
    earlier, by_thread = _earlier(state, context)
    open_findings = _open_findings(earlier, context, outcome, current, resolved | set(dismissed))
    activity = _activity(len(fresh) - len(skipped), len(resolved), dismissed, skipped)
    inline_only = _inline_only(open_threads, open_findings, resolved | set(dismissed))
    note = summary_note(state.notes)
    body = render_summary(
        context,
        outcome,
        open_findings,
        activity,
        skipped,
        inline_only,
        untracked=by_thread - reported,
    )
    client.write_note(note, body)
    return PublishResult(
        url=state.info.web_url,
        posted=len(fresh) - len(skipped),
        already_posted=len(current) - len(fresh),
        resolved=len(resolved),
        dismissed=sum(1 for f in outcome.findings if _dismissed(f, dismissed, aliases)),
        not_on_diff=len(skipped),
        open=len(open_findings),
        summary="edited" if note else "created",
        calls=client.calls,
    )


def on_threads(outcome: ReviewOutcome, threads: Mapping[str, str]) -> ReviewOutcome:
    """`outcome` with each finding as the request knows it: one whose cluster already has an
    open thread under another fingerprint (another pass of this review, or of an earlier one,
    placed it otherwise and that member was posted) takes the thread's fingerprint and ID, so
    the thread stays open and nothing is posted again. `threads`: `thread_index`'s."""
    findings = []
    for finding in outcome.findings:
        thread = next((threads[f] for f in finding.fingerprints if f in threads), None)
        if thread is not None and thread != finding.fingerprint:
            cluster = tuple(sorted(set(finding.fingerprints) - {thread}))
            update = {
                "fingerprint": thread,
                "id": f"F{thread[:12]}",
                "cluster_fingerprints": cluster,
            }
            finding = finding.model_copy(update=update)
        findings.append(finding)
    return outcome.model_copy(update={"findings": tuple(findings)})


def _dismissed(finding: Finding, dismissed: Mapping[str, str], aliases: Mapping[str, str]) -> bool:
    return dismissal_key(finding.fingerprints, dismissed, aliases) is not None


def _resolvable(
    thread: Thread, context: PullRequestContext, outcome: ReviewOutcome, keep: set[str]
) -> bool:
    """Whether this run looked at the thread's finding again and no longer reports it."""
    fingerprint = ours(thread)
    return (
        fingerprint is not None
        and fingerprint not in keep
        and _looked_at(fingerprint, thread.path, context, outcome)
    )


def _looked_at(
    fingerprint: str, path: str, context: PullRequestContext, outcome: ReviewOutcome
) -> bool:
    """Whether this run reviewed a finding's code again: its lines were in the reviewed range
    (incremental) or its file was reviewed (whole range), and the review of that file
    finished (a failed model request proves nothing fixed)."""
    if path in outcome.incomplete_files:
        return False
    if context.scope is ReviewScope.INCREMENTAL:
        return fingerprint in context.rereviewed
    return path in {f.path for f in outcome.files}


def _resolution(context: PullRequestContext) -> str:
    return f"{RESOLVED}\nreviewflow no longer reports this at `{context.head[:12]}`: resolved."


def _earlier(
    state: RequestState, context: PullRequestContext
) -> tuple[list[PriorFinding], set[str]]:
    """The earlier open findings this run may keep: those carried forward, the summary's
    state's, and those of open threads the state does not hold (their fingerprints second: a
    person opened them again, or the state's cap left them out; the next state leaves them to
    their threads, whose lines it does not follow)."""
    prior = prior_state(state)
    held = prior.findings if prior else ()
    by_thread = open_in_threads(state.threads, {f.fingerprint for f in held})
    return [*context.carried, *held, *by_thread], {f.fingerprint for f in by_thread}


def _open_findings(
    earlier: Sequence[PriorFinding],
    context: PullRequestContext,
    outcome: ReviewOutcome,
    current: Sequence[Finding],
    closed: set[str | None],
) -> list[PriorFinding]:
    """The request's open findings after this run: this run's, and the `earlier` ones (carried
    forward, the summary's state, the open threads it does not hold) this run did not look at
    again (their threads stay as they are). `closed`: resolved by this run or dismissed."""
    out = {f.fingerprint: PriorFinding.of(f) for f in current}
    for finding in earlier:
        fingerprint = finding.fingerprint
        if fingerprint in out or fingerprint in closed:
            continue
        if _looked_at(fingerprint, finding.path, context, outcome):
            continue  # looked at again and not reported: fixed
        out[fingerprint] = finding
    return list(out.values())


def _inline_only(
    open_threads: Sequence[Thread], open_findings: Sequence[PriorFinding], closed: set[str | None]
) -> int:
    """Open inline threads of findings the summary's state does not hold (beyond its cap in an
    earlier run): they stay open, tracked by their inline comments alone."""
    known = {f.fingerprint for f in open_findings} | closed
    return len({ours(t) for t in open_threads} - known - {None})


def _activity(
    posted: int, resolved: int, dismissed: dict[str, str], skipped: set[str]
) -> list[str]:
    lines = [f"This run: {counted(posted, 'new comment')}, {counted(resolved, 'thread')} resolved."]
    if dismissed:
        lines.append(f"Dismissed on this request (not posted again): {len(dismissed)}.")
    if skipped:
        are = "is" if len(skipped) == 1 else "are"
        outside = f"{counted(len(skipped), 'finding')} {are} outside the request's diff"
        lines.append(f"{outside}: listed here only.")
    return lines
