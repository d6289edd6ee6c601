"""Which finding `reviewflow dismiss ID_OR_FINGERPRINT` means, from the JSON reports.

A fingerprint (64 hex digits) is taken as it is; its title and path are looked up in the
reports when one of them holds it. A finding ID (`F` + 12 hex digits) is looked up in the
report `--report FILE` names, else in this repository's reports where reviews write them, newest
first: the reviewflow home's (`<home>/reports/<flattened repository>/*/review-report.json`)
and the file the configured `output.report_dir` (or an absolute `output.json`) names, when it
holds a review of this repository. IDs are the fingerprint's first digits, so an ID found in
any of them names the same finding.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from reviewflow.config import OutputSettings
from reviewflow.errors import ConfigError
from reviewflow.report.location import flatten_repo_path, output_path, reports_root

REPORT_NAME = "review-report.json"
_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_ID = re.compile(r"F[0-9a-f]{12}")


@dataclass(frozen=True, slots=True)
class Reported:
    """A finding as a report named it (title and path empty when no report holds it)."""

    fingerprint: str
    id: str
    path: str = ""
    title: str = ""
    category: str | None = None
    rule_id: str | None = None
    cluster: tuple[str, ...] = ()  # `cluster_fingerprints`: a review of several passes


def parse_key(text: str) -> str:
    """A finding ID or fingerprint as given (case of the hex digits ignored); ConfigError."""
    key = text.strip()
    if _FINGERPRINT.fullmatch(key.lower()):
        return key.lower()
    if key[:1] in ("F", "f") and _ID.fullmatch("F" + key[1:].lower()):
        return "F" + key[1:].lower()
    raise ConfigError(
        f"'{text}' is neither a finding ID (F and 12 hex digits, as reports show it) nor a "
        "fingerprint (64 hex digits)"
    )


def repository_reports(
    home: Path, repo_root: Path, output: OutputSettings | None = None
) -> list[Path]:
    """This repository's JSON reports, newest first: those in the home's review directories,
    and with `output` (the configuration's) the files `configured_reports` names that hold a
    review of this repository."""
    folder = reports_root(home) / flatten_repo_path(repo_root)
    found = [path for path in folder.glob(f"*/{REPORT_NAME}") if path.is_file()]
    if output is not None:
        found += [
            path
            for path in configured_reports(output)
            if path.is_file() and _of_repository(path, repo_root) and path not in found
        ]
    return sorted(found, key=lambda path: (path.stat().st_mtime, path.parent.name), reverse=True)


def configured_reports(output: OutputSettings) -> list[Path]:
    """The JSON report files the configuration names outside the home's review directories:
    `output.json` in `output.report_dir` (and `review-report.json` there, the name `reviewflow
    mcp`'s reviews give), or an absolute `output.json`."""
    places: list[str | None] = []
    if output.report_dir:
        directory = Path(output.report_dir).expanduser()
        places += [output_path(output.json_path, directory), str(directory / REPORT_NAME)]
    elif output.json_path and Path(output.json_path).expanduser().is_absolute():
        places.append(output_path(output.json_path, Path()))
    return [Path(p) for p in dict.fromkeys(places) if p is not None and p != "-"]


def _of_repository(path: Path, repo_root: Path) -> bool:
    """Whether the JSON report at `path` is a review of `repo_root` (a report directory the
    configuration names may be shared by repositories)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    metadata = data.get("metadata") if isinstance(data, dict) else None
    return isinstance(metadata, dict) and metadata.get("repository") == str(repo_root)


def find_reported(
    key: str,
    home: Path,
    repo_root: Path,
    report: Path | None,
    output: OutputSettings | None = None,
) -> Reported:
    """The finding `key` (from `parse_key`) names; ConfigError when an ID is in no report
    (`output`: the configuration's, where reviews write theirs besides the home)."""
    reports = [report] if report is not None else repository_reports(home, repo_root, output)
    for path in reports:
        for finding in _findings(path, required=report is not None):
            if key in (finding.get("id"), finding.get("fingerprint")):
                return Reported(
                    fingerprint=str(finding["fingerprint"]),
                    id=str(finding.get("id", "")),
                    path=str(finding.get("path", "")),
                    title=str(finding.get("title", "")),
                    category=_text(finding.get("category")),
                    rule_id=_text(finding.get("rule_id")),
                    cluster=_fingerprints(finding.get("cluster_fingerprints")),
                )
    if len(key) == 64:
        return Reported(fingerprint=key, id="F" + key[:12])
    if report is not None:
        raise ConfigError(f"finding {key} is not in report {report}: give its fingerprint instead")
    where = reports_root(home) / flatten_repo_path(repo_root)
    raise ConfigError(
        f"finding {key} is in none of this repository's {len(reports)} reports in {where}: "
        "pass --report FILE (the review's JSON report) or the finding's fingerprint"
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _fingerprints(value: object) -> tuple[str, ...]:
    """The fingerprints of a report's list (anything else in it left out)."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str) and _FINGERPRINT.fullmatch(item))


def _findings(path: Path, *, required: bool) -> list[dict[str, object]]:
    """The findings of one JSON report; a report of the home that cannot be read is skipped,
    the one `--report` names is an error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if required:
            raise ConfigError(f"cannot read report {path}: no such file") from None
        return []
    except OSError as exc:
        if required:
            raise ConfigError(f"cannot read report {path}: {exc.strerror or exc}") from None
        return []
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        if required:
            raise ConfigError(f"cannot read report {path}: not a JSON report ({exc})") from None
        return []
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list):
        if required:
            raise ConfigError(f"{path} is not a reviewflow JSON report (no findings list)")
        return []
    return [item for item in findings if isinstance(item, dict) and "fingerprint" in item]
