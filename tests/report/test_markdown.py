"""The Markdown report, parsed back with a CommonMark + tables parser: structure where we put
it, untrusted text rendered as the characters it holds."""

from __future__ import annotations

from markdown_it.token import Token

from reviewflow.models import Severity
from reviewflow.report.markdown import render_markdown, summary_markdown
from reviewflow.report.mdsafe import md_code, md_inline, md_text
from reviewflow.report.outcome import ReviewOutcome
from tests.report.samples import (
    HOSTILE_PATH,
    HOSTILE_TITLE,
    PARSER,
    empty_outcome,
    finding,
    hostile_outcome,
    incomplete_outcome,
    make_outcome,
    plain,
)


def tokens(text: str) -> list[Token]:
    return PARSER.parse(text)


def headings(toks: list[Token], level: int) -> list[str]:
    return [
        plain(toks[i + 1])
        for i, tok in enumerate(toks)
        if tok.type == "heading_open" and tok.tag == f"h{level}"
    ]


def table_rows(toks: list[Token]) -> list[list[str]]:
    rows: list[list[str]] = []
    for i, tok in enumerate(toks):
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type in ("td_open", "th_open"):
            rows[-1].append(plain(toks[i + 1]))
    return rows


def shown(text: str) -> str:
    """How a line of untrusted text is meant to read: control characters as \\xNN, one line."""
    text = text.replace("\r\n", "\n")
    visible = "".join(f"\\x{ord(c):02x}" if ord(c) < 32 and c != "\n" else c for c in text)
    return " ".join(visible.split())


def test_structure_of_a_realistic_report() -> None:
    toks = tokens(render_markdown(make_outcome()))
    assert headings(toks, 1) == ["Code review report"]
    assert headings(toks, 3)[:2] == [  # per file, the file with the most severe finding first
        "src/app.py (2 critical, 2 medium, 1 low)",
        "api/handlers.py (2 high, 1 low)",
    ]
    findings = headings(toks, 4)
    assert len(findings) == 8
    assert findings[0] == "src/app.py:10-12: critical problem number 0"
    assert "src/app.py:40: medium problem number 5" in findings
    h2 = headings(toks, 2)
    for section in ("Findings", "Rules", "Tool index", "Usage", "Dropped candidates (15)"):
        assert section in h2
    rows = table_rows(toks)
    assert ["src/app.py", "candidate dropped as duplicate", "duplicate of F0000abab", ""] in rows
    assert ["file_read", "2", "1", "1"] in rows
    assert ["python", "system:python", "**/*.py", "", "src/app.py, src/util.py"] in rows
    assert ["1300", "50", "1350", "0", "0", "3", "65.0 s"] in rows
    assert "Work: 4 chunks, 3 model requests, 3 tool calls" in render_markdown(make_outcome())
    assert "Files: 5 changed, 3 reviewed, 2 excluded" in render_markdown(make_outcome())
    partly = make_outcome(incomplete_files=("src/app.py", "src/util.py"))
    files = "Files: 5 changed, 1 reviewed (2 incomplete: error), 2 excluded"
    assert files in render_markdown(partly)
    fences = [t.content for t in toks if t.type == "fence"]
    assert fences[0] == "value = cache.get(key)\nreturn value.name\n"


def test_hostile_text_cannot_break_the_markdown() -> None:
    outcome = hostile_outcome()
    toks = tokens(render_markdown(outcome))
    kinds = {t.type for t in toks} | {c.type for t in toks for c in t.children or []}
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}
    finding = outcome.findings[0]
    assert headings(toks, 4) == [f"{shown(HOSTILE_PATH)}:10-12: {shown(HOSTILE_TITLE)}"]
    assert len(headings(toks, 1)) == 1
    dropped = [row for row in table_rows(toks) if row[2:3] == ["filtered"]]
    assert dropped == [[shown(HOSTILE_PATH), shown(HOSTILE_TITLE), "filtered", ""]]
    paragraphs = [plain(toks[i + 1]) for i, t in enumerate(toks) if t.type == "paragraph_open"]
    problem = next(p for p in paragraphs if p.startswith("Problem."))
    assert problem == "Problem. " + finding.problem
    fences = [t.content for t in toks if t.type == "fence"]
    assert fences == [finding.existing_code]


def test_incomplete_and_empty_reviews_say_so() -> None:
    incomplete = render_markdown(incomplete_outcome())
    assert "**Incomplete review** (exit code 2)" in incomplete
    assert "**filter\\_failed**: review filter answered twice without JSON" in incomplete
    empty = render_markdown(empty_outcome())
    assert "**Passed** (exit code 0)" in empty
    assert "No findings." in empty and "No tool calls." in empty


def test_summary_is_the_head_of_the_report(any_outcome: ReviewOutcome) -> None:
    summary = summary_markdown(any_outcome)
    assert summary.startswith("## Review 20261130T120000Z-3f2a9c1d: ")
    assert summary.strip() in render_markdown(any_outcome)
    assert "Findings" not in headings(tokens(summary), 2)


def test_the_summary_says_what_was_silenced() -> None:
    line = "- Silenced: 1 suppressed, 1 dismissed, 1 by silencing rules\n"
    assert line in summary_markdown(make_outcome())
    assert "Silenced" not in summary_markdown(empty_outcome())


def test_escaping_helpers() -> None:
    assert plain(tokens(md_inline("a\nb\tc"))[1]) == "a b c"
    for text in ("# h", "1. item", "- item", "===", "> quote", "<b>x</b>", "a | b", "~~~", "$x$"):
        toks = tokens(md_text(text))
        assert [t.type for t in toks] == ["paragraph_open", "inline", "paragraph_close"], text
        assert plain(toks[1]) == text
    fence = tokens(md_code("````\nx\n"))
    assert [t.content for t in fence if t.type == "fence"] == ["````\nx\n"]


def test_hundreds_of_findings_are_sections_per_file() -> None:
    severities = list(Severity)
    many = tuple(finding(n, severities[n % 4], path=f"src/mod{n % 120:03d}.py") for n in range(500))
    toks = tokens(render_markdown(make_outcome(findings=many)))
    files = headings(toks, 3)
    assert len([h for h in files if h.startswith("src/mod")]) == 120
    assert files[0] == "src/mod000.py (5 critical)"
    assert len(headings(toks, 4)) == 500
