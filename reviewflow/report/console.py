"""The console report (stdout): `detailed`, `summary` or `off`, rendered with rich.

Colour only on a terminal and never with NO_COLOR set; every name and text from the change or
the model is escaped (`for_terminal`) and printed as plain rich `Text`, so it can neither move
the cursor, fake lines, nor inject rich markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO

from rich.console import Console
from rich.text import Text

from reviewflow.config import ConsoleMode
from reviewflow.findings.models import Finding
from reviewflow.findings.silence import silenced_line
from reviewflow.models import ReviewWarning, Severity
from reviewflow.providers.budget import money, short_count
from reviewflow.report.outcome import (
    SEVERITY_ORDER,
    ReviewOutcome,
    carried_line,
    files_finished,
    finding_location,
    incomplete_reasons,
    severity_summary,
)
from reviewflow.report.textsafe import for_terminal
from reviewflow.report.wording import change_words, counted

STYLES = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
}
STATUS_STYLES = {0: "bold green", 1: "bold red"}


def make_console(stream: IO[str], env: Mapping[str, str]) -> Console:
    """A rich console on `stream`: colour only when it is a terminal and NO_COLOR is unset."""
    return Console(
        file=stream,
        _environ=dict(env),
        no_color=bool(env.get("NO_COLOR")) or None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )


def _line(*parts: str | tuple[str, str]) -> Text:
    """Text from plain parts and (text, style) pairs; every text part is escaped."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(for_terminal(part[0]), style=part[1])
        else:
            text.append(for_terminal(part))
    return text


def _header(outcome: ReviewOutcome) -> list[Text]:
    meta = outcome.metadata
    status = f"{outcome.status}, exit code {outcome.exit_code}"
    shas = " -> ".join(sha[:12] for sha in (meta.base_sha, meta.head_sha) if sha)
    counts = outcome.severity_counts()
    summary = ", ".join(f"{counts[s.value]} {s.value}" for s in SEVERITY_ORDER)
    silenced = silenced_line(outcome.dropped, outcome.warnings)
    return [
        _line(("Review ", "bold"), outcome.review_id, ": ", (status, _status_style(outcome))),
        _line(f"  {change_words(meta.mode)} {meta.repository}", f" ({shas})" if shas else ""),
        _line(
            f"  {files_finished(outcome)} of {counted(outcome.files_changed, 'file')} reviewed"
            f"{_incomplete(outcome)}, "
            f"{counted(len(outcome.findings), 'finding')} ({summary}), "
            f"{len(outcome.dropped)} dropped"
        ),
        *([_line(f"  silenced: {silenced}")] if silenced else []),
        *_carried_lines(outcome),
    ]


def _carried_lines(outcome: ReviewOutcome) -> list[Text]:
    """The request's findings still open from its earlier review (the gate counts them)."""
    line = carried_line(outcome)
    if line is None or outcome.pull_request is None:
        return []
    lines = [_line(f"  {line}:")]
    for item in outcome.pull_request.carried:
        label = f"[{item.severity.value.upper()}]"
        where = finding_location(item)
        lines.append(
            _line(
                "  ",
                (label, STYLES[item.severity]),
                " ",
                (where, "bold"),
                f"  {item.title}  (carried)",
            )
        )
    return lines


def _incomplete(outcome: ReviewOutcome) -> str:
    """` (2 incomplete: budget, cancelled)`, or "" when every file finished."""
    reasons = sorted({item["reason"] for item in incomplete_reasons(outcome)})
    count = len(outcome.incomplete_files)
    return f" ({count} incomplete: {', '.join(reasons)})" if count else ""


def _status_style(outcome: ReviewOutcome) -> str:
    if outcome.status == "incomplete":
        return "bold magenta"
    return STATUS_STYLES.get(outcome.exit_code, "bold red")


def _file_lines(path: str, findings: list[Finding], detailed: bool) -> list[Text]:
    """A file's heading (its path and counts), then one line per finding under it."""
    summary = f"{counted(len(findings), 'finding')}: {severity_summary(findings)}"
    lines = [_line("  ", (path, "bold"), f"  ({summary})")]
    for finding in findings:
        lines += _finding_lines(finding, detailed)
    return lines


