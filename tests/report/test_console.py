"""The console report: each mode, colour only on a terminal without NO_COLOR, names escaped."""

from __future__ import annotations

import io
import re

import pytest

from reviewflow.config import ConsoleMode
from reviewflow.models import Severity
from reviewflow.providers.pool import UsageTotals
from reviewflow.report.console import make_console, print_console
from reviewflow.report.outcome import ReviewOutcome
from tests.report.samples import (
    TtyStream,
    empty_outcome,
    finding,
    hostile_outcome,
    incomplete_outcome,
    make_outcome,
)

SGR = re.compile(r"\x1b\[[0-9;]*m")


def printed(
    outcome: ReviewOutcome,
    mode: ConsoleMode,
    stream: io.StringIO | None = None,
    env: dict[str, str] | None = None,
    written: dict[str, str] | None = None,
) -> str:
    stream = stream if stream is not None else io.StringIO()
    print_console(outcome, mode, make_console(stream, env or {}), written)
    return stream.getvalue()


def test_off_prints_nothing(any_outcome: ReviewOutcome) -> None:
    assert printed(any_outcome, ConsoleMode.OFF, TtyStream(), {"TERM": "xterm"}) == ""


def test_detailed_report_on_a_pipe_is_plain_text() -> None:
    text = printed(
        make_outcome(), ConsoleMode.DETAILED, written={"json": "/tmp/r/review-report.json"}
    )
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == "Review 20261130T120000Z-3f2a9c1d: complete, exit code 1"
    assert (
        lines[1]
        == "  range change in /home/developer/projects/zadig (111111111111 -> 222222222222)"
    )
    assert lines[2] == (
        "  3 of 5 files reviewed, 8 findings (2 critical, 2 high, 2 medium, 2 low), 15 dropped"
    )
    # one drop of every reason
    assert lines[3] == "  silenced: 1 suppressed, 1 dismissed, 1 by silencing rules"
    app = lines.index("  src/app.py  (5 findings: 2 critical, 2 medium, 1 low)")
    assert lines[app + 1] == (
        "    [CRITICAL] lines 10-12  critical problem number 0  (security, rule sql-injection)"
    )
    assert lines[app + 2] == "        problem: Line 10 dereferences a value that can be None."
    assert "        suggestion: Check for None before use." in lines
    assert "    [MEDIUM] line 40  medium problem number 5  (compatibility)" in lines
    handlers = lines.index("  api/handlers.py  (3 findings: 2 high, 1 low)")
    assert app < handlers  # the file with the most severe finding first
    assert "  dropped (duplicate of F0000abab): src/app.py: candidate dropped as duplicate" in lines
    assert "  [rule_reference] reference docs/x.md not found (api/handlers.py)" in lines
    assert lines[-2].startswith("Usage: 3 requests, 1300 prompt + 50 completion = 1350 tokens")
    assert lines[-1] == "json report: /tmp/r/review-report.json"


def test_summary_has_one_line_per_finding_and_no_details() -> None:
    text = printed(make_outcome(), ConsoleMode.SUMMARY)
    assert text.count("[") == 8  # the severity labels
    assert "problem:" not in text and "dropped (" not in text
    assert "Usage:" in text


def test_colour_on_a_terminal_unless_no_color() -> None:
    coloured = printed(make_outcome(), ConsoleMode.SUMMARY, TtyStream(), {"TERM": "xterm-256color"})
    assert "\x1b[" in coloured
    env = {"TERM": "xterm-256color", "NO_COLOR": "1"}
    plain = printed(make_outcome(), ConsoleMode.SUMMARY, TtyStream(), env)
    assert "\x1b[31m" not in plain and "\x1b[1;31m" not in plain
    assert plain.replace("\x1b[1m", "").replace("\x1b[0m", "") == printed(
        make_outcome(), ConsoleMode.SUMMARY
    )


@pytest.mark.parametrize("mode", [ConsoleMode.DETAILED, ConsoleMode.SUMMARY])
@pytest.mark.parametrize("tty", [False, True])
def test_hostile_names_cannot_drive_the_terminal(mode: ConsoleMode, tty: bool) -> None:
    stream = TtyStream() if tty else io.StringIO()
    text = printed(hostile_outcome(), mode, stream, {"TERM": "xterm"})
    unstyled = SGR.sub("", text)
    assert "\x1b" not in unstyled and "\r" not in unstyled and "\x07" not in unstyled
    assert "  src/we`ird|na\\x1b[31mme\\x0a.py  (" in unstyled
    title = next(line for line in unstyled.splitlines() if "[HIGH]" in line)
    assert "\\x1b[2J\\x0d\\x0a- [x](javascript:x)" in title
    if mode == ConsoleMode.DETAILED:
        assert "  [git] odd name\\x1b[1A\\x0dFAKE LINE (src/we" in unstyled


def test_rich_markup_in_text_is_printed_as_is() -> None:
    outcome = make_outcome(findings=(finding(0, Severity.LOW, title="[bold red]boom[/] :smile:"),))
    text = printed(outcome, ConsoleMode.SUMMARY, TtyStream(), {"TERM": "xterm"})
    assert "[bold red]boom[/] :smile:" in SGR.sub("", text)


def test_incomplete_and_empty() -> None:
    outcome = incomplete_outcome().model_copy(update={"incomplete_files": ("src/app.py",)})
    text = printed(outcome, ConsoleMode.SUMMARY)
    assert "incomplete, exit code 2" in text.splitlines()[0]
    assert "  2 of 5 files reviewed (1 incomplete: error), 8 findings" in text
    assert "  [filter_failed] review filter answered twice without JSON" in text
    empty = printed(empty_outcome(), ConsoleMode.DETAILED)
    assert "0 of 0 files reviewed, 0 findings" in empty


def test_counts_of_one_are_singular() -> None:
    one = make_outcome(
        files_changed=1,
        files=make_outcome().files[:1],
        findings=(finding(0, Severity.HIGH),),
        usage=UsageTotals(requests=1),
        process=(make_outcome().process[0].model_copy(update={"reused": True}),),
    )
    text = printed(one, ConsoleMode.SUMMARY)
    assert "  1 of 1 file reviewed, 1 finding (0 critical, 1 high, 0 medium, 0 low)" in text
    assert "Usage: 1 request, " in text and "; 1 answer reused from earlier runs" in text


def test_hundreds_of_findings_read_per_file_one_line_each() -> None:
    severities = list(Severity)
    many = tuple(finding(n, severities[n % 4], path=f"src/mod{n % 120:03d}.py") for n in range(500))
    lines = printed(make_outcome(findings=many), ConsoleMode.SUMMARY).splitlines()
    headings = [line for line in lines if line.startswith("  src/mod")]
    assert len(headings) == len(set(headings)) == 120  # each file once
    assert sum(line.startswith("    [") for line in lines) == 500
    assert headings[0] == "  src/mod000.py  (5 findings: 5 critical)"
    first_high = next(i for i, line in enumerate(headings) if "critical" not in line)
    assert all("critical" in line for line in headings[:first_high])  # most severe files first
