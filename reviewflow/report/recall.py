"""What a client reads back from a repository's last review (`reviewflow mcp`'s `findings` and
`explain` tools): its newest JSON report where the CLI writes it (the home's review directories,
`lookup.repository_reports`, and the file the configured `output.report_dir`/`output.json`
name, when it is this repository's), and one finding explained from it: its evidence, the
rule its file was reviewed under and how it was placed on its lines. Reads only; a failure is
one `ConfigError` line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reviewflow.config import OutputSettings
from reviewflow.errors import ConfigError
from reviewflow.findings.models import PlacedBy
from reviewflow.report.location import flatten_repo_path, reports_root
from reviewflow.report.lookup import configured_reports, parse_key, repository_reports

# What each `placed_by` says about the lines a finding is on (the report's `placed_by`).
PLACEMENT: dict[PlacedBy, str] = {
    PlacedBy.ANCHOR: "the line tags the model copied from the diff, their hashes checked",
    PlacedBy.EXACT: "the code the model quoted, found verbatim (trailing whitespace aside)",
    PlacedBy.WHITESPACE: "the code the model quoted, found with whitespace and blank lines ignored",
    PlacedBy.MARKERS: "the code the model quoted from the diff, found once its +/- markers "
    "were removed",
    PlacedBy.PARTIAL: "a one-line quote found inside one added line",
    PlacedBy.LINES: "the line numbers the model gave, alone (the least certain placement)",
    PlacedBy.RELOCATION: "the code a second request to the model gave, after the first "
    "placement failed",
}


def last_report(home: Path, repo_root: Path, output: OutputSettings | None = None) -> Path:
    """The JSON report of the repository's newest review where the CLI writes it with `output`
    (the configuration's: `lookup.repository_reports`); ConfigError if there is none."""
    reports = repository_reports(home, repo_root, output)
    if not reports:
        configured = configured_reports(output) if output is not None else []
        places = [reports_root(home) / flatten_repo_path(repo_root), *configured]
        where = ", ".join(str(place) for place in places)
        raise ConfigError(f"no review of {repo_root} has a report in {where}: review it first")
    return reports[0]


def read_report(path: Path) -> dict[str, Any]:
    """A JSON report as a dict; ConfigError when it cannot be read or is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read report {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read report {path}: not a JSON report ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise ConfigError(f"{path} is not a reviewflow JSON report (no findings list)")
    return data


def find_finding(report: dict[str, Any], key_text: str, path: Path) -> dict[str, Any]:
    """The finding `key_text` (an ID or a fingerprint) names in `report` (read from `path`)."""
    key = parse_key(key_text)
    for finding in report["findings"]:
        if isinstance(finding, dict) and key in (finding.get("id"), finding.get("fingerprint")):
            return finding
    raise ConfigError(f"finding {key_text.strip()} is not in the last review's report {path}")


def explanation(report: dict[str, Any], key_text: str, path: Path) -> dict[str, Any]:
    """One finding explained: the finding as the report has it, its evidence, the rule its
    file was reviewed under (None when the report names none) and its placement."""
    finding = find_finding(report, key_text, path)
    rule = next(
        (
            {k: v for k, v in item.items() if k != "files"}
            for item in report.get("rules", [])
            if isinstance(item, dict) and finding.get("path") in item.get("files", [])
        ),
        None,
    )
    placed_by = str(finding.get("placed_by", ""))
    known = {item.value: item for item in PlacedBy}
    how = PLACEMENT.get(known[placed_by]) if placed_by in known else None
    return {
        "finding": finding,
        "evidence": finding.get("evidence", ""),
        "rule": rule,
        "placement": {
            "path": finding.get("path", ""),
            "start_line": finding.get("start_line", 0),
            "end_line": finding.get("end_line", 0),
            "placed_by": placed_by,
            "meaning": how or "",
            "existing_code": finding.get("existing_code", ""),
        },
        "report": str(path),
    }