def _finding_lines(finding: Finding, detailed: bool) -> list[Text]:
    label = f"[{finding.severity.value.upper()}]"
    start, end = finding.start_line, finding.end_line
    where = f"line {start}" if start == end else f"lines {start}-{end}"
    lines = [
        _line(
            "    ",
            (label, STYLES[finding.severity]),
            f" {where}  {finding.title}  ({finding.category.value}",
            f", rule {finding.rule_id})" if finding.rule_id else ")",
        )
    ]
    if detailed:
        for name, value in (
            ("problem", finding.problem),
            ("evidence", finding.evidence),
            ("suggestion", finding.suggestion),
        ):
            if value:
                lines.append(_line(f"        {name}: ", value))
    return lines


def _problem_lines(title: str, items: tuple[ReviewWarning, ...], style: str) -> list[Text]:
    if not items:
        return []
    lines = [_line((f"{title} ({len(items)}):", style))]
    for item in items:
        where = f" ({item.path})" if item.path else ""
        lines.append(_line(f"  [{item.code}] {item.message}", where))
    return lines


def _usage_line(outcome: ReviewOutcome) -> Text:
    usage = outcome.usage
    reused = sum(1 for record in outcome.process if record.reused)
    return _line(
        f"Usage: {counted(usage.requests, 'request')}, {usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion = {usage.total_tokens} tokens "
        f"(cache read {usage.cache_read_tokens}, write {usage.cache_write_tokens}), "
        f"{outcome.duration_ms / 1000:.1f} s"
        + (f"; {counted(reused, 'answer')} reused from earlier runs" if reused else "")
        + _estimated(outcome)
    )


def _estimated(outcome: ReviewOutcome) -> str:
    """`; cost $0.0021; estimated ~6 requests, 9.2k prompt tokens, ~$0.0020` (what the
    review expected beforehand, to compare), or "" without an estimate."""
    estimate = outcome.estimate
    if estimate is None:
        return ""
    rows = [row["price"] for row in estimate.get("by_model", ()) if row["price"] is not None]
    price = estimate["price"] or next(iter(rows), None)  # model.*'s, else a pass model's
    unit = "$" if price is not None and price["currency"] == "USD" else ""
    spent = "" if outcome.cost is None else f"; cost {unit}{money(outcome.cost)}"
    guess = "" if estimate["cost"] is None else f", ~{unit}{money(estimate['cost'])}"
    return (
        f"{spent}; estimated ~{estimate['requests']:.0f} requests, "
        f"{short_count(estimate['prompt_tokens'])} prompt tokens{guess}"
    )


def console_lines(
    outcome: ReviewOutcome, mode: ConsoleMode, written: Mapping[str, str] | None = None
) -> list[Text]:
    """The console report as rich Text lines (empty for `off`)."""
    if mode == ConsoleMode.OFF:
        return []
    detailed = mode == ConsoleMode.DETAILED
    lines = _header(outcome)
    for path, findings in outcome.findings_by_file():
        lines += _file_lines(path, findings, detailed)
    if detailed:
        for item in outcome.dropped:
            why = f" of {item.duplicate_of}" if item.duplicate_of else ""
            lines.append(_line(f"  dropped ({item.reason.value}{why}): {item.path}: {item.title}"))
        lines += _problem_lines("Warnings", outcome.warnings, "yellow")
    lines += _problem_lines("Errors", outcome.errors, "bold red")
    lines.append(_usage_line(outcome))
    lines += [_line(f"{kind} report: ", path) for kind, path in (written or {}).items()]
    return lines


def print_console(
    outcome: ReviewOutcome,
    mode: ConsoleMode,
    console: Console,
    written: Mapping[str, str] | None = None,
) -> None:
    """Print the console report (`written`: report kind -> path, listed at the end)."""
    for line in console_lines(outcome, mode, written):
        console.print(line)
