"""Prefect artifact content: stable keys, the summary Markdown, the findings table."""

from __future__ import annotations

import re

import pytest

from reviewflow.models import Severity
from reviewflow.report.artifacts import artifact_key, findings_table, summary_markdown
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
