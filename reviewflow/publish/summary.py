"""The request's summary comment: the gate's verdict, the request's open findings (this run's
and those carried from earlier runs), what was reviewed and left out, usage, and the hidden
state the next run starts from."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from reviewflow import __version__
from reviewflow.findings.models import Finding
from reviewflow.prompts import render
from reviewflow.publish.platforms import spec_of
from reviewflow.publish.safe import safe_inline
from reviewflow.pullrequest.context import PullRequestContext, ReviewScope
from reviewflow.pullrequest.markers import summary_marker
from reviewflow.pullrequest.state import MAX_REMEMBERED, PriorFinding, SummaryState
from reviewflow.report.outcome import (
    SEVERITY_ORDER,
    ReviewOutcome,
    files_finished,
    incomplete_reasons,
)

TEMPLATES = Path(__file__).parent / "templates"
MAX_ROWS = 50
MAX_EXCLUDED = 50


def next_state(
    context: PullRequestContext,
    outcome: ReviewOutcome,
    open_findings: Sequence[PriorFinding],
    untracked: Collection[str] = (),
) -> SummaryState:
    """What the next run starts from: the head reviewed when this review was complete (else
    the last complete one's, so the next run reviews again what this one missed), and the
    open findings whose lines it follows (at most `MAX_REMEMBERED`; the others, and the
    `untracked` ones known by their threads alone, the next run reads from their threads)."""
    complete = outcome.status == "complete"
    head = context.head if complete else (context.previous_head or "")
    kept = [f for f in open_findings if f.fingerprint not in untracked]
    return SummaryState(base=context.base, head=head, findings=tuple(kept[:MAX_REMEMBERED]))


def verdict(outcome: ReviewOutcome) -> str:
    if outcome.exit_code == 0:
        return "gate passed"
    if outcome.exit_code == 1:
        return "gate failed"
    return "review incomplete (the gate does not pass)"


def _counts(findings: Sequence[PriorFinding]) -> str:
    by = {s: sum(1 for f in findings if f.severity is s) for s in SEVERITY_ORDER}
    return " · ".join(f"{s.value} {by[s]}" for s in SEVERITY_ORDER)


def _scope(context: PullRequestContext) -> str:
    if context.scope is ReviewScope.INCREMENTAL and context.previous_head:
        if context.previous_head == context.head:
            return "no new commits since the last review"
        return f"changes since `{context.previous_head[:12]}`"
    if context.scope is ReviewScope.FLAGS:
        return "the range given on the command line"
    return f"the whole {_noun(context)} since `{context.base[:12]}`"


def _noun(context: PullRequestContext) -> str:
    return spec_of(context.ref.platform).noun


def _rows(
    findings: Sequence[PriorFinding], current: set[str], unplaced: set[str]
) -> list[dict[str, str]]:
    rank = {severity: i for i, severity in enumerate(SEVERITY_ORDER)}
    ordered = sorted(findings, key=lambda f: (rank[f.severity], f.path, f.start_line))
    rows = []
    for f in ordered[:MAX_ROWS]:
        lines = f"{f.start_line}" if f.start_line == f.end_line else f"{f.start_line}-{f.end_line}"
        note = "" if f.fingerprint in current else " (from an earlier review)"
        if f.fingerprint in unplaced:
            note += " (not on the diff: no line comment)"
        rows.append(
            {
                "severity": f.severity.value,
                "location": safe_inline(f"{f.path}:{lines}"),
                "title": safe_inline(f.title),
                "note": note,
            }
        )
    return rows


def render_summary(
    context: PullRequestContext,
    outcome: ReviewOutcome,
    open_findings: Sequence[PriorFinding],
    activity: Sequence[str],
    unplaced: set[str],
    inline_only: int = 0,
    *,
    untracked: Collection[str] = (),
) -> str:
    """The summary's Markdown, its state marker first. `inline_only`: open findings known only
    by their inline threads that do not describe them (posted by an earlier version);
    `untracked`: open findings read from their threads, left out of the state."""
    current = {f.fingerprint for f in outcome.findings}
    state = next_state(context, outcome, open_findings, untracked)
    usage = outcome.usage
    excluded = [safe_inline(f"{e.path}: {e.reason}") for e in outcome.excluded[:MAX_EXCLUDED]]
    if len(outcome.excluded) > MAX_EXCLUDED:
        excluded.append(f"… and {len(outcome.excluded) - MAX_EXCLUDED} more (see the JSON report)")
    return render(
        TEMPLATES,
        "summary.md.j2",
        marker=summary_marker(state),
        verdict=verdict(outcome),
        noun=_noun(context),
        open_findings=open_findings,
        counts=_counts(open_findings),
        rows=_rows(open_findings, current, unplaced),
        more=max(0, len(open_findings) - MAX_ROWS),
        activity=activity,
        capped=_capped(len(state.findings), len(open_findings) + inline_only),
        head=context.head[:12],
        scope=_scope(context),
        files_reviewed=files_finished(outcome),
        incomplete=len(outcome.incomplete_files),
        not_reviewed=[
            f"{safe_inline(item['path'])} ({item['reason']})"
            for item in incomplete_reasons(outcome)[:MAX_EXCLUDED]
        ],
        not_reviewed_more=max(0, len(outcome.incomplete_files) - MAX_EXCLUDED),
        excluded=excluded,
        usage=(
            f"{usage.requests} model requests, {usage.prompt_tokens} prompt and "
            f"{usage.completion_tokens} completion tokens, {outcome.duration_ms / 1000:.1f} s"
        ),
        run_url=context.run_url,
        version=__version__,
    )


def _capped(kept: int, total: int) -> str:
    """The visible line saying the hidden state follows only `kept` of the `total` open
    findings (at most `MAX_REMEMBERED`): the next run reads the others from their threads."""
    if total <= MAX_REMEMBERED:
        return ""
    return (
        f"Showing state for {kept} of {total} open findings; the rest are tracked by their"
        " inline comments (dismiss or resolve them there)."
    )


def as_prior(findings: Sequence[Finding]) -> list[PriorFinding]:
    return [PriorFinding.of(f) for f in findings]
