"""`reviewflow mcp`'s `findings` and `explain` read the last review where the CLI writes it:
with `output.report_dir` configured (set by `reviewflow config set`, as a user sets it), the
report is in that directory, not under the home; a report there of another repository is not
this one's, and the newest of the home's and the configured place wins. `reviewflow dismiss
ID` looks the ID up there as well. The server's tools are
called in process (the SDK's `call_tool`), the reports placed by the CLI's own writer paths."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from flows.cli.main import main
from flows.cli.mcp.server import Reviews, build_server
from reviewflow.config import load_config
from reviewflow.report.location import review_dir
from reviewflow.report.writers import report_targets
from tests.gitutil import GitRepo

FINGERPRINT = "cd" * 32
FINDING = {
    "id": "F" + FINGERPRINT[:12],
    "fingerprint": FINGERPRINT,
    "severity": "high",
    "category": "correctness",
    "rule_id": None,
    "path": "app/fast.py",
    "start_line": 2,
    "end_line": 2,
    "title": "File handle never closed",
    "problem": "the file is opened and never closed",
    "evidence": "open() without a with block",
    "suggestion": "",
    "confidence": 0.9,
    "existing_code": "return open('x').read()",
    "placed_by": "exact",
}


def _report(repository: Path, findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "review_id": "20261207T000000Z-abc",
        "status": "complete",
        "exit_code": 1,
        "metadata": {"repository": str(repository)},
        "findings": findings,
        "stats": {},
        "usage": {},
        "warnings": [],
        "errors": [],
        "rules": [{"name": "python", "path": "**/*.py", "files": ["app/fast.py"]}],
    }


def _written(home: Path, repository: Path, report: dict[str, Any], at: int) -> Path:
    """Where a review of `repository` writes its JSON report with the home's configuration
    (the writer's own `review_dir` and `report_targets`), written there."""
    output = load_config(home, os.environ).output
    directory, _ = review_dir(home, str(repository), "20261207T000000Z-abc", output.report_dir)
    path = Path(report_targets(output, directory)["json"])
    path.write_text(json.dumps(report))
    os.utime(path, (at, at))
    return path


def test_findings_and_explain_read_the_configured_report_dir(
    repo: GitRepo, rf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "ci-reports"
    assert main(["config", "set", "output.report_dir", str(elsewhere)]) == 0
    capsys.readouterr()
    server = build_server(Reviews(repo.root, os.environ))

    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = await server.call_tool(tool, arguments)
        content = getattr(answer, "structured_content", None)
        assert content is not None, answer
        return dict(content)

    async def refused(tool: str) -> str:
        with pytest.raises(MCPError) as caught:
            await server.call_tool(tool, {})
        return str(caught.value)

    async def checks() -> None:
        assert "has a report in" in await refused("findings")  # no review yet, said where
        # another repository's review in the shared directory is not this one's
        other = _written(rf_home, tmp_path / "other", _report(tmp_path / "other", []), at=3_000)
        assert other.parent == elsewhere
        message = await refused("findings")
        assert str(elsewhere) in message and "review it first" in message
        path = _written(rf_home, repo.root, _report(repo.root, [FINDING]), at=2_000)
        assert path == other  # one directory: the configured one, the same file name
        found = await call("findings", {})
        assert found["reports"] == {"json": str(path)}
        assert [f["id"] for f in found["findings"]] == [FINDING["id"]]
        explained = await call("explain", {"finding": FINDING["id"]})
        assert explained["report"] == str(path)
        assert explained["placement"]["placed_by"] == "exact"
        # `reviewflow dismiss ID` (the `dismiss` tool's command) finds the ID there too
        assert main(["dismiss", "--repo", str(repo.root), FINDING["id"]]) == 0
        assert capsys.readouterr().out.startswith(f'dismissed {FINDING["id"]} "File handle')
        # a newer review under the home (report_dir unset again) is the last one
        assert main(["config", "set", "output.report_dir", ""]) == 0
        home_path = _written(rf_home, repo.root, _report(repo.root, []), at=4_000)
        assert home_path.is_relative_to(rf_home)
        assert main(["config", "set", "output.report_dir", str(elsewhere)]) == 0
        assert (await call("findings", {}))["reports"] == {"json": str(home_path)}

    anyio.run(checks)
