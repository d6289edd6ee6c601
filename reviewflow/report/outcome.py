"""What a finished review hands the report writers (`ReviewOutcome`), and the JSON report.

The flow assembles one `ReviewOutcome`; every writer (JSON, Markdown, SARIF, GitLab Code
Quality, console, artifacts) reads it and nothing else. It never holds the API key: the
model is described by protocol, name and endpoint only.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reviewflow.cancel import EXIT_CODE as CANCELLED_EXIT
from reviewflow.cost.usage import ModelUsage
from reviewflow.findings.models import Dropped, Finding
from reviewflow.models import ReviewWarning, Severity
from reviewflow.providers.budget import BudgetState
from reviewflow.providers.pool import UsageTotals
from reviewflow.pullrequest.models import PublishResult
from reviewflow.pullrequest.state import PriorFinding
from reviewflow.report.textsafe import json_safe
from reviewflow.report.wording import counted
from reviewflow.review.records import RequestRecord

REPORT_SCHEMA_VERSION = "1"
SCHEMA_FILE = "report.schema.json"
SEVERITY_ORDER = (Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelInfo(_Record):
    """The model a review used; never the key."""

    protocol: str
    name: str
    endpoint: str | None = None
    platform: str = "direct"  # model.platform: direct, bedrock, vertex or azure


class ReviewMetadata(_Record):
    """What was reviewed, with which model and tool, and when (ISO 8601 UTC times)."""

    repository: str
    mode: str
    from_: str | None = Field(None, alias="from")
    to: str | None = None
    commit: str | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    trusted_ref: str | None = None
    diff_file: str | None = None  # the `--diff FILE` read (mode "diff")
    model: ModelInfo
    language: str = "en-US"
    tool_version: str
    started_at: str
    finished_at: str
    instructions: dict[str, Any] | None = None  # `--instructions`: `Instructions.record()`
    verification: dict[str, Any] | None = None  # `--verify`: the model, budget and threshold
    sast: dict[str, Any] | None = None  # `--sast`: semgrep, the rules, what the scan did

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ReviewedFile(_Record):
    """A file the review covered and the rule record (`preview.rule_record`) that applied."""

    path: str
    rule: dict[str, Any]


class ExcludedFile(_Record):
    path: str
    reason: str
    detail: str | None = None


class PullRequestReport(_Record):
    """The pull/merge request a review publishes to, and its open findings from earlier runs
    that this run did not look at again (`carried`: the gate counts them)."""

    platform: str
    repository: str
    number: int
    url: str
    scope: str
    base_sha: str
    head_sha: str
    previous_head: str | None = None
    carried: tuple[PriorFinding, ...] = ()
    # the dismissals people made on the request (fingerprint -> who and why), None: none;
    # what `reviewflow dismissed --suggest` learns from when no review reports them again
    dismissed: dict[str, str] | None = None


class ReviewOutcome(_Record):
    """Everything the report writers need; JSON-serializable (`model_dump_json`)."""

    review_id: str
    status: Literal["complete", "incomplete"]
    exit_code: Literal[0, 1, 2, 130]
    metadata: ReviewMetadata
    files_changed: int
    files: tuple[ReviewedFile, ...] = ()
    incomplete_files: tuple[str, ...] = ()  # reviewed, but a model stage of theirs did not finish
    excluded: tuple[ExcludedFile, ...] = ()
    chunks: int = 0
    tool_calls: int = 0
    findings: tuple[Finding, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    warnings: tuple[ReviewWarning, ...] = ()
    errors: tuple[ReviewWarning, ...] = ()
    usage: UsageTotals = Field(default_factory=UsageTotals)
    duration_ms: int = 0
    process: tuple[RequestRecord, ...] = ()
    pull_request: PullRequestReport | None = None
    estimate: dict[str, Any] | None = None  # the expected cost (`cost.text.estimate_record`)
    cost: float | None = None  # the usage, each model at its price (None without one)
    usage_by_model: tuple[ModelUsage, ...] = ()  # the usage per model, each at its own price
    budget: BudgetState | None = None  # `--max-tokens` / `--max-cost`, where it stands
    budget_files: tuple[str, ...] = ()  # incomplete: the budget refused a request of theirs

    def sorted_findings(self) -> list[Finding]:
        """Findings most severe first, then by path and line."""
        rank = {severity: i for i, severity in enumerate(SEVERITY_ORDER)}
        return sorted(self.findings, key=lambda f: (rank[f.severity], f.path, f.start_line))

    def findings_by_file(self) -> list[tuple[str, list[Finding]]]:
        """The findings grouped per file: the file with the most severe finding first (then by
        path), each file's findings most severe first, then by line (a file enters the groups
        at its most severe finding, in `sorted_findings`' order)."""
        groups: dict[str, list[Finding]] = {}
        for finding in self.sorted_findings():
            groups.setdefault(finding.path, []).append(finding)
        return list(groups.items())

    def severity_counts(self) -> dict[str, int]:
        counts = {severity.value: 0 for severity in SEVERITY_ORDER}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

    def applied_rules(self) -> list[dict[str, Any]]:
        """The distinct rules that applied, each with the reviewed files it covered."""
        rules: dict[str, dict[str, Any]] = {}
        for item in self.files:
            key = json.dumps(item.rule, sort_keys=True)
            rules.setdefault(key, {**item.rule, "files": []})["files"].append(item.path)
        return list(rules.values())


