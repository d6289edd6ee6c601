"""Case lists: the shipped Martian list, the loader's one-line errors, both importers."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.quality.cases import NAMED, QualityError, load_cases
from bench.quality.importers import martian_cases, snippet_location, swr_case

MARTIAN_COMMIT = "b696c0cffdc016b71349322984b9f94fff3d902e"


def test_the_martian_list_holds_the_upstream_golden_set_it_names() -> None:
    cases = load_cases("martian")
    assert len(cases.cases) == 50
    assert sum(len(c.golden) for c in cases.cases) == 135 == cases.source["golden_comments"]
    assert cases.source["commit"] == MARTIAN_COMMIT and cases.source["licence"] == "MIT"
    repos = Counter(c.repo.rsplit("/", 1)[1].split("-")[0] for c in cases.cases)
    assert sorted(repos.values()) == [10, 10, 10, 10, 10]
    assert all(c.pull and not c.pinned and c.url for c in cases.cases)
    assert all(g.category for c in cases.cases for g in c.golden)


def _write(tmp_path: Path, cases: list[object]) -> str:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": cases}))
    return str(path)


SHA = "a" * 40


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ({"id": "x", "repo": "r", "base": "main", "head": SHA, "golden": []}, ".base: 'main'"),
        ({"id": "x", "repo": "r", "golden": []}, "give base and head commits, or a pull"),
        ({"id": "x y", "repo": "r", "pull": 1, "golden": []}, ".id: 'x y'"),
        ({"id": "x", "repo": "r", "pull": 1, "golden": [{"comment": "c", "line": 0}]}, ".line: 0"),
        ({"id": "x", "repo": "r", "pull": 1, "golden": [{"severity": "High"}]}, ".comment: None"),
    ],
)
def test_bad_cases_are_one_line_naming_the_key(tmp_path: Path, case: object, message: str) -> None:
    with pytest.raises(QualityError, match="cases\\[0\\]") as caught:
        load_cases(_write(tmp_path, [case]))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_unknown_names_and_case_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(QualityError, match=r"accepted: martian, swr or a JSON path"):
        load_cases("nope")
    path = _write(tmp_path, [{"id": "a", "repo": "r", "base": SHA, "head": SHA, "golden": []}])
    with pytest.raises(QualityError, match=r"--case b: not in cases\.json"):
        load_cases(path, ["b"])
    if not NAMED["swr"].exists():
        with pytest.raises(QualityError, match=r"importers\.py swr DATASET\.jsonl"):
            load_cases("swr")


def test_the_martian_importer_reads_the_published_format(tmp_path: Path) -> None:
    entry = {
        "pr_title": "T",
        "url": "https://github.com/o/r/pull/7",
        "original_url": "https://github.com/up/r/pull/9",
        "comments": [{"comment": "C", "severity": "High", "category": "bug"}],
    }
    (tmp_path / "r.json").write_text(json.dumps([entry]))
    data = martian_cases(tmp_path, "c" * 40)
    assert data["cases"] == [
        {
            "id": "o-r-7",
            "title": "T",
            "repo": "https://github.com/o/r",
            "pull": 7,
            "url": "https://github.com/o/r/pull/7",
            "original_url": "https://github.com/up/r/pull/9",
            "base": None,
            "head": None,
            "source_file": "r.json",
            "golden": [{"comment": "C", "severity": "High", "category": "bug"}],
        }
    ]
    assert data["source"]["prs"] == 1 and len(data["source"]["golden_sha256"]) == 64


def test_an_swr_record_becomes_a_case_with_file_and_line() -> None:
    # The published record shape (field names from SWR-Bench's README), values made up here.
    snippet = "pkg/mod.py\n@@ -10,4 +12,5 @@ def f():\n     a = 1\n-    b = 2\n+    b = 3\n"
    record = {
        "repo": "owner/project",
        "instance_id": "owner__project-1",
        "pr_title": "T",
        "base_commit": "b" * 40,
        "pr_commits": [
            {"sha": "2" * 40, "date": "2024-01-02", "diff": [{"file": "pkg/mod.py"}]},
            {"sha": "1" * 40, "date": "2024-01-01", "diff": []},
        ],
        "changes": [
            {
                "change_type": "F.2 Logic",
                "change_introducing": {"code_snippet": snippet, "commit_sha": "1" * 40},
                "change_discussion": {"discussion_summary": "b must stay 2"},
            }
        ],
    }
    case = swr_case(record)
    assert (case["base"], case["head"]) == ("b" * 40, "2" * 40)  # the latest commit by date
    assert case["golden"] == [
        {"comment": "b must stay 2", "category": "F.2 Logic", "file": "pkg/mod.py", "line": 13}
    ]
    assert snippet_location("@@ -1 +1 @@\n+x\n", {"a.py"}) == (None, 1)
