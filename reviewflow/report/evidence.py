"""What `reviewflow dismissed --suggest` learns from in JSON reports: the dismissals reviews
found on pull/merge requests (`pull_request.dismissed`, and the `dismissed` drops of the
findings a review reported again), and each finding's path, category and rule ID by
fingerprint. A report that cannot be read is skipped (the home's are hints, not input)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewflow.pullrequest.context import dismissal_parts

Known = tuple[str, str | None, str | None]  # a finding's path, category, rule ID


@dataclass(frozen=True, slots=True)
class Evidence:
    """One dismissal: the finding (fingerprint, path, category or rule ID), who, when, why,
    and where it was recorded."""

    fingerprint: str
    path: str
    category: str | None
    rule_id: str | None
    by: str
    at: str  # YYYY-MM-DD, "" when unknown
    reason: str
    where: str

    @property
    def id(self) -> str:
        return "F" + self.fingerprint[:12]


def read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _items(report: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = report.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def finding_index(reports: Iterable[dict[str, Any]]) -> dict[str, Known]:
    """Fingerprint -> (path, category, rule ID), from the reports' findings and drops."""
    out: dict[str, Known] = {}
    for report in reports:
        for item in [*_items(report, "findings"), *_items(report, "dropped")]:
            fingerprint, category = _text(item.get("fingerprint")), _text(item.get("category"))
            if fingerprint and category:
                known = (str(item.get("path", "")), category, _text(item.get("rule_id")))
                out.setdefault(fingerprint, known)
    return out


def on_requests(reports: Iterable[dict[str, Any]], known: Mapping[str, Known]) -> list[Evidence]:
    """The dismissals reviews found on pull requests: their reports' `pull_request.dismissed`
    (the finding looked up in `known`) and `dismissed` drops of a request's dismissal."""
    out = []
    for report in reports:
        metadata = report.get("metadata")
        started = str(metadata.get("started_at", "")) if isinstance(metadata, dict) else ""
        request = report.get("pull_request")
        request = request if isinstance(request, dict) else {}
        where = f"pull request {request['url']}" if _text(request.get("url")) else "a pull request"
        found: dict[str, tuple[str, Known]] = {}
        listed = request.get("dismissed")
        for fingerprint, detail in (listed if isinstance(listed, dict) else {}).items():
            if isinstance(detail, str):
                found[fingerprint] = (detail, known.get(fingerprint, ("", None, None)))
        for item in _items(report, "dropped"):
            # dismissed as another finding of its cluster: that dismissal, counted once
            as_ = _text(item.get("dismissed_as")) or _text(item.get("fingerprint"))
            fingerprint, detail = as_, _text(item.get("detail"))
            if item.get("reason") == "dismissed" and fingerprint and detail:
                path, category = str(item.get("path", "")), _text(item.get("category"))
                found[fingerprint] = (detail, (path, category, _text(item.get("rule_id"))))
        for fingerprint, (detail, (path, category, rule_id)) in found.items():
            parts = dismissal_parts(detail)
            if parts is not None:
                who = f"@{parts[0]}" if parts[0] else ""
                evidence = Evidence(
                    fingerprint, path, category, rule_id, who, started[:10], parts[1], where
                )
                out.append(evidence)
    return out
