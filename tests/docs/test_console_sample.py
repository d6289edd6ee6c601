"""The console sample README.md quotes is the one `make docs-pictures` recorded from a real review
(docs/assets/console-review.txt, drawn as the index page's picture), and the report paths in it
are where reviewflow really writes: `<home>/reports/<flattened repository path>/<review ID>/`."""

from __future__ import annotations

import re
from pathlib import Path

from reviewflow.report.location import flatten_repo_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "docs/assets/console-review.txt"


def test_readme_quotes_the_recorded_sample() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```text\n(.*?)```", readme, flags=re.S)
    assert SAMPLE.read_text().rstrip("\n") + "\n" in blocks


def test_the_sample_shows_the_real_report_folder() -> None:
    text = SAMPLE.read_text()
    review_id = re.search(r"^Review (\S+):", text, flags=re.M)
    repo = re.search(r" in ~/(\S+) \(", text)
    assert review_id and repo
    folder = f"~/.reviewflow/reports/{flatten_repo_path('/home/developer/' + repo[1])}"
    reports = re.findall(r"^(\w+) report: (.*)$", text, flags=re.M)
    assert [kind for kind, _ in reports] == ["json", "markdown", "sarif"]
    for kind, path in reports:
        suffix = {"json": "json", "markdown": "md", "sarif": "sarif"}[kind]
        assert path == f"{folder}/{review_id[1]}/review-report.{suffix}"
    svg = (ROOT / "docs/assets/console-review.svg").read_text()
    assert review_id[1] in svg and "20261203T101512Z" not in svg
