"""Hash-anchored findings through the CLI and the wire server: the model copies a line's tag
from the prompt it was sent, and the reports say how each finding was placed."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.anchors import line_hash
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.report.samples import sarif_schema
from tests.wire_server import TEST_KEY, RecordedRequest, Reply, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

PATH = "app/settings.py"
BASE = "def load(path):\n    return {}\n"
HEAD = (
    "def load(path):\n    handle = open(path)\n    data = handle.read()\n    return parse(data)\n"
)
COMMON = {"severity": "high", "file": PATH, "evidence": "e", "suggestion": "s", "confidence": 0.9}
LEAK = {
    **COMMON,
    "category": "correctness",
    "anchor": "<tag of: handle = open(path)>",  # filled from the prompt, nothing else given
    "title": "File handle never closed",
    "problem": "open() without close",
}
STALE = {
    **COMMON,
    "category": "tests",
    "anchor": f"L4#{(int(line_hash('    return parse(data)'), 16) + 1) % 4096:03x}",  # stale
    "existing_code": "    return parse(data)",
    "title": "parse is untested",
    "problem": "no test covers parse",
}


class TagCopyingReviewer(ScriptedReviewer):
    """Reports its findings with the tags the main prompt shows, as a model copies them."""

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        shown = {
            code.strip(): tag for tag, code in re.findall(r"(L\d+#[0-9a-f]{3}) \+(.*?)\\n", text)
        }
        for finding in self.findings[PATH]:
            wanted = re.fullmatch(r"<tag of: (.*)>", finding["anchor"])
            if wanted and wanted[1] in shown:
                finding["anchor"] = shown[wanted[1]]
        return super()._main(record, text)


def test_an_anchored_finding_is_placed_by_its_tag_and_reports_say_so(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reviewer = TagCopyingReviewer({PATH: [dict(LEAK), dict(STALE)]})
    wire.respond("openai", reviewer)
    repo.write(PATH, BASE)
    repo.commit("base")
    repo.write(PATH, HEAD)
    repo.commit("read settings")
    for name, value in (
        ("PROTOCOL", "openai"),
        ("NAME", "test-model"),
        ("ENDPOINT", wire.base_url("openai")),
        ("API_KEY", TEST_KEY),
    ):
        monkeypatch.setenv(f"REVIEWFLOW_MODEL_{name}", value)
    out = repo.root.parent / "out"
    argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "summary"]
    code = main([*argv, "--report-dir", str(out), "--sarif", "report.sarif"])

    assert code == 1
    assert reviewer.findings[PATH][0]["anchor"] == "L2#" + line_hash("    handle = open(path)")
    report = json.loads((out / "review-report.json").read_text())
    jsonschema.validate(report, report_schema())
    placed = {
        f["title"]: (f["start_line"], f["end_line"], f["placed_by"]) for f in report["findings"]
    }
    assert placed == {
        "File handle never closed": (2, 2, "anchor"),
        "parse is untested": (4, 4, "exact"),  # the stale tag fell back to the quoted code
    }
    assert reviewer.stages["relocate"] == 0  # both placed without asking the model again
    sarif = json.loads((out / "report.sarif").read_text())
    jsonschema.validate(sarif, sarif_schema())
    results = sarif["runs"][0]["results"]
    assert sorted(r["properties"]["placed_by"] for r in results) == ["anchor", "exact"]