def carried_line(outcome: ReviewOutcome) -> str | None:
    """Why the findings carried from the request's earlier review matter here: `gate failed:
    2 open findings carried from the earlier review (head 1a2b3c4d5e6f)` when they alone fail
    it, else how many there are (None without any)."""
    request = outcome.pull_request
    if request is None or not request.carried:
        return None
    head = f" (head {request.previous_head[:12]})" if request.previous_head else ""
    text = f"{counted(len(request.carried), 'open finding')} carried from the earlier review{head}"
    alone = outcome.exit_code == 1 and outcome.status == "complete" and not outcome.findings
    return f"gate failed: {text}" if alone else text


def severity_summary(findings: list[Finding]) -> str:
    """`2 critical, 1 low`: the findings' counts by severity, most severe first."""
    counts = [(s, sum(f.severity == s for f in findings)) for s in SEVERITY_ORDER]
    return ", ".join(f"{count} {severity.value}" for severity, count in counts if count)


def finding_location(finding: Finding | PriorFinding) -> str:
    """`path:line` or `path:start-end` (not escaped)."""
    lines = (
        str(finding.start_line)
        if finding.start_line == finding.end_line
        else f"{finding.start_line}-{finding.end_line}"
    )
    return f"{finding.path}:{lines}"


def _problem(item: ReviewWarning) -> dict[str, Any]:
    entry: dict[str, Any] = {"code": item.code, "message": item.message}
    if item.path is not None:
        entry["path"] = item.path
    return entry


def _finding(item: Finding) -> dict[str, Any]:
    """A finding's keys; `model_confidence` and `verification` only when it was verified,
    `agreement` only in a review of several passes, `cluster_fingerprints` only when other
    passes' findings joined it."""
    unverified = {"model_confidence", "verification"} if item.verification is None else set()
    single = {"agreement"} if item.agreement is None else set()
    alone = set() if item.cluster_fingerprints else {"cluster_fingerprints"}
    return item.model_dump(mode="json", exclude=unverified | single | alone)


def _dropped(item: Dropped) -> dict[str, Any]:
    """A drop's keys; a silenced or dismissed finding's fingerprint, category and rule ID too
    (what `reviewflow dismissed --suggest` learns silencing rules from)."""
    entry = item.model_dump(mode="json", exclude_none=True, exclude={"finding"})
    if item.finding is not None:
        entry["fingerprint"] = item.finding.fingerprint
        entry["category"] = item.finding.category.value
        if item.finding.rule_id is not None:
            entry["rule_id"] = item.finding.rule_id
    return entry


def incomplete_reasons(outcome: ReviewOutcome) -> list[dict[str, str]]:
    """Each incomplete file and why: `budget` (a request refused), `error` (a stage of its
    failed), or `cancelled` (Ctrl-C came before it finished)."""
    failed = {w.path for w in outcome.warnings if w.path is not None}
    failed |= {e.path for e in outcome.errors if e.path is not None}
    cancelled = outcome.exit_code == CANCELLED_EXIT
    return [
        {
            "path": path,
            "reason": "budget"
            if path in outcome.budget_files
            else "cancelled"
            if cancelled and path not in failed
            else "error",
        }
        for path in outcome.incomplete_files
    ]


def files_finished(outcome: ReviewOutcome) -> int:
    """The reviewed files whose every model stage finished (the incomplete ones not)."""
    return len(outcome.files) - len(outcome.incomplete_files)


