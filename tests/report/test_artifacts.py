"""Prefect artifact content: stable keys, the summary Markdown, the findings table."""

from __future__ import annotations

import re

import pytest

from reviewflow.models import Severity
from reviewflow.report.artifacts import (
    TABLE_ROWS,
    artifact_key,
    artifact_summary,
    findings_table,
    summary_markdown,
)
from reviewflow.report.outcome import ModelInfo
from tests.report.samples import (
    PARSER,
    empty_outcome,
    finding,
    hostile_outcome,
    make_outcome,
    metadata,
    plain,
)

KEY = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@pytest.mark.parametrize(
    ("repository", "mode"),
    [
        ("/home/developer/projects/zadig", "range"),
        ("/Home/Dev/My_Repo.git", "workspace"),
        ("/tmp/we\x1bird\udcff/" + "deep/" * 60 + "repo", "commit"),
        ("/", "stdin"),
    ],
)
def test_keys_are_stable_and_well_formed(repository: str, mode: str) -> None:
    key = artifact_key(repository, mode)
    assert KEY.fullmatch(key) and len(key) <= 100
    assert key == artifact_key(repository, mode)
    assert key.startswith("reviewflow-")


def test_keys_differ_by_repository_and_mode() -> None:
    key = artifact_key("/home/developer/projects/zadig", "range")
    assert key.startswith("reviewflow-home-developer-projects-zadig-range-")
    assert key != artifact_key("/home/developer/projects/zadig", "commit")
    assert key != artifact_key("/home/developer/projects/zadig2", "range")
    long_a = artifact_key("/a/" + "x" * 200, "range")
    long_b = artifact_key("/b/" + "x" * 200, "range")
    assert long_a != long_b


def test_findings_table_rows() -> None:
    rows = findings_table(make_outcome())
    assert len(rows) == 8
    assert rows[0] == {
        "severity": "critical",
        "location": "src/app.py:10-12",
        "title": "critical problem number 0",
        "category": "security",
        "rule": "sql-injection",
        "confidence": 0.9,
        "id": "F0000abab",
    }
    assert findings_table(empty_outcome()) == []


def test_summary_markdown_escapes_hostile_text() -> None:
    meta = metadata(
        repository="/srv/<script>x</script>|`repo`",
        model=ModelInfo(protocol="openai", name="[m](http://evil)", endpoint=None),
    )
    text = summary_markdown(hostile_outcome().model_copy(update={"metadata": meta}))
    toks = PARSER.parse(text)
    kinds = {t.type for t in toks} | {c.type for t in toks for c in t.children or []}
    assert not kinds & {"html_inline", "html_block", "link_open"}
    items = [plain(toks[i + 1]) for i, t in enumerate(toks) if t.type == "paragraph_open"]
    assert "Change: range change in /srv/<script>x</script>|`repo` (" in items[1]
    assert "Model: [m](http://evil) (openai)" in items


def test_findings_table_text_is_valid_utf8() -> None:
    outcome = make_outcome(findings=(finding(0, Severity.LOW, title="bad \udcff byte"),))
    assert findings_table(outcome)[0]["title"] == "bad \\xff byte"


def test_at_hundreds_of_findings_the_table_is_capped_and_the_summary_says_where_the_rest_is() -> (
    None
):
    severities = list(Severity)
    many = tuple(finding(n, severities[n % 4], path=f"src/mod{n % 120:03d}.py") for n in range(500))
    outcome = make_outcome(findings=many)
    rows = findings_table(outcome)
    assert len(rows) == TABLE_ROWS
    assert [row["severity"] for row in rows] == sorted(
        (row["severity"] for row in rows), key=[s.value for s in severities].index
    )  # the most severe kept
    written = {"markdown": "/tmp/r/review-report.md", "json": "/tmp/r/review-report.json"}
    text = artifact_summary(outcome, written)
    assert text.startswith(summary_markdown(outcome))
    assert f"The findings table shows the {TABLE_ROWS} most severe of 500" in text
    assert "markdown /tmp/r/review-report.md, json /tmp/r/review-report.json" in text
    assert artifact_summary(make_outcome(), written) == summary_markdown(make_outcome())