def price_currency(outcome: ReviewOutcome) -> str | None:
    """The currency of the price in force (the estimate's), None when it names none."""
    price = (outcome.estimate or {}).get("price")
    return price.get("currency") if price else None


def budget_line(outcome: ReviewOutcome) -> str | None:
    """`budget of 200k tokens reached after 31 of 40 files` (None unless it was reached)."""
    if outcome.budget is None or not outcome.budget.reached:
        return None
    limit = outcome.budget.describe(price_currency(outcome))
    return (
        f"budget of {limit} reached after {files_finished(outcome)} of {len(outcome.files)} files"
    )


def budget_record(outcome: ReviewOutcome) -> dict[str, Any] | None:
    """The report's `budget` object (None without a budget)."""
    if outcome.budget is None:
        return None
    return {
        **outcome.budget.model_dump(mode="json"),
        "reached": outcome.budget.reached,
        "files_finished": files_finished(outcome),
        "files_total": len(outcome.files),
    }


def _stats(outcome: ReviewOutcome) -> dict[str, Any]:
    return {
        "files_changed": outcome.files_changed,
        "files_reviewed": files_finished(outcome),
        "files_excluded": len(outcome.excluded),
        "chunks": outcome.chunks,
        "llm_requests": outcome.usage.requests,
        "tool_calls": outcome.tool_calls,
        "findings": len(outcome.findings),
        "findings_by_severity": outcome.severity_counts(),
    }


def build_report(outcome: ReviewOutcome) -> dict[str, Any]:
    """The JSON report: DESIGN.md's stable keys, valid against `report_schema()`."""
    report = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "review_id": outcome.review_id,
        "status": outcome.status,
        "exit_code": outcome.exit_code,
        "metadata": outcome.metadata.model_dump(mode="json", by_alias=True),
        "stats": _stats(outcome),
        "findings": [_finding(f) for f in outcome.sorted_findings()],
        "dropped": [_dropped(d) for d in outcome.dropped],
        "excluded_files": [e.model_dump(mode="json", exclude_none=True) for e in outcome.excluded],
        "rules": outcome.applied_rules(),
        "warnings": [_problem(w) for w in outcome.warnings],
        "errors": [_problem(e) for e in outcome.errors],
        "usage": {
            **outcome.usage.model_dump(mode="json"),
            "by_model": [m.model_dump(mode="json") for m in outcome.usage_by_model],
        },
        "duration_ms": outcome.duration_ms,
        "process": [r.model_dump(mode="json") for r in outcome.process],
    }
    if outcome.pull_request is not None:
        report["pull_request"] = outcome.pull_request.model_dump(mode="json", exclude_none=True)
    _add_cost(report, outcome)
    safe: dict[str, Any] = json_safe(report)
    return safe


def _add_cost(report: dict[str, Any], outcome: ReviewOutcome) -> None:
    """The estimate beside the usage (and the usage's cost), the budget, incomplete files."""
    if outcome.estimate is not None:
        report["estimate"] = outcome.estimate
        report["usage"]["cost"] = outcome.cost
    budget = budget_record(outcome)
    if budget is not None:
        report["budget"] = budget
    if outcome.incomplete_files:
        report["incomplete_files"] = incomplete_reasons(outcome)


def report_json(outcome: ReviewOutcome) -> str:
    """The JSON report as text (UTF-8, indented, newline-terminated)."""
    return json.dumps(build_report(outcome), indent=2, ensure_ascii=False) + "\n"


@cache
def _schema_text() -> str:
    return resources.files("reviewflow.report").joinpath(SCHEMA_FILE).read_text("utf-8")


def report_schema() -> dict[str, Any]:
    """The published JSON Schema of the report (`reviewflow schema` prints it)."""
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema


class ReviewRun(_Record):
    """What the review flow returns: the outcome, where each report file went, and why a
    report could not be written (the console report is printed all the same, then exit 2)."""

    outcome: ReviewOutcome
    written: dict[str, str]
    report_error: str | None = None
    published: PublishResult | None = None
    publish_error: str | None = None  # why publishing failed (the exit code stays the gate's)
    publish_summary: str | None = None  # the summary that could not be posted, as Markdown

    @property
    def exit_code(self) -> int:
        """The outcome's exit code, or 2 when a report could not be written."""
        return 2 if self.report_error else self.outcome.exit_code
